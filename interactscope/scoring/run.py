"""``interactscope score RUN``: judge, allocate/match, and write ``RUN/scores/`` (SPEC §3, §4).

Outputs (byte-identical when a run folder is scored twice with the same settings: sorted keys,
fixed float formatting, no timestamps, no cache statistics):

* ``scores/targets.csv`` — one row per target (see :mod:`interactscope.scoring.metrics`);
* ``scores/interactions.csv`` — one row per interaction;
* ``scores/clusters.csv`` — per (cluster, task) numerators and denominators for the bootstrap;
* ``scores/summary.json`` — every metric, the scoring settings, the judge (with its approximation
  label), judge health and record health;
* ``scores/rejudge.json`` — only with ``--rejudge N``: the flip rate (not reproducible by nature).

The verdict cache defaults to ``RUN/scores/verdicts.sqlite`` (setting ``judge.cache``): a run
folder carries its own verdicts and re-scores offline; pass ``cache_path`` (``--cache``) to share
one cache across runs.
"""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from interactscope.judges import (
    DEFAULT_JUDGE,
    Judge,
    JudgeItem,
    JudgeReport,
    VerdictCache,
    make_judge,
    run_judge,
)
from interactscope.schema import Interaction, ResponseRecord
from interactscope.scoring.allocation import ms
from interactscope.scoring.core import pairs_that_matter, score_interaction
from interactscope.scoring.metrics import (
    cluster_table,
    compute_metrics,
    format_tables,
    interactions_frame,
    targets_frame,
)

__all__ = ["SCORING_VERSION", "ScoreResult", "score_collection", "score_run", "write_scores"]

log = logging.getLogger(__name__)

SCORING_VERSION = 1
RECORD_POLICY = {
    "error": "excluded from responses; counted in health.infrastructure_errors",
    "suppressed": "silent",
    "before_q": "ignored",
}


@dataclass
class ScoreResult:
    targets: pd.DataFrame
    interactions: pd.DataFrame
    clusters: pd.DataFrame
    metrics: dict[str, Any]
    summary: dict[str, Any]
    judge_report: JudgeReport
    table: str


def score_collection(
    interactions: Sequence[Interaction],
    records: Iterable[ResponseRecord],
    clusters: Mapping[str, str],
    judge: Judge,
    *,
    cache: VerdictCache | None = None,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
    rejudge: int = 0,
    run_info: Mapping[str, Any] | None = None,
) -> ScoreResult:
    """Score records against interactions (no file I/O besides the cache).

    Args:
        interactions: the interactions to score (every one is scored; one without records has
            all targets ``missed`` and is counted in ``health.interactions_without_records``).
        records: response records of the run (any order; records of other interactions are
            counted in ``health.unknown_records`` and ignored).
        clusters: video id -> bootstrap cluster (a missing video is its own cluster).
        judge: the text judge for targets without ``tools``.
        cache: verdict cache, or ``None`` for none.
        tolerance_s: δ (s). merge_s: grouping span (s).
        rejudge: re-ask this many cached verdicts and report the flip rate.
        run_info: what ``summary.json`` records about the run (model, protocol, benchmark).
    """
    if tolerance_s < 0 or merge_s < 0:
        raise ValueError("tolerance_s and merge_s must be >= 0")
    by_id: dict[str, list[ResponseRecord]] = defaultdict(list)
    known = {i.id for i in interactions}
    unknown = 0
    for r in records:
        if r.interaction_id in known:
            by_id[r.interaction_id].append(r)
        else:
            unknown += 1
    for recs in by_id.values():
        recs.sort(key=lambda r: ms(r.t))

    items: list[JudgeItem] = []
    for inter in interactions:
        recs = by_id.get(inter.id, [])
        for k, j in pairs_that_matter(inter, recs, tolerance_s=tolerance_s, merge_s=merge_s):
            tgt = inter.targets[k]
            if tgt.tools is None:
                items.append(
                    JudgeItem(
                        inter.id, tgt.id, recs[j].t, inter.query.text, tgt.reference, recs[j].text
                    )
                )
    report = run_judge(judge, items, cache, rejudge=rejudge)

    target_rows: list[dict[str, Any]] = []
    inter_rows: list[dict[str, Any]] = []
    for inter in interactions:
        recs = by_id.get(inter.id, [])

        def lookup(target_id: str, t_ms: int, _iid: str = inter.id) -> tuple[bool | None, str]:
            v = report.verdicts[(_iid, target_id, t_ms)]
            return v.value, v.label

        s = score_interaction(
            inter,
            recs,
            lookup,
            cluster=clusters.get(inter.video_id, inter.video_id),
            tolerance_s=tolerance_s,
            merge_s=merge_s,
        )
        target_rows.extend(s.targets)
        inter_rows.append(s.interaction)

    tdf = targets_frame(target_rows)
    idf = interactions_frame(inter_rows)
    cdf = cluster_table(tdf, idf)
    metrics = compute_metrics(cdf)
    unparseable_pairs = sum(1 for v in report.verdicts.values() if v.value is None)
    health = {
        "judge": {
            "pairs_judged": report.pairs,
            "unique_triples": report.unique,
            "unparseable_pairs": unparseable_pairs,
            "unjudged_targets": int((tdf["outcome"] == "unjudged").sum()),
        },
        "infrastructure_errors": int(idf["infrastructure_errors"].sum()),
        "suppressed_records": int(idf["suppressed"].sum()),
        "parse_errors": int(idf["parse_errors"].sum()),
        "interactions_without_records": int((idf["records"] == 0).sum()),
        "unknown_records": unknown,
    }
    summary = {
        "scoring_version": SCORING_VERSION,
        "run": dict(run_info or {}),
        "settings": {
            "tolerance_s": float(tolerance_s),
            "merge_s": float(merge_s),
            "time_resolution": "ms",
            "windows": "closed",
            "allocation": "first-response (T1-T7, SPEC 3.1)",
            "matching": "order-preserving maximum (T8, SPEC 3.2)",
            "straddling_group": "premature",
            "unparseable_verdict": "target excluded from numerator and denominator (unjudged)",
            "records": RECORD_POLICY,
            "content_check": {"targets_with_tools": "toolset (exact, case-insensitive)"},
            "judge": judge.describe(),
        },
        "approximation": judge.approximation,
        "metrics": metrics,
        "health": health,
    }
    table = format_tables(
        metrics, model=str((run_info or {}).get("model", "run")), judge=judge.name
    )
    if judge.approximation:
        table += f"\nNOTE: judge '{judge.name}' is an approximation: {judge.approximation}"
    return ScoreResult(tdf, idf, cdf, metrics, summary, report, table)


def _clean(obj: Any) -> Any:
    """JSON-ready copy: floats rounded to 6 decimals, NaN/inf -> null, tuples -> lists."""
    if isinstance(obj, float):
        return None if not math.isfinite(obj) else round(obj, 6)
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return _clean(obj.item())
    return obj


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    df.to_csv(path, index=False, float_format="%.3f", lineterminator="\n", encoding="utf-8")


def write_scores(result: ScoreResult, out_dir: str | Path) -> dict[str, Path]:
    """Write the score files into ``out_dir`` (created). Returns name -> path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "targets": out / "targets.csv",
        "interactions": out / "interactions.csv",
        "clusters": out / "clusters.csv",
        "summary": out / "summary.json",
    }
    _write_csv(result.targets, paths["targets"])
    _write_csv(result.interactions, paths["interactions"])
    _write_csv(result.clusters, paths["clusters"])
    paths["summary"].write_text(
        json.dumps(_clean(result.summary), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    rep = result.judge_report
    if rep.rejudged:
        paths["rejudge"] = out / "rejudge.json"
        paths["rejudge"].write_text(
            json.dumps(
                _clean(
                    {
                        "rejudged": rep.rejudged,
                        "flips": rep.flips,
                        "flip_rate": rep.flip_rate,
                        "flipped": rep.flipped,
                    }
                ),
                indent=2,
                sort_keys=True,
                ensure_ascii=False,
            )
            + "\n",
            encoding="utf-8",
        )
    return paths


def score_run(
    run_dir: str | Path,
    *,
    judge: str | Judge = DEFAULT_JUDGE,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
    rejudge: int = 0,
    cache_path: str | Path | None = None,
    out_dir: str | Path | None = None,
) -> ScoreResult:
    """Score a run folder and write ``RUN/scores/`` (or ``out_dir``).

    Args:
        run_dir: a run folder (``run.json`` + responses) made by ``interactscope collect``.
        judge: a ``--judge`` string or a :class:`~interactscope.judges.Judge`.
        cache_path: verdict cache; default ``RUN/scores/verdicts.sqlite`` (also when ``out_dir``
            puts the score files elsewhere, e.g. one folder per tolerance).
        out_dir: where the score files go; default ``RUN/scores``.
    """
    from interactscope.runlog import RunFolder

    run_dir = Path(run_dir)
    folder = RunFolder(run_dir)
    manifest = folder.manifest
    bench = folder.benchmark(probe_media=False, media_errors="record")
    wanted = set(manifest.interaction_ids) if manifest.interaction_ids else None
    interactions = [i for i in bench.interactions if wanted is None or i.id in wanted]
    clusters = {vid: (v.cluster or vid) for vid, v in bench.videos.items()}
    judge_obj = make_judge(judge) if isinstance(judge, str) else judge
    out = Path(out_dir) if out_dir else run_dir / "scores"
    run_info = {
        "model": manifest.model,
        "backend": manifest.backend,
        "protocol": manifest.protocol,
        "shard": manifest.shard,
        "benchmark": {
            "name": manifest.benchmark.name,
            "version": manifest.benchmark.version,
            "fingerprint": manifest.benchmark.fingerprint,
        },
        "interactions": len(interactions),
    }
    default_cache = run_dir / "scores" / "verdicts.sqlite"
    cache = None if judge_obj.per_item else VerdictCache(cache_path or default_cache)
    try:
        result = score_collection(
            interactions,
            folder.responses(),
            clusters,
            judge_obj,
            cache=cache,
            tolerance_s=tolerance_s,
            merge_s=merge_s,
            rejudge=rejudge,
            run_info=run_info,
        )
    finally:
        if cache is not None:
            cache.close()
    write_scores(result, out)
    return result
