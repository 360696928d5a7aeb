"""Peer-benchmark commands: import, audit-exposure, score-peer."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from interactscope.cli.app import app
from interactscope.cli.common import disk_errors, fail, parse_sets
from interactscope.core.errors import first_problem
from interactscope.core.files import write_atomic
from interactscope.core.text import plural
from interactscope.streaming.bench import BenchmarkError, load_benchmark
from interactscope.streaming.importers import audit_exposure, import_benchmark
from interactscope.streaming.importers.exposure import format_table, write_csv
from interactscope.streaming.importers.peer_scoring import VARIANTS, score_peer
from interactscope.streaming.schema import ResponseRecord, RunManifest

PEER_SCORES_DIR = "peer-scores"


@app.command("import")
def import_cmd(
    format_name: str = typer.Argument(
        ...,
        metavar="FORMAT",
        help="streamingbench-po, ovo-forward, ovo-backward, omnimmi-pa, omnimmi-si or proassist.",
    ),
    src: Path = typer.Argument(..., help="The peer's annotation JSON file."),
    out: Path = typer.Option(..., "--out", "-o", help="Benchmark folder to write."),
    videos: Path | None = typer.Option(
        None,
        "--videos",
        help="Folder with the peer's videos, named as the peer names them (default OUT/videos; "
        "a folder elsewhere is linked as OUT/videos).",
    ),
    sets: list[str] = typer.Option(
        [], "--set", help="Format setting KEY=VALUE (see docs/importers.md), repeatable."
    ),
    no_probe: bool = typer.Option(False, "--no-probe", help="Do not open the video files."),
    force: bool = typer.Option(False, "--force", help="Overwrite a benchmark in OUT."),
) -> None:
    """Convert a peer benchmark's annotations into a benchmark folder, write
    OUT/import-report.json (converted, dropped and why, fields ignored) and validate it.

    Missing videos are listed, not fatal. Exit code 1 when the result has other problems."""

    with disk_errors(out):
        rep = import_benchmark(
            format_name,
            src,
            out,
            videos=videos,
            settings=parse_sets(sets),
            probe_media=not no_probe,
            force=force,
        )
    typer.echo(
        f"{rep.format}: {plural(rep.items_read, 'item')} read, "
        f"{plural(rep.interactions, 'interaction')}, {plural(rep.targets, 'target')}, "
        f"{len(rep.dropped)} dropped -> {out}"
    )
    for reason, n in rep.dropped_by_reason.items():
        typer.echo(f"  dropped {n}: {reason}")
    v = rep.validation
    typer.echo(f"validate: {v.summary}")
    if v.videos_missing:
        shown = ", ".join(v.videos_missing[:5]) + (" ..." if len(v.videos_missing) > 5 else "")
        typer.secho(
            f"warning: {plural(len(v.videos_missing), 'video file')} missing ({shown}); "
            f"put them under {out / rep.videos_dir} (list in import-report.json)",
            fg=typer.colors.YELLOW,
            err=True,
        )
    if not v.ok:
        for p in v.problems:
            typer.secho(f"  - {p}", fg=typer.colors.RED, err=True)
        fail(f"{len(v.problems)} problem(s) besides missing videos in {out}")


@app.command("audit-exposure")
def audit_exposure_cmd(
    format_name: str = typer.Argument(..., metavar="FORMAT", help="A format name of `import`."),
    src: Path = typer.Argument(..., help="The peer's annotation JSON file."),
    out: Path | None = typer.Option(None, "--out", "-o", help="CSV file, one row per decision."),
    videos: Path | None = typer.Option(
        None, "--videos", help="The peer's videos: present files give exact durations."
    ),
    pipeline: str = typer.Option(
        "offline", "--pipeline", help="omnimmi-si only: offline (whole video) or online."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """How many seconds of media after the query/probe time the peer's own pipeline shows the
    model, and whether the reference is in its prompt: mean, max, share of items affected."""

    rows, summary = audit_exposure(format_name, src, videos=videos, pipeline=pipeline)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_csv(rows, out)
    typer.echo(summary.model_dump_json(indent=2) if as_json else format_table(summary))
    if out is not None and not as_json:
        typer.echo(f"{plural(len(rows), 'row')} -> {out}")


@app.command("score-peer")
def score_peer_cmd(
    run: Path = typer.Argument(..., help="Run folder (run.json + responses.jsonl)."),
    variant: str = typer.Option(..., "--variant", help="Peer scoring rule (`list` names them)."),
    bench: Path | None = typer.Option(
        None, "--bench", help="Benchmark folder (default: the one named in run.json)."
    ),
    tolerance: float = typer.Option(2.0, "--tolerance", help="δ (s) of the ±δ windows."),
) -> None:
    """Score a run with a peer benchmark's own rule (substring match, ±2 s without allocation,
    ...); writes RUN/peer-scores/VARIANT.json and prints the rate."""

    if variant == "list":
        for name, (_, desc) in VARIANTS.items():
            typer.echo(f"{name}: {desc}")
        return
    manifest_path, resp_path = run / "run.json", run / "responses.jsonl"
    if not manifest_path.is_file() or not resp_path.is_file():
        fail(f"{run}: not a run folder (needs run.json and responses.jsonl)")
    try:
        manifest = RunManifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
        records = {}
        for line in resp_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = ResponseRecord.model_validate_json(line)
                records[r.key] = r  # a later line for the same decision point wins
    except ValueError as exc:
        fail(f"{run}: unreadable run files ({first_problem(exc)})")
    try:
        b = load_benchmark(bench or manifest.benchmark.path, probe_media=False)
    except BenchmarkError as exc:
        fail(f"benchmark of {run}: {exc.problems[0]} (and {len(exc.problems) - 1} more)")
    ids = set(manifest.interaction_ids or [it.id for it in b.interactions])
    score = score_peer(
        variant,
        [it for it in b.interactions if it.id in ids],
        list(records.values()),
        tolerance,
    )
    dest = run / PEER_SCORES_DIR
    dest.mkdir(exist_ok=True)
    write_atomic((dest / f"{variant}.json"), score.model_dump_json(indent=2) + "\n")
    rate = "n/a" if score.rate is None else f"{100 * score.rate:.1f} %"
    per_task = ", ".join(
        f"{k} {'n/a' if v is None else f'{100 * v:.1f} %'}" for k, v in score.per_task.items()
    )
    typer.echo(f"{variant}: {score.hits}/{plural(score.targets, 'target')} = {rate} ({per_task})")
    typer.echo(json.dumps({"written": str(dest / f"{variant}.json")}))
