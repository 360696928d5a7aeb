"""Analysis commands: compare, report and the evidence controls (``control ...``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from interactscope.cli.app import app
from interactscope.cli.common import fail


@app.command()
def compare(
    run_a: Path = typer.Argument(..., help="Reference run folder (scored)."),
    run_b: Path = typer.Argument(..., help="Treatment run folder (scored); differences are B − A."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Also write compare.csv/.md/.json into this folder."
    ),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples B."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
) -> None:
    """Every metric of two scored runs with paired differences B − A and 95% intervals.

    Clusters are matched by id (the same resampled clusters for both runs). Percent metrics
    differ in percentage points, output volume in responses/min. Runs over different benchmarks
    or interaction sets are refused."""
    from interactscope.compare import CompareError, compare_runs, write_table

    try:
        c = compare_runs(run_a, run_b, n_resamples=resamples, seed=seed)
    except CompareError as exc:
        fail(str(exc))
    typer.echo(f"A = {c.runs['a']['label']} ({run_a})\nB = {c.runs['b']['label']} ({run_b})")
    typer.echo(c.markdown())
    for note in c.notes:
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)
    if out is not None:
        write_table(
            c.table,
            out,
            "compare",
            markdown=c.markdown(),
            meta={"runs": c.runs, "options": c.options, "notes": c.notes},
        )
        typer.echo(f"wrote {out}")


# ----------------------------------------------------------- observe (issue 3, media layer)


@app.command()
def report(
    runs: list[Path] = typer.Argument(..., help="Scored run folders (main and control runs)."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for tables and figures."),
    resamples: int = typer.Option(
        10_000, "--resamples", help="Bootstrap resamples / permutations."
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
    from interactscope.compare import CompareError
    from interactscope.report import build_report

    try:
        rep = build_report(
            runs, out, n_resamples=resamples, seed=seed, judge=judge, beyond=not no_beyond
        )
    except CompareError as exc:
        fail(str(exc))
    for name, paths in rep.files.items():
        typer.echo(f"{name}: " + ", ".join(p.name for p in paths))
    for s in rep.meta["skipped"]:
        typer.secho(f"skipped: {s}", fg=typer.colors.YELLOW, err=True)
    typer.echo(f"wrote {out / 'report.md'}")


control_app = typer.Typer(
    no_args_is_help=True,
    help="Evidence controls (SPEC §3.4): scene ablation, request prior, blind fire, "
    "history/cooldown, decision schedule. Each writes NAME.csv/.md/.json into --out.",
)
app.add_typer(control_app, name="control")

_OUT_OPT = typer.Option(Path("controls"), "--out", "-o", help="Output folder.")
_B_OPT = typer.Option(10_000, "--resamples", help="Bootstrap resamples.")


def _emit(result: Any, out: Path) -> None:
    typer.echo(result.markdown)
    for note in result.meta.get("notes", []) or []:
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)
    paths = result.write(out)
    typer.echo("wrote " + ", ".join(str(p) for p in paths.values()))


@control_app.command("scene")
def control_scene(
    full: Path = typer.Argument(..., help="Run with scene input (scored)."),
    none: Path = typer.Argument(..., help="The same model collected with --set scene=none."),
    tolerance: list[float] = typer.Option([1.0, 2.0, 4.0], "--tolerance", help="δ values, s."),
    judge: str | None = typer.Option(None, "--judge"),
    out: Path = _OUT_OPT,
    resamples: int = _B_OPT,
) -> None:
    """Scene ablation: request-only run − full run, paired, at each tolerance (pp)."""
    from interactscope.compare import CompareError
    from interactscope.controls import scene_ablation

    try:
        r = scene_ablation(full, none, tolerances=tolerance, judge=judge, n_resamples=resamples)
    except CompareError as exc:
        fail(str(exc))
    _emit(r, out)


@control_app.command("request-prior")
def control_request_prior(
    run: Path = typer.Argument(..., help="A run collected with --set scene=none."),
    source: str = typer.Option("first", help="first (first response ≥ q) or at_q."),
    out: Path = _OUT_OPT,
    resamples: int = _B_OPT,
) -> None:
    """T1 tool labels from the request text alone: recovery rate vs the constant baseline."""
    from interactscope.compare import CompareError
    from interactscope.controls import request_prior

    try:
        r = request_prior(run, source=source, n_resamples=resamples)
    except CompareError as exc:
        fail(str(exc))
    _emit(r, out)


@control_app.command("blind-fire")
def control_blind_fire(
    run: Path = typer.Argument(..., help="A run collected with --set scene=none."),
    delay: list[float] = typer.Option(
        [0.0, 1.0, 2.0, 3.0, 5.0, 8.0], "--delay", help="d values, s (fired at q + d)."
    ),
    tolerance: float = typer.Option(2.0, "--tolerance"),
    out: Path = _OUT_OPT,
    resamples: int = _B_OPT,
) -> None:
    """Fixed-delay blind fire: the request-prior labels fired at q + d (simulated), T1 joint %."""
    from interactscope.compare import CompareError
    from interactscope.controls import blind_fire

    try:
        r = blind_fire(run, delays=delay, tolerance_s=tolerance, n_resamples=resamples)
    except CompareError as exc:
        fail(str(exc))
    _emit(r, out)


@control_app.command("policy")
def control_policy(
    plain: Path = typer.Argument(..., help="Plain run (scored)."),
    controls: list[Path] = typer.Argument(..., help="history.n / cooldown_s runs (scored)."),
    task: str = typer.Option("T8-A", "--task"),
    out: Path = _OUT_OPT,
    resamples: int = _B_OPT,
) -> None:
    """History and cooldown controls: recall, output count and volume vs the plain run."""
    from interactscope.compare import CompareError
    from interactscope.controls import policy_controls

    try:
        r = policy_controls(plain, controls, task=task, n_resamples=resamples)
    except CompareError as exc:
        fail(str(exc))
    _emit(r, out)


@control_app.command("schedule")
def control_schedule(
    dense: Path = typer.Argument(..., help="Run on the per-second grid (scored)."),
    sparse: Path = typer.Argument(..., help="The same model with a larger grid.step_s (scored)."),
    out: Path = _OUT_OPT,
    resamples: int = _B_OPT,
) -> None:
    """Decision-schedule control: every metric, sparse − dense, paired."""
    from interactscope.compare import CompareError
    from interactscope.controls import schedule_control

    try:
        r = schedule_control(dense, sparse, n_resamples=resamples)
    except CompareError as exc:
        fail(str(exc))
    _emit(r, out)
