"""Demo run folders for the compare / controls / report tests (collected with the weight-free
baselines, scored with the offline lexical judge; a few seconds in all)."""

from __future__ import annotations

from pathlib import Path

from interactscope.streaming.collect import run_collect
from interactscope.streaming.schema import RunManifest
from interactscope.streaming.scoring.run import score_run
from tests.helpers.foundation_fixtures import DEMO

DEMO_RUNS = {
    "oracle": ("oracle", {}),
    "silent": ("silent", {}),
    "blind-fire": ("blind-fire", {}),
    "oracle-none": ("oracle", {"scene": "none"}),
    "oracle-history": ("oracle", {"history.n": 5}),
    "oracle-cooldown": ("oracle", {"cooldown_s": 10}),
    "oracle-step2": ("oracle", {"grid.step_s": 2}),
}


def make_demo_runs(root: Path, names=None, *, score: bool = True) -> dict[str, Path]:
    """Collect (and score) the named demo runs under ``root``; returns name -> run folder."""
    out = {}
    for name in names or DEMO_RUNS:
        model, overrides = DEMO_RUNS[name]
        run = root / name
        run_collect(model=model, bench=DEMO, out=run, overrides=overrides, progress=False)
        if score:
            score_run(run, judge="lexical")
        out[name] = run
    return out


def manifest(model: str = "m", settings: dict | None = None, fingerprint: str = "f") -> RunManifest:
    """A minimal ``run.json`` for hand-made :class:`~interactscope.streaming.analysis.runs.ScoredRun`s."""
    return RunManifest(
        model=model,
        backend=model,
        protocol="offline",
        settings=settings or {},
        benchmark={
            "name": "hand",
            "version": "1",
            "path": ".",
            "fingerprint": fingerprint,
            "n_interactions": 0,
        },
    )
