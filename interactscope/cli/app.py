"""The typer application object; command modules register on it."""

from __future__ import annotations

import typer

from interactscope.core.resources import package_version


def _version(value: bool) -> None:
    if value:
        typer.echo(f"interactscope {package_version()}")
        raise typer.Exit()


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help=(
        "Evaluate omni-modal models as always-on assistants (Omni-InteractScope protocol).\n\n"
        "Typical use: `interactscope validate BENCH`, `interactscope collect --model NAME "
        "--bench BENCH --out RUN`, `interactscope score RUN`."
    ),
)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Evaluate omni-modal models as always-on assistants (Omni-InteractScope, EgoBench)."""
