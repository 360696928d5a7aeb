"""Command line: ``interactscope COMMAND --help`` teaches each command. Thin: one module per
command group parses options and calls the library modules."""

from __future__ import annotations

import importlib
import sys

import typer

from interactscope.cli.app import app
from interactscope.core.errors import first_problem
from interactscope.core.secrets import redact

__all__ = ["app", "main", "COMMAND_MODULES"]

# Command groups in the order `--help` lists them; a new group is one more name here.
COMMAND_MODULES = (
    "streaming",
    "analysis",
    "models",
    "prompt",
    "importers",
    "view",
    "ego",
    "ego_run",
    "ego_ablation",
    "judges",
)
for _name in COMMAND_MODULES:
    importlib.import_module(f"interactscope.cli.{_name}")


def main() -> None:
    """Entry point of the ``interactscope`` script. The last resort against tracebacks: an
    error no command turned into its own line is printed as one line (the traceback with
    ``-v`` / ``--verbose``); exit 1."""
    try:
        app()
    except Exception as exc:
        if any(a in ("-v", "--verbose") for a in sys.argv[1:]):
            raise

        msg = f"error: {first_problem(exc)} ({type(exc).__name__}; -v shows the traceback)"
        typer.secho(redact(msg), fg=typer.colors.RED, err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
