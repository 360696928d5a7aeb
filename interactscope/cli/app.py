"""The typer application object; command modules register on it."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup, TyperOption

from interactscope.core.resources import package_version


def _hide_flag_types(cmd: Any, ctx: Any) -> None:
    """Give every flag of ``cmd`` (and of its subcommands) an empty metavar, ``--help``
    included. typer 0.29's rich help prints each option's type, ``<bool>`` for a flag that
    takes no value (its plain formatter skips flags; the rich one honours only ``metavar``)."""
    for param in cmd.get_params(ctx):
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    for sub in getattr(cmd, "commands", {}).values():
        _hide_flag_types(sub, ctx)


class _Group(TyperGroup):
    """The root group: help pages show no type for flags (:func:`_hide_flag_types`)."""

    # typer vendors click (its own Context and Command classes): the hooks are typed Any
    def format_help(self, ctx: Any, formatter: Any) -> None:
        _hide_flag_types(self, ctx)
        super().format_help(ctx, formatter)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            _hide_flag_types(cmd, ctx)
        return cmd


def _version(value: bool) -> None:
    if value:
        typer.echo(f"interactscope {package_version()}")
        raise typer.Exit()


app = typer.Typer(
    cls=_Group,
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
