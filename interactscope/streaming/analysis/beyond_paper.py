"""Variants beyond the paper, reported beside the paper's numbers, never replacing them.

* **Lenient allocation** (:func:`allocate_lenient`): first-response allocation lets a premature
  or wrong first response consume its target unrecoverably. The paper's critique ("weaknesses")
  suggests a sensitivity analysis in which *one correction* may follow: when the consumed group
  fails as ``premature`` or ``wrong``, the next group opening in the same region is also
  examined, and the target is a hit if that group has an eligible member. Responses within
  ``merge_s`` of the first already belong to its group under the paper's rule (and count there),
  so a correction is a *separate* group, opened more than ``merge_s`` after the first.
* **Output precision**: matched outputs / non-silent outputs (each hit matches exactly one
  response), beside output volume — a row of :data:`interactscope.streaming.scoring.metrics.METRICS`.
* **Latency-aware timing** (:func:`latency_shifted`): each response is moved from its decision
  time t to t + ``latency_s`` (the measured inference latency recorded with it), then scored
  with the paper's rules: what a real-time deployment would deliver.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interactscope.stats import BootstrapOptions
from interactscope.streaming.analysis.compare import paired_table
from interactscope.streaming.analysis.errors import AnalysisError
from interactscope.streaming.analysis.runs import ScoredRun, rescore, run_inputs
from interactscope.streaming.judges import JudgeItem, VerdictCache, make_judge, run_judge
from interactscope.streaming.judges.toolset import toolset_match
from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.scoring.allocation import (
    TargetAllocation,
    allocate_first_response,
    candidate_responses,
    group_responses,
    ms,
)
from interactscope.streaming.scoring.metrics import METRICS
from interactscope.streaming.scoring.results import (
    DEFAULT_MERGE_S,
    DEFAULT_TOLERANCE_S,
    ScoreSummary,
    format_interval,
)
from interactscope.streaming.tasks import ALLOCATION_TASKS

__all__ = [
    "BEYOND_METRICS",
    "BeyondTable",
    "LenientAllocation",
    "allocate_lenient",
    "beyond_table",
    "latency_shifted",
    "lenient_frame",
]

Verdict = bool | None

BEYOND_METRICS: tuple[str, ...] = tuple(
    m.name
    # the built-in table only: reading the plug-ins here would load them at every CLI start
    for m in METRICS
    if m.table == "explicit" and m.numerator == "hits" and m.denominator in ("scored", "targets")
)
"""The explicit-request scores compared under each variant: T1 joint, T2–T7, Avg(6)."""


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
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    merge_s: float = DEFAULT_MERGE_S,
    corrections: int = 1,
) -> list[LenientAllocation]:
    """First-response allocation that lets ``corrections`` later groups of the same
    region follow a ``premature`` or ``wrong`` consumed group (beyond the paper).

    Args: as :func:`interactscope.streaming.scoring.allocate_first_response` (times in seconds; ``eligible``
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
    inter: Interaction, recs: Sequence[ResponseRecord], verdicts: Mapping[tuple[str, str, int], Any]
) -> Callable[[int, int], Verdict]:

    def content(k: int, j: int) -> Verdict:
        tg = inter.targets[k]
        if tg.tools is not None:
            return toolset_match(recs[j].tool_calls, tg.tools)
        v = verdicts.get((inter.id, tg.id, ms(recs[j].t)))
        return None if v is None else v.value

    return content


def _in_window_items(
    inters: Sequence[Interaction], by_id: Mapping[str, list[ResponseRecord]], tolerance_s: float
) -> list[Any]:
    """Every in-window (text target, candidate response) pair, for the judge."""

    items = []
    for it in inters:
        recs = by_id.get(it.id, [])
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
    return items


def _verdicts(path: Path, judge: str, items: list[Any]) -> Mapping[tuple[str, str, int], Any]:

    if not items:
        return {}
    judge_obj = make_judge(judge)
    cache = None if judge_obj.per_item else VerdictCache(path / "scores" / "verdicts.sqlite")
    try:
        return run_judge(judge_obj, items, cache).verdicts
    finally:
        if cache is not None:
            cache.close()


def _lenient_rows(it: Interaction, alloc: list[LenientAllocation], cluster: str) -> list[dict]:
    return [
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
        for a in alloc
    ]


def lenient_frame(
    run_dir: str | Path,
    *,
    judge: str | None = None,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    merge_s: float = DEFAULT_MERGE_S,
    corrections: int = 1,
) -> pd.DataFrame:
    """Strict and lenient outcome of every T1–T7 target of a run folder.

    Text targets are judged with ``judge`` (default: the judge the run was scored with; its
    verdict cache ``scores/verdicts.sqlite`` is reused) on every in-window pair.

    Returns:
        One row per target: ``interaction_id, task, panel, cluster, target_id, outcome_strict,
        outcome_lenient, hit_strict, hit_lenient, scored, corrected``.

    Raises:
        AnalysisError: not a run folder.
    """
    path = Path(run_dir)
    inputs = run_inputs(path, tasks=ALLOCATION_TASKS)
    if judge is None:
        sp = path / "scores" / "summary.json"
        judge = (ScoreSummary.read(sp).settings.judge_name if sp.exists() else None) or "lexical"
    by_id: dict[str, list[ResponseRecord]] = {}
    for r in inputs.records:
        by_id.setdefault(r.interaction_id, []).append(r)
    for recs in by_id.values():
        recs.sort(key=lambda r: ms(r.t))
    verdicts = _verdicts(path, judge, _in_window_items(inputs.interactions, by_id, tolerance_s))
    rows = []
    for it in inputs.interactions:
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
        rows += _lenient_rows(it, alloc, inputs.cluster_of(it))
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
    """The beyond-the-paper comparison: ``display`` (cells), ``raw`` (numbers), ``note``."""

    display: pd.DataFrame
    raw: pd.DataFrame
    note: str


NOTE = (
    "Lenient: one correction group may follow a premature/wrong first group in the same "
    "region (beyond the paper). Latency-aware: every response moved to t + latency_s, then "
    "scored with the paper's rules. Differences are paired (same resampled clusters)."
)


def _variant_tables(
    r: ScoredRun, t: pd.DataFrame, judge: str | None, opts: BootstrapOptions
) -> tuple[pd.DataFrame, pd.DataFrame, int, list[float]]:
    """(paper vs lenient, paper vs latency-aware) paired tables of one run; corrections made;
    the latencies (s) of its non-silent responses."""
    scoring = r.scoring_options()
    i = r.interactions
    lf = lenient_frame(
        r.path, judge=judge, tolerance_s=scoring.tolerance_s, merge_s=scoring.merge_s
    )
    key = ["interaction_id", "target_id"]
    merged = t.merge(lf[[*key, "hit_lenient", "corrected"]], on=key, how="left")
    lenient = t.assign(hit=merged["hit_lenient"].fillna(merged["hit"]).to_numpy())
    only = dict(only=BEYOND_METRICS, beyond=False, options=opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pl = paired_table((t, i), (lenient, i), **only)
        shifted = latency_shifted(run_inputs(r.path).records)
        lr = rescore(
            r.path,
            tolerance_s=scoring.tolerance_s,
            merge_s=scoring.merge_s,
            judge=judge,
            records=shifted,
        )
        lt = lr.targets[lr.targets["task"].isin(ALLOCATION_TASKS)]
        pl2 = paired_table((t, i), (lt, lr.interactions), **only)
    lat = [x.latency_s for x in shifted if x.latency_s is not None and not x.silent]
    return pl, pl2, int(merged["corrected"].fillna(0).sum()), lat


def _beyond_rows(label: str, pl: Any, pl2: Any, corrections: int, lat: list[float]):
    raws, disp = [], []
    for a, b in zip(pl.itertuples(), pl2.itertuples(), strict=True):
        raws.append(
            {
                "run": label,
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
                "corrections": corrections,
                "mean_latency_s": float(np.mean(lat)) if lat else np.nan,
            }
        )
        disp.append(
            {
                "Model": label,
                "metric": a.metric,
                "paper rule %": format_interval(a.a, a.a_low, a.a_high),
                "lenient %": format_interval(a.b, a.b_low, a.b_high),
                "Δ lenient (pp)": format_interval(a.diff, a.diff_low, a.diff_high, signed=True),
                "latency-aware %": format_interval(b.b, b.b_low, b.b_high),
                "Δ latency (pp)": format_interval(b.diff, b.diff_low, b.diff_high, signed=True),
            }
        )
    return raws, disp


def beyond_table(
    runs: Sequence[ScoredRun],
    *,
    judge: str | None = None,
    options: BootstrapOptions | None = None,
    **bootstrap: Any,
) -> BeyondTable:
    """Paper rule vs lenient allocation vs latency-aware timing for each run (T1–T7 metrics),
    paired differences in pp with 95 % cluster-bootstrap intervals.

    Raises:
        AnalysisError: a run folder cannot be opened.
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    raws, disp = [], []
    for r in runs:
        t = r.targets[r.targets["task"].isin(ALLOCATION_TASKS)].copy()
        if t.empty:
            continue
        if r.path is None:
            raise AnalysisError(f"{r.label}: the beyond-the-paper variants need the run folder")
        rw, dp = _beyond_rows(r.label, *_variant_tables(r, t, judge, opts))
        raws += rw
        disp += dp
    return BeyondTable(pd.DataFrame(disp), pd.DataFrame(raws), NOTE)
