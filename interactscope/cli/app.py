"""The typer application object; command modules register on it.

Every command is registered through :class:`App`, whose ``command`` decorator wraps the
function in :func:`one_line_errors`: an :class:`InteractScopeError` escaping any command is
printed as one red line and the command exits 1. Commands therefore catch nothing of the
package's own errors, only what they word differently (issue 23)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperGroup, TyperOption

from interactscope.cli.common import fail
from interactscope.core.errors import InteractScopeError
from interactscope.core.registry import PluginWarning
from interactscope.core.resources import package_version

EXIT_ERROR = 1
"""Exit code of a command stopped by an :class:`InteractScopeError` (bad input, a run folder
that cannot be resumed, an engine that fails)."""


def one_line_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with the one handler of the package's errors: an
    :class:`InteractScopeError` becomes its message on stderr (one line by the errors'
    contract; a benchmark's problem list keeps its lines; API keys masked) and exit
    :data:`EXIT_ERROR`, never a traceback. ``functools.wraps`` keeps the
    signature, so typer reads the same options."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except InteractScopeError as exc:
            fail(str(exc).strip() or type(exc).__name__, EXIT_ERROR)

    return run


_show_warning = warnings.showwarning


def _one_line_warning(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """A :class:`PluginWarning` (a plug-in skipped) as one yellow ``warning:`` line on stderr;
    every other warning as Python shows it."""
    if issubclass(category, PluginWarning):
        typer.secho(f"warning: {message}", fg=typer.colors.YELLOW, err=True)
    else:
        _show_warning(message, category, *args, **kwargs)


warnings.showwarning = _one_line_warning


class App(typer.Typer):
    """A ``typer.Typer`` whose commands run inside :func:`one_line_errors` (command groups
    such as ``ego`` and ``control`` are ``App`` too). The decorated function is returned
    unchanged, so tests and other modules can still call it directly."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
        register = super().command(*args, **kwargs)

        def decorator(f: Callable[..., Any]) -> Callable[..., Any]:
            register(one_line_errors(f))
            return f

        return decorator


def _hide_flag_types(cmd: Any, ctx: Any) -> None:
    """Give every flag of ``cmd`` (and of its subcommands) an empty metavar, ``--help``
    included. typer 0.29's rich help prints each option's type, ``<bool>`` for a flag that
    takes no value (its plain formatter skips flags; the rich one honours only ``metavar``)."""
    for param in cmd.get_params(ctx):
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    for sub in getattr(cmd, "commands", {}).values():
        _hide_flag_types(sub, ctx)


class RootGroup(TyperGroup):
    """The root group (and the ``control`` group): help pages show no type for flags
    (:func:`_hide_flag_types`)."""

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


app = App(
    cls=RootGroup,
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
