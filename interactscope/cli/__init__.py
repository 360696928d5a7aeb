"""Command line: ``interactscope COMMAND --help`` teaches each command. Thin: one module per
command group parses options and calls the library modules."""

from __future__ import annotations

import importlib

from interactscope.cli.app import app

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
    """Entry point of the ``interactscope`` script."""
    app()


if __name__ == "__main__":
    main()
