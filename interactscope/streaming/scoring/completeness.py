"""How much of a run folder was collected: the records against every interaction's decision grid.

Used by ``score`` (health counts and the "resume collect" warning) and by ``merge`` (which
refuses incomplete shards). The grids are recomputed from the run's recorded settings and video
durations (docs/protocol.md, decision grid), so no media is decoded for a run that recorded them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interactscope.runs.common import RunLogError
from interactscope.streaming.bench import Benchmark, BenchmarkError
from interactscope.streaming.protocol.requests import interaction_grid
from interactscope.streaming.runlog import RunFolder, describe_missing, missing_points
from interactscope.streaming.settings import Settings

__all__ = [
    "Completeness",
    "benchmark_with_durations",
    "expected_grids",
    "incomplete_warnings",
    "run_completeness",
]


def expected_grids(
    bench: Benchmark, settings: Settings | dict[str, Any], interaction_ids: list[str]
) -> dict[str, list[float]]:
    """Decision times (s) each interaction of a run should have a record for, under the run's
    recorded settings. Interactions no longer in the benchmark are left out."""
    s = settings if isinstance(settings, Settings) else Settings.model_validate(settings)
    ids = set(interaction_ids)
    return {it.id: interaction_grid(bench, it, s) for it in bench.interactions if it.id in ids}


@dataclass
class Completeness:
    """How much of a run folder was collected.

    Attributes:
        finished: the last ``collect`` ended normally (``run.json`` has ``ended_at``).
        missing: interaction id -> expected decision times (s) without a record.
        lines: one line per incomplete interaction (``describe_missing``).
        expected: interaction id -> its expected decision times (s).
    """

    finished: bool
    missing: dict[str, list[float]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    expected: dict[str, list[float]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.finished and not self.missing

    @property
    def without_records(self) -> list[str]:
        """Interactions with no record at all (sorted ids)."""
        return sorted(i for i, ts in self.missing.items() if len(ts) == len(self.expected[i]))

    @property
    def partial(self) -> list[str]:
        """Interactions with some but not all of their decision points recorded (sorted ids)."""
        return sorted(i for i, ts in self.missing.items() if len(ts) < len(self.expected[i]))


def benchmark_with_durations(folders: list[RunFolder]) -> Benchmark:
    """The runs' benchmark with the video durations they recorded (decoding the media only
    for runs from before durations were recorded).

    Raises:
        BenchmarkError: the benchmark can no longer be loaded.
    """
    recorded: dict[str, float | None] = {}
    for f in folders:
        recorded.update(f.manifest.video_durations or {})
    needs_probe = any(f.manifest.video_durations is None for f in folders)
    bench = folders[0].benchmark(probe_media=needs_probe, media_errors="record")
    for vid, d in recorded.items():
        if vid in bench.videos:
            bench.videos[vid].duration_s = d
    return bench


def run_completeness(run: str | Path) -> Completeness:
    """Compare a run folder's records with the decision grid of every interaction it covers.

    Raises:
        RunLogError: not a run folder.
        BenchmarkError: the run's benchmark can no longer be loaded.
    """
    folder = RunFolder(run)
    m = folder.manifest
    bench = benchmark_with_durations([folder])
    ids = m.interaction_ids or [it.id for it in bench.interactions]
    expected = expected_grids(bench, m.settings, ids)
    missing = missing_points(folder.responses(), expected)
    lines = describe_missing(missing, expected)
    return Completeness(m.ended_at is not None, missing, lines, expected)


def incomplete_warnings(run: str | Path, c: Completeness | None = None) -> list[str]:
    """Warning lines for ``score`` on a run that never finished or lacks records ([] if none).

    ``c``: the completeness already computed (else it is computed here)."""
    if c is None:
        try:
            c = run_completeness(run)
        except (RunLogError, BenchmarkError) as exc:
            return [f"{run}: cannot check completeness ({str(exc).splitlines()[0]})"]
    if c.complete:
        return []
    n = len(c.missing)
    if not n:  # every record is there: only the end mark is missing (e.g. a crash after the last)
        return [
            f"{run}: collect did not record its end, but every decision point has a record; "
            "the scores are complete."
        ]
    head = f"{run}: " + ("the run never finished" if not c.finished else "the run lacks records")
    out = [
        f"{head}; {n} interaction(s) without or with partial records count as misses. "
        "Resume it by running the same `interactscope collect` command again."
    ]
    return (
        out
        + [f"  {line}" for line in c.lines[:20]]
        + ([f"  ... and {n - 20} more"] if n > 20 else [])
    )
