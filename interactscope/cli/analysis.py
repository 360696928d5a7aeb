"""Analysis commands: compare, report and the evidence controls (``control NAME``, one command
per control registered in :mod:`interactscope.streaming.analysis.controls`)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import typer
from typer.main import get_command_from_info
from typer.models import CommandInfo

from interactscope.cli.app import App, RootGroup, app, one_line_errors
from interactscope.cli.common import fail
from interactscope.core import registry as plugins
from interactscope.stats import BootstrapOptions
from interactscope.streaming.analysis.compare import compare_runs
from interactscope.streaming.analysis.controls.registry import control, registered
from interactscope.streaming.analysis.output import write_table
from interactscope.streaming.analysis.report import build_report

B_HELP = "Bootstrap resamples B."
B_DEFAULT = 10_000  # the paper's B; interactscope.stats.B_DEFAULT (not imported: startup)


@app.command()
def compare(
    run_a: Path = typer.Argument(..., help="Reference run folder (scored)."),
    run_b: Path = typer.Argument(..., help="Treatment run folder (scored); differences are B − A."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Also write compare.csv/.md/.json into this folder."
    ),
    resamples: int = typer.Option(B_DEFAULT, "--resamples", help=B_HELP),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON document (runs, options, notes, rows) on stdout."
    ),
) -> None:
    """Every metric of two scored runs with paired differences B − A and 95% intervals.

    Clusters are matched by id (the same resampled clusters for both runs). Percent metrics
    differ in percentage points, output volume in responses/min. Runs over different benchmarks
    or interaction sets are refused."""

    try:
        c = compare_runs(
            run_a, run_b, options=BootstrapOptions.of(n_resamples=resamples, seed=seed)
        )
    except ValueError as exc:  # plain ValueErrors: bad options
        fail(str(exc))
    meta = {"runs": c.runs, "options": c.options, "notes": c.notes}
    if as_json:
        rows = json.loads(c.table.to_json(orient="records", double_precision=10))
        typer.echo(json.dumps(meta | {"rows": rows}, sort_keys=True, default=str))
    else:
        typer.echo(f"A = {c.runs['a']['label']} ({run_a})\nB = {c.runs['b']['label']} ({run_b})")
        typer.echo(c.markdown())
    for note in c.notes:
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)
    if out is not None:
        write_table(c.table, out, "compare", markdown=c.markdown(), meta=meta)
        typer.secho(f"wrote {out}", err=as_json)


@app.command()
def report(
    runs: list[Path] = typer.Argument(..., help="Scored run folders (main and control runs)."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for tables and figures."),
    resamples: int = typer.Option(
        B_DEFAULT, "--resamples", help="Bootstrap resamples / permutations."
    ),
    seed: int = typer.Option(0, "--seed"),
    judge: str | None = typer.Option(
        None, "--judge", help="Judge for re-scoring at other tolerances (default: each run's)."
    ),
    no_beyond: bool = typer.Option(
        False, "--no-beyond", help="Skip the beyond-the-paper table (lenient, latency-aware)."
    ),
) -> None:
    """The paper's tables (Markdown, LaTeX, CSV, with 95% intervals) and figures (PNG, PDF).

    Roles come from run.json: scene=none runs feed the request/timing priors and the scene
    ablation, history.n/cooldown_s runs the T8-A policy controls, grid.step_s runs the schedule
    control, each paired with the main run of the same model. See OUT/report.md."""

    try:
        opts = BootstrapOptions.of(n_resamples=resamples, seed=seed)
        rep = build_report(runs, out, options=opts, judge=judge, beyond=not no_beyond)
    except ValueError as exc:  # plain ValueErrors: bad options
        fail(str(exc))
    for name, paths in rep.files.items():
        typer.echo(f"{name}: " + ", ".join(p.name for p in paths))
    for s in rep.meta["skipped"]:
        typer.secho(f"skipped: {s}", fg=typer.colors.YELLOW, err=True)
    typer.echo(f"wrote {out / 'report.md'}")


class _ControlGroup(RootGroup):
    """``interactscope control``: the built-in controls are its commands from the start; the
    plug-in ones (entry points, ``INTERACTSCOPE_PLUGINS``) are added the first time the group
    lists or resolves a command, so a broken control plug-in touches no other command."""

    _loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        specs = registered()
        for spec in specs:
            if spec.name not in self.commands:
                info = CommandInfo(name=spec.name, callback=one_line_errors(_control_command(spec)))
                self.commands[spec.name] = get_command_from_info(
                    info,
                    pretty_exceptions_short=control_app.pretty_exceptions_short,
                    rich_markup_mode=control_app.rich_markup_mode,
                )
        order = {s.name: i for i, s in enumerate(specs)}
        self.commands = dict(sorted(self.commands.items(), key=lambda c: order.get(c[0], 0)))

    def list_commands(self, ctx: Any) -> list[str]:
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and plugins.registered("controls", cmd_name):
            try:  # the plug-in asked for by name: its load error is the one line
                control(cmd_name)
            except plugins.PluginError as exc:
                fail(str(exc))
        self._load()
        return super().get_command(ctx, cmd_name)


control_app = App(
    cls=_ControlGroup,
    no_args_is_help=True,
    help="Evidence controls (docs/protocol.md, controls): scene ablation, request prior, blind "
    "fire, history/cooldown, decision schedule. Each writes NAME.csv/.md/.json into --out.",
)
app.add_typer(control_app, name="control")


def _emit(result: Any, out: Path) -> None:
    typer.echo(result.markdown)
    for note in result.meta.get("notes", []) or []:
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)
    paths = result.write(out)
    typer.echo("wrote " + ", ".join(str(p) for p in paths.values()))


def _typer_param(p: Any) -> inspect.Parameter:
    """A control parameter as a typer-annotated function parameter."""
    if p.kind == "argument":
        default = typer.Argument(p.default, help=p.help or None)
    else:
        default = typer.Option(p.default, *(p.flags or (f"--{p.name}",)), help=p.help or None)
    return inspect.Parameter(
        p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=p.type
    )


_COMMON = (
    inspect.Parameter(
        "out",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=typer.Option(Path("controls"), "--out", "-o", help="Output folder."),
        annotation=Path,
    ),
    inspect.Parameter(
        "resamples",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=typer.Option(B_DEFAULT, "--resamples", help="Bootstrap resamples."),
        annotation=int,
    ),
)


def _control_command(spec: Any) -> Any:
    """A typer command running one registered control from its declared parameters."""

    def command(**kwargs: Any) -> None:

        out, resamples = kwargs.pop("out"), kwargs.pop("resamples")
        try:
            result = spec.runner()(kwargs, BootstrapOptions.of(n_resamples=resamples))
        except ValueError as exc:  # plain ValueErrors: bad options
            fail(str(exc))
        _emit(result, out)

    params = [*(_typer_param(p) for p in spec.params), *_COMMON]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    command.__doc__ = spec.summary
    command.__name__ = "control_" + spec.name.replace("-", "_")
    return command


def _register_controls() -> None:

    for spec in registered(built_in=True):
        control_app.command(spec.name)(_control_command(spec))


_register_controls()
