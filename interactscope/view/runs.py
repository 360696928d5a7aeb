"""Read one run folder for the viewer: ``run.json``, ``responses.jsonl`` and, when the run was
scored, ``scores/targets.csv``, ``scores/clusters.csv``, ``scores/summary.json`` and, when the
benchmark declares environments, ``scores/environment_scores.json`` (:mod:`.environment`)."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from interactscope.core.errors import InteractScopeError
from interactscope.core.files import read_data
from interactscope.runs.common import RunLogError
from interactscope.streaming.bench import Benchmark, BenchmarkError
from interactscope.streaming.environments.scores import EnvironmentScores
from interactscope.streaming.runlog import RunFolder
from interactscope.streaming.schema import ResponseRecord, RunManifest
from interactscope.streaming.settings import Settings
from interactscope.view.environment import env_rows, load_environment
from interactscope.view.model import EnvInteraction

__all__ = ["LoadedRun", "ViewError", "load_run"]

log = logging.getLogger(__name__)


class ViewError(InteractScopeError, ValueError):
    """A run folder the viewer cannot read; the message names the file and the fix."""


@dataclass
class LoadedRun:
    """One run as the viewer needs it.

    Attributes:
        targets: ``target_id -> targets.csv row`` per interaction id (empty when unscored).
        records: every record of each interaction, sorted by t.
        tolerance_s, merge_s: the scoring settings (defaults 2 s when unscored).
        environment: the environment columns of a scored run whose benchmark declares
            environments (:mod:`.environment`); ``environment_source`` says where from, or
            why they could not be read (``environment`` then ``None``); ``environment_rows``
            interaction id -> its row.
    """

    path: Path
    label: str
    manifest: RunManifest
    settings: Settings
    bench: Benchmark
    records: dict[str, list[ResponseRecord]]
    targets: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    clusters: pd.DataFrame | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    tolerance_s: float = 2.0
    merge_s: float = 2.0
    environment: EnvironmentScores | None = None
    environment_source: str = ""
    environment_rows: dict[str, EnvInteraction] = field(default_factory=dict)

    @property
    def scored(self) -> bool:
        return self.clusters is not None

    @property
    def interaction_ids(self) -> list[str]:
        ids = self.manifest.interaction_ids
        return list(ids) if ids else [i.id for i in self.bench.interactions]


def _read_scores(run: LoadedRun, scores: Path) -> None:
    need = [scores / n for n in ("targets.csv", "clusters.csv", "summary.json")]
    if not all(p.is_file() for p in need):
        return
    try:
        tdf = pd.read_csv(need[0], keep_default_na=False, na_values=[""])
        run.clusters = pd.read_csv(need[1])
        run.summary = read_data(need[2], "json")
    except (ValueError, OSError) as exc:
        raise ViewError(
            f"{scores}: unreadable score files ({exc}); re-run `interactscope score`"
        ) from None
    by_id: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in tdf.to_dict("records"):
        by_id[str(row["interaction_id"])][str(row["target_id"])] = row
    run.targets = dict(by_id)
    sset = run.summary.get("settings", {})
    run.tolerance_s = float(sset.get("tolerance_s", 2.0))
    run.merge_s = float(sset.get("merge_s", 2.0))


def load_run(path: str | Path, label: str | None = None) -> LoadedRun:
    """Load a run folder (scored or not) and the benchmark it was collected on.

    Raises:
        ViewError: not a run folder, unreadable ``run.json``/``responses.jsonl``, the benchmark
            folder recorded in ``run.json`` is gone or invalid, or unreadable score files.
    """
    path = Path(path)
    try:
        folder = RunFolder(path)
        manifest = folder.manifest
        records = folder.responses()
    except RunLogError as exc:  # a folder collect made (run.json there) needs no such hint
        hint = (
            ""
            if (path / "run.json").is_file()
            else "; give a folder made by `interactscope collect`"
        )
        raise ViewError(f"{exc}{hint}") from None
    except (ValueError, OSError) as exc:
        raise ViewError(f"{path}: unreadable run folder ({exc})") from None
    try:
        bench = folder.benchmark(probe_media=False, media_errors="record")
    except (BenchmarkError, OSError) as exc:
        raise ViewError(
            f"{path}/run.json: benchmark.path {manifest.benchmark.path} cannot be loaded ({exc}); "
            "restore the benchmark folder there"
        ) from None
    by_id: dict[str, list[ResponseRecord]] = defaultdict(list)
    for r in records:
        by_id[r.interaction_id].append(r)
    try:
        settings = manifest.settings
    except ValueError:
        settings = Settings()
        log.warning("%s/run.json: settings not understood; frames shown with the defaults", path)
    run = LoadedRun(
        path=path,
        label=label or manifest.model,
        manifest=manifest,
        settings=settings,
        bench=bench,
        records=dict(by_id),
    )
    _read_scores(run, path / "scores")
    if run.scored:
        try:
            run.environment, run.environment_source = load_environment(
                bench, records, path / "scores", tolerance_s=run.tolerance_s, merge_s=run.merge_s
            )
            run.environment_rows = env_rows(run.environment)
        except Exception as exc:  # noqa: BLE001 - the paper's columns still show; the card says why
            run.environment_source = f"environment columns not shown: {exc}"
    return run
