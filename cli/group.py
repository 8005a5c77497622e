"""The click group behind the ``fsstgpu`` app (and its ``datasets`` group): what typer's own
does, plus JSON for every error under ``--json``.

* **JSON errors.** With ``--json`` on the command line an error prints
  ``{"error": message, "exit_code": code}`` on stdout (besides the message on stderr), whether
  the option parser refused an argument (exit 2) or the command failed
  (:func:`fsstgpu.cli.output.fail`); a script reading stdout always gets JSON. The parser's
  errors come before the command knows its options, hence the ``--json`` looked for in the
  raw arguments.
"""

from __future__ import annotations

import sys

import typer
from typer.core import TyperGroup

from fsstgpu.cli.output import json_errors, print_json_error

__all__ = ["Group"]


class Group(TyperGroup):
    """typer's group, with the JSON errors of the module docstring."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        argv = sys.argv[1:] if args is None else list(args)
        words = argv[:argv.index("--")] if "--" in argv else argv
        if not standalone_mode or "--json" not in words:
            return super().main(args=argv, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=standalone_mode, **extra)
        with json_errors():
            try:
                code = super().main(args=argv, prog_name=prog_name,
                                    complete_var=complete_var, standalone_mode=False, **extra)
            except typer.TyperException as exc:  # the parser's errors (typer's vendored click)
                code = getattr(exc, "exit_code", 1)
                print_json_error(exc.format_message() if hasattr(exc, "format_message")
                                 else str(exc), code)
                self._show(exc)
                sys.exit(code)
            except typer.Abort:
                print_json_error("aborted", 1)
                sys.stderr.write("Aborted!\n")
                sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def _show(self, exc: typer.TyperException) -> None:
        """The parser's error on stderr, drawn as typer draws it."""
        try:
            from typer import rich_utils
        except ImportError:  # typer without rich
            exc.show()
        else:
            rich_utils.rich_format_error(exc)
