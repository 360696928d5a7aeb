"""EgoBench commands: ``interactscope ego validate | score | report``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer
from pydantic import ValidationError

from interactscope.cli.app import App, app
from interactscope.cli.common import fail, parse_sets
from interactscope.core.settings import unknown_setting_hint
from interactscope.core.text import plural
from interactscope.egobench import (
    list_variants,
    load_variant,
    package_data_dir,
    score_log,
    write_score,
)
from interactscope.egobench.checks import load_known, validate_folder
from interactscope.egobench.import_official import import_official, summary_lines
from interactscope.egobench.profiles import PROFILES, profile
from interactscope.egobench.report import markdown, write_report
from interactscope.egobench.run_folder import load_run
from interactscope.egobench.run_score import run_profile
from interactscope.egobench.scorer import PRINTED_COLUMNS
from interactscope.egobench.settings import ScoreSettings

ego_app = App(
    no_args_is_help=True,
    help="EgoBench: interactive tool-use tasks scored on a database state "
    "(validate data, score logs, report tables). Without --data the package's copy is used.",
)
app.add_typer(ego_app, name="ego")

_DATA = typer.Option(
    None, "--data", "-d", help="Data folder (tasks/, db/, tools/); default: the package's copy."
)


def _data(data: Path | None) -> Path:

    d = data or package_data_dir()
    list_variants(d)  # no such folder, or no tasks/: one line (EgoBenchError)
    return d


@ego_app.command("validate")
def validate(
    data: Path | None = _DATA,
    variant: list[str] = typer.Option(
        [], "--variant", "-v", help="Variant(s) to check (default: all)."
    ),
    known: bool = typer.Option(
        False,
        "--known",
        help="Also list the published data's known defects (the data README's list) and a "
        "summary per defect.",
    ),
) -> None:
    """Check every task, tool schema and seed database; print each new problem (file, task,
    field). Known defects of the published data are counted apart (--known lists them); task
    files of a scenario this version does not play are reported, not checked.

    Exit 0 when there is no new problem and no unknown variant, else 1."""

    d = _data(data)
    shipped = list_variants(d)
    for name in variant:
        if name not in shipped:
            fail(
                f"{d / 'tasks' / (name + '.json')}: unknown variant {name!r}; "
                f"the variants in {d}: {', '.join(shipped)}"
            )
    names = variant or shipped
    rep = validate_folder(d, names)
    defects = load_known(d)
    for p in rep.new:
        typer.echo(p.line())
    for p in rep.unknown:
        typer.echo(f"unknown variant: {p.line()}")
    if known:
        for p, _ in rep.known:
            typer.echo(f"known: {p.line()}")
        counts = Counter(i for _, i in rep.known)
        files: dict[int, set[str]] = {}
        for p, i in rep.known:
            files.setdefault(i, set()).add(p.file)
        for i, n in sorted(counts.items()):
            where = ", ".join(sorted(files[i]))
            typer.echo(f"known defect ({plural(n, 'line')}): {where}: {defects[i].readme}")
    summary = "; ".join(
        f"{s}: {plural(rep.tasks[s], 'task')}, {plural(rep.calls[s], 'GT call')}"
        for s in sorted(rep.tasks)
    )
    tail = (
        f"{plural(len(rep.known), 'known defect line')} of the published data"
        + ("" if known else " (--known lists them)")
        + (f", {plural(len(rep.unknown), 'unknown variant')} not checked" if rep.unknown else "")
    )
    if rep.new or rep.unknown:
        typer.secho(
            f"{plural(len(rep.new), 'new problem')} in {plural(len(rep.checked), 'variant')} ({summary}); {tail}",
            fg=typer.colors.RED,
            err=True,
        )
        raise typer.Exit(1)
    typer.echo(
        f"ok: {plural(len(rep.checked), 'variant')}, {plural(sum(rep.tasks.values()), 'task')} ({summary}); "
        f"no new problem; {tail}"
    )


@ego_app.command("import-official")
def import_official_cmd(
    path: Path = typer.Argument(
        ..., help="Your clone of Wind-Flipped/EgoBench or ego-link/egolink2026."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="New data folder (tasks/, db/, tools/)."),
    video_dir: Path | None = typer.Option(
        None, "--video-dir", help="Where the videos are (default: the clone's own video folder)."
    ),
) -> None:
    """Convert an official EgoBench repository (tasks, tool schemas, seed databases read from
    tools/*/*_init.py as literals, never executed) into a data folder for --data, and say what
    was converted (OUT/import_report.json)."""

    rep = import_official(path, out, video_dir=video_dir)
    for line in summary_lines(rep):
        typer.echo(line)
    vd = f" --video-dir {rep.video_dir}" if rep.video_dir else ""
    typer.echo(
        f"wrote {out} ({rep.layout} layout); check it with `interactscope ego validate --data "
        f"{out}`, play it with `interactscope ego run --data {out}{vd} ...`"
    )


def _score_settings(set_: list[str], reference: str):
    """The scorer's settings: reference profile ``reference`` with ``--set`` applied."""

    if reference not in PROFILES:
        fail(f"--reference {reference!r}: expected one of {', '.join(PROFILES)}")
    try:
        return profile(reference, **parse_sets(set_))
    except ValidationError as exc:
        fail(_score_set_problem(exc))


def _score_set_problem(exc) -> str:
    """One line for a bad scorer ``--set``: an unknown key lists the valid ones (close
    matches first), as ``ego run --set`` and ``collect --set`` do."""

    e = exc.errors()[0]
    key = ".".join(map(str, e["loc"]))
    if e["type"] == "extra_forbidden":
        return f"--set {key}: unknown scorer setting{unknown_setting_hint(ScoreSettings, e['loc'])}"
    return f"--set {key}: {e['msg']}"


def _run_score_settings(run: Path, set_: list[str], reference: str | None):
    """Scorer settings for ``ego score RUN``: None (the run's own profile) unless ``--set`` or
    ``--reference`` is given; ``--set`` alone applies to the run's own profile."""
    if not set_ and reference is None:
        return None
    if reference is not None:
        return _score_settings(set_, reference)

    try:
        base = run_profile(load_run(run)[0].settings)
        return ScoreSettings(**{**base.model_dump(), **parse_sets(set_)})
    except ValidationError as exc:
        fail(_score_set_problem(exc))


@ego_app.command("score")
def score(
    run: Path | None = typer.Argument(
        None, help="A run folder written by `ego run` (else give --log, --variant, --out)."
    ),
    log: Path | None = typer.Option(
        None, "--log", "-l", help="Log: reference-runner JSON list or episode-record JSON lines."
    ),
    variant: str | None = typer.Option(
        None, "--variant", "-v", help="Variant the log is for, e.g. retail6."
    ),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Folder for tasks.csv and summary.json (RUN: RUN/scores)."
    ),
    data: Path | None = _DATA,
    mode: str | None = typer.Option(
        None, "--mode", help="easy|hard|static (default: from the file name)."
    ),
    set_: list[str] = typer.Option(
        [], "--set", help="Scorer setting, e.g. --set float_tolerance=1e-6 --set missing_log=skip."
    ),
    reference: str | None = typer.Option(
        None,
        "--reference",
        help="Reference profile: ours, paper (Wind-Flipped/EgoBench) or egolink2026 (the "
        "EgoLink 2026 challenge's evaluator and tools). Default: ours for --log; for RUN, the "
        "profile the run was played with.",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="RUN: exit 4 when planned episodes are missing (as `score`)."
    ),
) -> None:
    """Score one log: ToolSucc, ResultSucc, JointSucc, MicroAcc per task (OUT/tasks.csv) and
    overall (OUT/summary.json, with every setting); prints the per-task table.

    `ego score RUN` scores a run folder of `ego run` instead (per variant, plus the simulated
    user's health)."""
    if run is not None:
        # circular: cli.ego_run registers its commands on ego_app
        from interactscope.cli.ego_run import score_run_with

        score_run_with(run, out, data, _run_score_settings(run, set_, reference), strict)
        return
    if log is None or variant is None or out is None:
        fail("ego score: give a run folder (ego score RUN) or all of --log, --variant and --out")

    settings = _score_settings(set_, reference or "ours")
    v = load_variant(_data(data), variant)
    result = score_log(log, v, settings=settings, mode=mode)
    write_score(result, out)
    typer.echo(result.frame()[PRINTED_COLUMNS].to_string(index=False))
    s = result.summary
    typer.echo(
        f"{s.variant} ({s.mode or 'mode unknown'}): {plural(s.n_tasks, 'task')}, {s.n_logged} logged | "
        f"JointSucc {s.joint_succ:.3f}  MicroAcc {s.micro_acc:.3f} ({s.matched}/{s.total_gt})  "
        f"ToolSucc {s.tool_succ:.3f}  ResultSucc {s.result_succ:.3f}"
    )
    typer.echo(f"wrote {out / 'tasks.csv'}, {out / 'summary.json'}")


@ego_app.command("report")
def report(
    outs: list[Path] = typer.Argument(
        ..., help="Run folders of `ego run` (scored if they have no score) or `ego score` folders."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for report.md/.tex/.csv."),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed"),
    pool: bool = typer.Option(
        False, "--pool", help="Pool different agents into one row (default: rows per agent)."
    ),
) -> None:
    """Per agent x variant x mode JointSucc / MicroAcc / ToolSucc / ResultSucc with 95 %
    cluster-bootstrap intervals (cluster = task; across variants cluster = variant), error
    classes, pooled and per-file MicroAcc, and every other agent's paired difference against the
    first run's agent on the tasks both played."""

    table, paths, notes = write_report(outs, out, n_resamples=resamples, seed=seed, pool=pool)
    typer.echo(markdown(table))
    for n in notes:
        typer.secho(f"note: {n}", fg=typer.colors.YELLOW, err=True)
    typer.echo("wrote " + ", ".join(str(p) for p in paths))
