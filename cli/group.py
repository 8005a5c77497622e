"""The click group behind the ``fsstgpu`` app (and its ``datasets`` group): what typer's own
does, plus JSON for every error under ``--json`` and help without ``<bool>`` beside flags.

* **JSON errors.** With ``--json`` on the command line an error prints
  ``{"error": message, "kind": kind, "exit_code": code}`` on stdout (besides the message on
  stderr; ``kind``: :func:`fsstgpu.cli.output.error_kind`), whether the option parser refused
  an argument (exit 2) or the command failed (:func:`fsstgpu.cli.output.fail`); a script
  reading stdout always gets JSON. The parser's
  errors come before the command knows its options, hence the ``--json`` looked for in the
  raw arguments (:func:`asks_for_json`: as the parser reads them, so a ``--json`` that is
  an option's value, as in ``--columns --json``, or comes after ``--``, is not the option).
* **Flags.** typer's help shows each option's type, ``<bool>`` for a flag, which takes no
  value; flags get an empty type column instead.
* **Paragraphs.** typer joins the lines of a help text's first paragraph only; the later ones
  kept the docstring's line breaks and showed as ragged lines at any terminal width. Each
  paragraph is joined into one (a paragraph starting with ``\\b`` keeps its lines, as in click).
"""

from __future__ import annotations

import inspect
import sys

import typer
from typer.core import TyperGroup

from fsstgpu.cli.output import json_errors, print_json_error

__all__ = ["Group", "asks_for_json", "unwrapped"]


def unwrapped(text: str | None) -> str | None:
    """``text`` with each paragraph's lines joined, for the terminal to wrap; paragraphs that
    start with ``\\b`` (click's mark for preformatted text) are kept.

    Examples
    --------
    >>> from fsstgpu.cli.group import unwrapped
    >>> unwrapped("Title.\\n\\nOne long\\n    paragraph.")
    'Title.\\n\\nOne long paragraph.'
    """
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


def asks_for_json(command, words) -> bool:
    """Tell whether the option ``--json`` is among ``words`` (a command line less the program
    name, for the click group ``command``), reading them as click's parser does: a word after
    an option that takes a value is that value (``--columns --json`` names a column called
    ``--json``), and nothing after ``--`` is an option.

    Examples
    --------
    >>> import typer
    >>> from fsstgpu.cli.app import app
    >>> from fsstgpu.cli.group import asks_for_json
    >>> group = typer.main.get_command(app)
    >>> asks_for_json(group, ["compress", "a.parquet", "b.parquet", "--json"])
    True
    >>> asks_for_json(group, ["compress", "a.parquet", "b.parquet", "--columns", "--json"])
    False
    """
    words = iter(words)
    for word in words:
        if word == "--":
            return False
        if word == "--json":
            return True
        if word.startswith("-") and word != "-":  # ("-" alone: stdin / stdout, an argument)
            for _ in range(_values_after(command, word)):
                next(words, None)
        else:  # a subcommand's name (its options follow it), or an argument
            command = getattr(command, "commands", {}).get(word, command)
    return False


def _values_after(command, word: str) -> int:
    """How many of the words after the option ``word`` of ``command`` are its value: ``nargs``
    for an option that takes one (none when ``--opt=value`` or ``-ovalue`` holds it), else 0
    (a flag, or an option ``command`` lacks, which the parser refuses anyway)."""
    if word.startswith("--"):
        return 0 if "=" in word else _nargs(command, word)
    for k, letter in enumerate(word[1:], 2):  # -fo: flags, until one that takes a value
        nargs = _nargs(command, f"-{letter}")
        if nargs:
            return nargs if k == len(word) else 0  # (-ovalue: the rest of the word is it)
    return 0


def _nargs(command, name: str) -> int:
    """How many values the option ``name`` of ``command`` takes (0: a flag, or no such one)."""
    for param in getattr(command, "params", ()):
        if param.param_type_name == "option" and name in (*param.opts, *param.secondary_opts):
            return 0 if param.is_flag or param.count else param.nargs
    return 0


def _tidy(command, ctx) -> None:
    command.help = unwrapped(command.help)
    _quiet_flags(command, ctx)


def _quiet_flags(command, ctx) -> None:
    for param in command.get_params(ctx):  # the --help option too (click caches it)
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


class Group(TyperGroup):
    """typer's group, with the JSON errors and flag help of the module docstring."""

    def get_command(self, ctx, cmd_name):
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _tidy(command, ctx)
        return command

    def format_help(self, ctx, formatter):
        _tidy(self, ctx)
        return super().format_help(ctx, formatter)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        argv = sys.argv[1:] if args is None else list(args)
        if not standalone_mode or not asks_for_json(self, argv):
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
