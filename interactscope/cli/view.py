"""``interactscope view``: one self-contained HTML page of one or more run folders."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import ValidationError

from interactscope.cli.app import app
from interactscope.cli.common import fail, setup_logging
from interactscope.view import ViewSettings, write_view

_OPTION = {"max_thumbnails": "--max-thumbs", "thumbs_per_point": "--thumbs-per-point",
           "thumb_px": "--thumb-px", "resamples": "--resamples"}  # fmt: skip


@app.command("view")
def view(
    runs: list[Path] = typer.Argument(
        ...,
        help="Run folder(s) of one benchmark; with two, B's gained and lost targets vs A. "
        "`ego run` folders (episodes.jsonl) get the EgoBench page: one, or two side by side.",
    ),
    out: Path = typer.Option(Path("view.html"), "--out", "-o", help="HTML file to write."),
    max_thumbs: int = typer.Option(
        400, "--max-thumbs", help="Distinct JPEG thumbnails in the page at most (0 = none)."
    ),
    thumbs_per_point: int = typer.Option(
        8, "--thumbs-per-point", help="Thumbnails shown per decision point (frame times: all)."
    ),
    thumb_px: int = typer.Option(160, "--thumb-px", help="Long side of a thumbnail, pixels."),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples B."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    verbose: bool = typer.Option(False, "-v", "--verbose"),
) -> None:
    """Write one HTML file (no server, no network): scores with 95% intervals, and per
    interaction a timeline of the decision grid, q, target windows and every response coloured
    by its outcome; click a response for its text, tool calls, verdict, latency and tokens, and
    for the frames (and transcript) the model had at that decision point. For an `ego run`
    folder (two: side by side, with the tasks B gained and lost): scores per variant, and per
    task the dialogue, tool calls with results, auditor verdicts, stop reason, error class and
    the final state diff against the ground truth."""
    setup_logging(verbose)

    try:
        settings = ViewSettings(
            max_thumbnails=max_thumbs,
            thumbs_per_point=thumbs_per_point,
            thumb_px=thumb_px,
            resamples=resamples,
            seed=seed,
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        option = _OPTION.get(str(err["loc"][0]), str(err["loc"][0]))
        fail(f"view: {option}: {err['msg']}")
    path = write_view(runs, out, settings)
    size = path.stat().st_size / 1e6
    typer.echo(f"wrote {path} ({size:.1f} MB); open it in a browser")
