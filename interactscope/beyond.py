"""Beyond the paper: variants reported beside the paper's numbers, never replacing them.

* **Lenient allocation** (:func:`allocate_lenient`): SPEC §3.1 lets a premature or wrong first
  response consume its target unrecoverably. The paper's critique (seed 004, "weaknesses")
  suggests a sensitivity analysis in which *one correction* may follow: when the consumed group
  fails as ``premature`` or ``wrong``, the next group opening in the same region is also
  examined, and the target is a hit if that group has an eligible member. Responses within
  ``merge_s`` of the first already belong to its group under the paper's rule (and count there),
  so a correction is a *separate* group, opened more than ``merge_s`` after the first.
* **Output precision**: matched outputs / non-silent outputs (each hit matches exactly one
  response), beside output volume — in :func:`interactscope.compare.metric_ratios`.
* **Latency-aware timing** (:func:`latency_shifted`): each response is moved from its decision
  time t to t + ``latency_s`` (the measured inference latency recorded with it), then scored
  with the paper's rules: what a real-time deployment would deliver.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interactscope.compare import (
    B_DEFAULT,
    ScoredRun,
    format_interval,
    paired_table,
    rescore,
)
from interactscope.schema import Interaction, ResponseRecord
from interactscope.scoring.allocation import (
    TargetAllocation,
    allocate_first_response,
    candidate_responses,
    group_responses,
    ms,
)

__all__ = [
    "LenientAllocation",
    "allocate_lenient",
    "beyond_table",
    "latency_shifted",
    "lenient_frame",
]

Verdict = bool | None


@dataclass(frozen=True)
class LenientAllocation:
    """``strict``: the paper's allocation; ``outcome``: ``hit`` when a correction group hit,
    else the strict outcome; ``corrected``: the hit came from a correction; ``matched``: the
    index of the eligible response (into the caller's ``responses``) or ``None``."""

    strict: TargetAllocation
    outcome: str
    corrected: bool
    matched: int | None

    @property
    def hit(self) -> bool:
        return self.outcome == "hit"


def _t(r: Any) -> float:
    return float(r) if isinstance(r, (int, float)) else float(r.t)


def allocate_lenient(
    targets: Sequence[Any],
    responses: Sequence[Any],
    eligible: Callable[[int, int], Verdict],
    *,
    q: float,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
    corrections: int = 1,
) -> list[LenientAllocation]:
    """First-response allocation (SPEC §3.1) that lets ``corrections`` later groups of the same
    region follow a ``premature`` or ``wrong`` consumed group (beyond the paper).

    Args: as :func:`interactscope.scoring.allocate_first_response` (times in seconds; ``eligible``
    a callable (target index, response index) → verdict).

    Returns:
        One :class:`LenientAllocation` per target, in the order of ``targets``.
    """
    strict = allocate_first_response(
        targets, responses, eligible, q=q, tolerance_s=tolerance_s, merge_s=merge_s
    )
    groups = group_responses(responses, candidate_responses(responses, q), merge_s)
    out = []
    for a in strict:
        if a.outcome not in ("premature", "wrong") or a.group is None or corrections < 1:
            out.append(LenientAllocation(a, a.outcome, False, a.matched))
            continue
        lo2 = round(2000 * a.region_s[0])
        hi2 = None if np.isinf(a.region_s[1]) else round(2000 * a.region_s[1])
        w_lo, w_hi = ms(a.window_s[0]), ms(a.window_s[1])
        later = [
            g
            for g in groups
            if ms(g.opened_s) > ms(a.group.opened_s)
            and 2 * ms(g.opened_s) >= lo2
            and (hi2 is None or 2 * ms(g.opened_s) < hi2)
        ][:corrections]
        hit = None
        for g in later:
            inside = [j for j in g.members if w_lo <= ms(_t(responses[j])) <= w_hi]
            hit = next((j for j in inside if eligible(a.target_index, j) is True), None)
            if hit is not None:
                break
        if hit is None:
            out.append(LenientAllocation(a, a.outcome, False, None))
        else:
            out.append(LenientAllocation(a, "hit", True, hit))
    return out


def _content_fn(
    inter: Interaction, recs: Sequence[ResponseRecord], verdicts: dict[tuple[str, str, int], Any]
) -> Callable[[int, int], Verdict]:
    from interactscope.judges.toolset import toolset_match

    def content(k: int, j: int) -> Verdict:
        tg = inter.targets[k]
        if tg.tools is not None:
            return toolset_match(recs[j].tool_calls, tg.tools)
        v = verdicts.get((inter.id, tg.id, ms(recs[j].t)))
        return None if v is None else v.value

    return content


def lenient_frame(
    run_dir: str | Path,
    *,
    judge: str | None = None,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
    corrections: int = 1,
) -> pd.DataFrame:
    """Strict and lenient outcome of every T1–T7 target of a run folder.

    Text targets are judged with ``judge`` (default: the judge the run was scored with; its
    verdict cache ``scores/verdicts.sqlite`` is reused) on every in-window pair.

    Returns:
        One row per target: ``interaction_id, task, panel, cluster, target_id, outcome_strict,
        outcome_lenient, hit_strict, hit_lenient, scored, corrected``.
    """
    import json

    from interactscope.judges import JudgeItem, VerdictCache, make_judge, run_judge
    from interactscope.runlog import RunFolder

    path = Path(run_dir)
    folder = RunFolder(path)
    if judge is None:
        sp = path / "scores" / "summary.json"
        old = json.loads(sp.read_text(encoding="utf-8")) if sp.exists() else {}
        judge = ((old.get("settings") or {}).get("judge") or {}).get("name") or "lexical"
    m = folder.manifest
    bench = folder.benchmark(probe_media=False, media_errors="record")
    wanted = set(m.interaction_ids) if m.interaction_ids else None
    inters = [
        i
        for i in bench.interactions
        if (wanted is None or i.id in wanted) and not i.task.startswith("T8")
    ]
    by_id: dict[str, list[ResponseRecord]] = {}
    for r in folder.responses():
        by_id.setdefault(r.interaction_id, []).append(r)
    items = []
    for it in inters:
        recs = sorted(by_id.get(it.id, []), key=lambda r: ms(r.t))
        by_id[it.id] = recs
        for tg in it.targets:
            if tg.tools is not None:
                continue
            lo, hi = (ms(x) for x in tg.window(tolerance_s))
            for j in candidate_responses(recs, it.q):
                if lo <= ms(recs[j].t) <= hi:
                    items.append(
                        JudgeItem(
                            it.id, tg.id, recs[j].t, it.query.text, tg.reference, recs[j].text
                        )
                    )
    judge_obj = make_judge(judge)
    cache = None if judge_obj.per_item else VerdictCache(path / "scores" / "verdicts.sqlite")
    try:
        report = run_judge(judge_obj, items, cache) if items else None
    finally:
        if cache is not None:
            cache.close()
    verdicts = report.verdicts if report is not None else {}
    rows = []
    for it in inters:
        recs = by_id.get(it.id, [])
        alloc = allocate_lenient(
            it.targets,
            recs,
            _content_fn(it, recs, verdicts),
            q=it.q,
            tolerance_s=tolerance_s,
            merge_s=merge_s,
            corrections=corrections,
        )
        video = bench.videos.get(it.video_id)
        cluster = str((video.cluster if video else None) or it.video_id)
        for a in alloc:
            rows.append(
                {
                    "interaction_id": it.id,
                    "task": it.task,
                    "panel": it.panel,
                    "cluster": cluster,
                    "target_id": it.targets[a.strict.target_index].id,
                    "outcome_strict": a.strict.outcome,
                    "outcome_lenient": a.outcome,
                    "hit_strict": int(a.strict.hit),
                    "hit_lenient": int(a.hit),
                    "scored": int(a.strict.outcome != "unjudged"),
                    "corrected": int(a.corrected),
                }
            )
    return pd.DataFrame(rows)


def latency_shifted(records: Sequence[ResponseRecord]) -> list[ResponseRecord]:
    """Copies of the records with ``t`` moved to ``t + latency_s`` (records without a latency,
    silent ones included, keep their time). Units: seconds."""
    out = []
    for r in records:
        lat = r.latency_s
        if lat is None or not np.isfinite(lat) or lat <= 0:
            out.append(r)
        else:
            out.append(r.model_copy(update={"t": round(r.t + float(lat), 3)}))
    return out


@dataclass
class BeyondTable:
    display: pd.DataFrame
    raw: pd.DataFrame
    note: str


EXPLICIT = ("T1 joint", "T2", "T3", "T4", "T5", "T6", "T7", "Avg(6)")


def _frames_with(
    t: pd.DataFrame, i: pd.DataFrame, hit: pd.Series
) -> tuple[pd.DataFrame, pd.DataFrame]:
    t2 = t.copy()
    t2["hit"] = hit.to_numpy()
    return t2, i


def beyond_table(
    runs: Sequence[ScoredRun],
    *,
    judge: str | None = None,
    n_resamples: int = B_DEFAULT,
    seed: int = 0,
    confidence: float = 0.95,
) -> BeyondTable:
    """Paper rule vs lenient allocation vs latency-aware timing for each run (T1–T7 metrics),
    paired differences in pp with 95 % cluster-bootstrap intervals."""
    from interactscope.runlog import RunFolder

    opts = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    raws, disp = [], []
    for r in runs:
        tol = float(r.scoring.get("tolerance_s", 2.0))
        merge = float(r.scoring.get("merge_s", 2.0))
        t = r.targets[~r.targets["task"].str.startswith("T8")].copy()
        if t.empty:
            continue
        i = r.interactions
        lf = lenient_frame(r.path, judge=judge, tolerance_s=tol, merge_s=merge)
        key = ["interaction_id", "target_id"]
        merged = t.merge(lf[[*key, "hit_lenient", "corrected"]], on=key, how="left")
        lenient = merged["hit_lenient"].fillna(merged["hit"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pl = paired_table(
                (t, i), _frames_with(t, i, lenient), only=EXPLICIT, beyond=False, **opts
            )
            shifted = latency_shifted(RunFolder(r.path).responses())
            lr = rescore(r.path, tolerance_s=tol, merge_s=merge, judge=judge, records=shifted)
            lt = lr.targets[~lr.targets["task"].str.startswith("T8")]
            pl2 = paired_table((t, i), (lt, lr.interactions), only=EXPLICIT, beyond=False, **opts)
        lat = [x.latency_s for x in shifted if x.latency_s is not None and not x.silent]
        for a, b in zip(pl.itertuples(), pl2.itertuples(), strict=True):
            raws.append(
                {
                    "run": r.label,
                    "metric": a.metric,
                    "paper": a.a,
                    "paper_low": a.a_low,
                    "paper_high": a.a_high,
                    "lenient": a.b,
                    "lenient_low": a.b_low,
                    "lenient_high": a.b_high,
                    "d_lenient": a.diff,
                    "d_lenient_low": a.diff_low,
                    "d_lenient_high": a.diff_high,
                    "latency_aware": b.b,
                    "latency_low": b.b_low,
                    "latency_high": b.b_high,
                    "d_latency": b.diff,
                    "d_latency_low": b.diff_low,
                    "d_latency_high": b.diff_high,
                    "corrections": int(merged["corrected"].fillna(0).sum()),
                    "mean_latency_s": float(np.mean(lat)) if lat else np.nan,
                }
            )
            disp.append(
                {
                    "Model": r.label,
                    "metric": a.metric,
                    "paper rule %": format_interval(a.a, a.a_low, a.a_high),
                    "lenient %": format_interval(a.b, a.b_low, a.b_high),
                    "Δ lenient (pp)": format_interval(a.diff, a.diff_low, a.diff_high, signed=True),
                    "latency-aware %": format_interval(b.b, b.b_low, b.b_high),
                    "Δ latency (pp)": format_interval(b.diff, b.diff_low, b.diff_high, signed=True),
                }
            )
    note = (
        "Lenient: one correction group may follow a premature/wrong first group in the same "
        "region (beyond the paper). Latency-aware: every response moved to t + latency_s, then "
        "scored with the paper's rules. Differences are paired (same resampled clusters)."
    )
    return BeyondTable(pd.DataFrame(disp), pd.DataFrame(raws), note)
