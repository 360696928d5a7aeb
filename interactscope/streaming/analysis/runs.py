"""Scored runs in memory: the one loader of run folders for every analysis.

:func:`load_scored` reads a scored run folder (``run.json`` + ``scores/``); :func:`rescore` scores
one in memory at other settings (tolerance sensitivity, re-timed responses); :func:`run_inputs`
opens an unscored one (interactions of the run, records, clusters) for the controls that need no
scores. All three go through :func:`interactscope.streaming.scoring.run.load_run_inputs` or
:class:`~interactscope.streaming.runlog.RunFolder`, and every failure is an :class:`AnalysisError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from interactscope.runs.common import RunLogError
from interactscope.streaming.analysis.errors import AnalysisError
from interactscope.streaming.judges import VerdictCache, make_judge
from interactscope.streaming.runlog import RunFolder
from interactscope.streaming.schema import ResponseRecord, RunManifest
from interactscope.streaming.scoring.results import (
    ScoreSummary,
    ScoringOptions,
    ScoringSettings,
    SummaryError,
)
from interactscope.streaming.scoring.run import RunInputs, load_run_inputs, score_collection
from interactscope.streaming.settings import Settings, flatten

__all__ = [
    "RunDescription",
    "RunInputs",
    "ScoredRun",
    "check_comparable",
    "coverage",
    "load_scored",
    "non_default_settings",
    "rescore",
    "resolve",
    "run_inputs",
    "run_label",
]


class RunDescription(BaseModel):
    """What a comparison, control or report records about a run it used."""

    path: str
    label: str
    model: str
    backend: str | None
    protocol: str | None
    non_default_settings: dict[str, Any]
    benchmark: dict[str, Any]
    scoring: dict[str, Any]


@dataclass
class ScoredRun:
    """A scored run in memory.

    Attributes:
        path: the run folder.
        manifest: ``run.json``.
        targets: ``scores/targets.csv`` (one row per target; columns of
            :data:`interactscope.streaming.scoring.frames.TARGET_COLUMNS`).
        interactions: ``scores/interactions.csv`` (one row per interaction).
        summary: ``scores/summary.json`` (metrics, scoring settings, judge).
        label: display name (model plus the settings that differ from the defaults).
        records: the response records, when loaded (controls that re-time responses need them).
    """

    path: Path
    manifest: RunManifest
    targets: pd.DataFrame
    interactions: pd.DataFrame
    summary: ScoreSummary = field(default_factory=ScoreSummary)
    label: str = ""
    records: list[ResponseRecord] | None = None

    @property
    def settings(self) -> dict[str, Any]:
        return self.manifest.settings.model_dump(mode="json")

    @property
    def model(self) -> str:
        return str(self.manifest.model or (self.path.name if self.path else "run"))

    @property
    def fingerprint(self) -> str | None:
        return self.manifest.benchmark.fingerprint

    @property
    def scoring(self) -> ScoringSettings:
        return self.summary.settings

    def scoring_options(self) -> ScoringOptions:
        """The tolerance, merge span and infra_error rule the run was scored with (the
        defaults where unknown)."""
        return ScoringOptions.of(
            tolerance_s=self.scoring.tolerance_s,
            merge_s=self.scoring.merge_s,
            infra_error_rule=(self.scoring.model_extra or {}).get("infra_error_rule"),
        )

    def describe(self) -> RunDescription:
        """What a control or report records about a run it used."""
        b = self.manifest.benchmark
        return RunDescription(
            path=str(self.path),
            label=self.label,
            model=self.model,
            backend=self.manifest.backend,
            protocol=self.manifest.protocol,
            non_default_settings=non_default_settings(self.settings),
            benchmark={"name": b.name, "version": b.version, "fingerprint": b.fingerprint},
            scoring={
                "tolerance_s": self.scoring.tolerance_s,
                "merge_s": self.scoring.merge_s,
                "judge": self.scoring.judge_name,
            },
        )


_DEFAULTS: dict[str, Any] | None = None


def _flat_defaults() -> dict[str, Any]:
    global _DEFAULTS
    if _DEFAULTS is None:
        _DEFAULTS = flatten(Settings().model_dump())
    return _DEFAULTS


def non_default_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted settings whose value differs from :class:`interactscope.streaming.settings.Settings`
    defaults (``adapter.*`` included), e.g. ``{"scene": "none", "cooldown_s": 10.0}``."""

    d = _flat_defaults()
    flat = flatten(dict(settings))
    return {k: v for k, v in sorted(flat.items()) if k != "protocol" and d.get(k, object()) != v}


def _fmt_setting(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def run_label(manifest: RunManifest) -> str:
    """``model`` plus its non-default settings, e.g. ``oracle (scene=none)``."""
    extra = non_default_settings(manifest.settings.model_dump(mode="json"))
    if not extra:
        return str(manifest.model)
    return (
        f"{manifest.model} (" + ", ".join(f"{k}={_fmt_setting(v)}" for k, v in extra.items()) + ")"
    )


def _open(path: Path) -> RunFolder:
    try:
        return RunFolder(path)
    except RunLogError as exc:
        raise AnalysisError(str(exc)) from None


def _read_summary(path: Path) -> ScoreSummary:
    if not path.exists():
        return ScoreSummary()
    try:
        return ScoreSummary.read(path)
    except SummaryError as exc:
        raise AnalysisError(str(exc)) from None


def load_scored(run_dir: str | Path, *, scores_dir: str | Path | None = None) -> ScoredRun:
    """Read a scored run folder (``run.json`` + ``scores/``).

    Raises:
        AnalysisError: not a run folder, or not scored yet (the message names the command).
    """
    path = Path(run_dir)
    folder = _open(path)
    scores = Path(scores_dir) if scores_dir else path / "scores"
    if not (scores / "targets.csv").exists() or not (scores / "interactions.csv").exists():
        raise AnalysisError(
            f"{path}: not scored yet (no {scores / 'targets.csv'}); run "
            f"`interactscope score {path}` first"
        )
    manifest = folder.manifest
    targets = pd.read_csv(scores / "targets.csv", dtype={"cluster": str})
    interactions = pd.read_csv(scores / "interactions.csv", dtype={"cluster": str})
    summary = _read_summary(scores / "summary.json")
    return ScoredRun(path, manifest, targets, interactions, summary, run_label(manifest))


def resolve(run: str | Path | ScoredRun) -> ScoredRun:
    """A :class:`ScoredRun` as given, or loaded from its folder."""
    return run if isinstance(run, ScoredRun) else load_scored(run)


def run_inputs(run_dir: str | Path, *, tasks: Sequence[str] | None = None) -> RunInputs:
    """Interactions (only ``tasks`` when given), records and clusters of a run folder; scores
    are not needed.

    Raises:
        AnalysisError: not a run folder.
    """
    _open(Path(run_dir))
    return load_run_inputs(run_dir, tasks=tasks)


def rescore(
    run_dir: str | Path,
    *,
    tolerance_s: float | None = None,
    merge_s: float | None = None,
    judge: str | None = None,
    records: Sequence[ResponseRecord] | None = None,
    tasks: Sequence[str] | None = None,
) -> ScoredRun:
    """Score a run folder in memory (nothing written besides the verdict cache) — for tolerance
    sensitivity and re-timed responses.

    Args:
        tolerance_s: δ in seconds (tolerance sensitivity: 1, 2, 4); default the paper's 2 s.
        merge_s: grouping span; default the one the run was scored with, else 2 s.
        judge: ``--judge`` string; default the judge the run was scored with (its ``name``),
            else ``lexical``. The run's verdict cache (``scores/verdicts.sqlite``) is reused.
        records: response records to score instead of the run's own (e.g. re-timed ones).
        tasks: score only these tasks (e.g. ``("T1",)``: the tool-set check, no judge calls).

    Raises:
        AnalysisError: not a run folder.
    """

    path = Path(run_dir)
    inputs = run_inputs(path, tasks=tasks)
    old = _read_summary(path / "scores" / "summary.json").settings
    judge_obj = make_judge(judge or old.judge_name or "lexical")
    options = ScoringOptions.of(
        tolerance_s=tolerance_s,
        merge_s=merge_s if merge_s is not None else old.merge_s,
        infra_error_rule=(old.model_extra or {}).get("infra_error_rule"),
    )
    recs = list(records) if records is not None else inputs.records
    cache = None
    if not judge_obj.per_item:
        (path / "scores").mkdir(exist_ok=True)
        cache = VerdictCache(path / "scores" / "verdicts.sqlite")
    try:
        res = score_collection(
            inputs.interactions,
            recs,
            inputs.clusters,
            judge_obj,
            cache=cache,
            options=options,
            run_info={"model": inputs.manifest.model},
        )
    finally:
        if cache is not None:
            cache.close()
    t = res.targets.assign(cluster=res.targets["cluster"].astype(str))
    i = res.interactions.assign(cluster=res.interactions["cluster"].astype(str))
    m = inputs.manifest
    return ScoredRun(path, m, t, i, res.summary, run_label(m), recs)


def _benchmark_line(run: ScoredRun) -> str:
    b = run.manifest.benchmark
    return f"{run.path} is {b.name} v{b.version} (fingerprint {b.fingerprint})"


def coverage(run: ScoredRun) -> str:
    """What part of its benchmark ``run`` covers, in words: ``"PATH is shard 2/4"``, ``"... is a
    subset (--only/--task)"``, ``"... covers 4 of 11 interactions"`` (e.g. ``collect --limit``) or
    ``"... is a full run (11 interactions)"``; counts from ``scores/interactions.csv`` and
    ``run.json``'s ``benchmark.n_interactions``."""
    m, n = run.manifest, len(run.interactions)
    total = m.benchmark.n_interactions
    if m.shard:
        return f"{run.path} is shard {m.shard} ({n} of {total} interactions)"
    if (m.model_extra or {}).get("subset"):
        return f"{run.path} is a subset (--only/--task: {n} of {total} interactions)"
    if n < total:
        return f"{run.path} covers {n} of {total} interactions"
    return f"{run.path} is a full run ({n} interactions)"


def _pairing_fix(a: ScoredRun, b: ScoredRun, common: set[str]) -> str:
    """How to get two runs onto the same interactions (there is no compare-on-common option:
    paired differences over a silently smaller set would misreport the benchmark)."""
    if a.manifest.shard or b.manifest.shard:
        return "merge shards with `interactscope merge` first"
    if not common:
        return "they share no interaction"
    ids = ",".join(sorted(common)) if len(common) <= 20 else None
    how = f"--only {ids}" if ids else "the same --limit/--only"
    return (
        f"to compare on the {len(common)} common interactions, collect the larger run's model "
        f"again with {how} into a new folder, score it and compare that"
    )


def check_comparable(a: ScoredRun, b: ScoredRun) -> list[str]:
    """Refuse runs that cannot be paired; return warnings for those that can with caveats.

    Raises:
        AnalysisError: different benchmark fingerprints, different interaction sets (the
            message lists up to 5 ids present in only one run) or different clusters.
    """
    if a.fingerprint != b.fingerprint:
        raise AnalysisError(
            "the runs were collected on different benchmarks: "
            f"{_benchmark_line(a)}, {_benchmark_line(b)}; "
            "paired differences need the same interactions and clusters"
        )
    ia = set(a.interactions["interaction_id"])
    ib = set(b.interactions["interaction_id"])
    if ia != ib:
        only_a, only_b = sorted(ia - ib), sorted(ib - ia)
        raise AnalysisError(
            f"the runs cover different interactions ({len(ia)} vs {len(ib)}): "
            f"only in {a.path}: {only_a[:5]}{' …' if len(only_a) > 5 else ''}; "
            f"only in {b.path}: {only_b[:5]}{' …' if len(only_b) > 5 else ''} "
            f"({coverage(a)}; {coverage(b)}; {_pairing_fix(a, b, ia & ib)})"
        )
    ca = a.interactions.set_index("interaction_id")["cluster"].astype(str)
    cb = b.interactions.set_index("interaction_id")["cluster"].astype(str)
    if not ca.sort_index().equals(cb.sort_index()):
        raise AnalysisError("the runs assign interactions to different clusters")
    notes = []
    for key in ("tolerance_s", "merge_s"):
        va, vb = getattr(a.scoring, key), getattr(b.scoring, key)
        if va != vb:
            notes.append(f"scored with different {key}: {va} vs {vb}")
    ja, jb = a.scoring.judge_name, b.scoring.judge_name
    if ja != jb:
        notes.append(f"scored with different judges: {ja} vs {jb}")
    return notes
