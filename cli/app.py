"""PLACEHOLDER: the typer app (files/CLI issue)."""

import typer

app = typer.Typer(no_args_is_help=True)


def main():
    app()
