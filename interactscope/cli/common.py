"""Helpers shared by the command modules: logging setup, one-line failures, --set parsing."""

from __future__ import annotations

import logging
import sys
from typing import Any

import typer
import yaml


def setup_logging(verbose: bool) -> None:
    """Log to stderr; DEBUG with ``-v``, INFO otherwise."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def fail(msg: str, code: int = 1) -> None:
    """Print one red line on stderr and exit with ``code`` (no traceback)."""
    typer.secho(msg, fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def parse_sets(items: list[str]) -> dict[str, Any]:
    """``["grid.step_s=2", ...]`` -> ``{"grid.step_s": 2, ...}`` (values parsed as YAML scalars)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise typer.BadParameter(f"--set expects KEY=VALUE (e.g. grid.step_s=2), got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = yaml.safe_load(v)
    return out
