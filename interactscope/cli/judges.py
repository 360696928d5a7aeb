"""``interactscope compare-judges``: how far two content judges agree on one run."""

from __future__ import annotations

from pathlib import Path

import typer

from interactscope.cli.app import app
from interactscope.cli.common import fail, setup_logging
from interactscope.core.files import write_atomic
from interactscope.streaming.analysis.judge_agreement import compare_judges, format_agreement


@app.command("compare-judges")
def compare_judges_cmd(
    run: Path = typer.Argument(..., help="Run folder made by `interactscope collect`."),
    judges: tuple[str, str] = typer.Option(
        ...,
        "--judges",
        help="Two --judge strings, e.g. --judges openai:gpt-4o openai:gpt-4o+frames.",
    ),
    tolerance: float = typer.Option(2.0, "--tolerance", help="Window half-width δ, seconds."),
    merge_s: float = typer.Option(2.0, "--merge", help="Response grouping span, seconds (T1–T7)."),
    cache: Path | None = typer.Option(
        None, "--cache", help="Verdict cache file (default RUN/scores/verdicts.sqlite)."
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the full result as JSON."),
    listed: int = typer.Option(50, "--list", help="Disagreements printed at most."),
    verbose: bool = typer.Option(False, "-v", "--verbose"),
) -> None:
    """Score one run with two judges; print per-task agreement and Cohen's kappa over the judged
    pairs, and the pairs they judged differently (text, both outcomes, a link into RUN/view.html
    when it exists). Writes nothing but the verdict cache (and --out)."""
    setup_logging(verbose)

    try:
        rep = compare_judges(
            run, judges[0], judges[1], cache_path=cache, tolerance_s=tolerance, merge_s=merge_s
        )
    except ValueError as exc:  # plain ValueErrors; a benchmark's first problem
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    typer.echo(format_agreement(rep, max_listed=listed))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, rep.model_dump_json(indent=2) + "\n")
        typer.echo(f"wrote {out}")
