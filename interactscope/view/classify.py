"""What allocation (T1–T7) or matching (T8) made of each record of one interaction.

``scores/targets.csv`` holds one row per target (its outcome and the response it consumed or
matched), not one per response. The per-response classes are re-derived here with the public
scoring functions, feeding them the verdicts the score files imply: the consumed/matched response
of a hit is the only eligible one. That reproduces every target outcome exactly (consumption
depends on timing only) and says, for every other response, which group it joined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from interactscope.streaming.judges.toolset import toolset_match
from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.scoring import allocate_first_response, match_order_preserving
from interactscope.view.model import Mark

__all__ = ["classify_interaction"]

Rows = Mapping[str, Mapping[str, Any]]


def _ms(t: Any) -> int | None:
    try:
        x = float(t)
    except (TypeError, ValueError):
        return None
    return None if x != x else int(round(x * 1000))


def _is_candidate(r: ResponseRecord, q: float) -> bool:
    # Same record policy as scoring: errors and suppressed records are not responses.
    return not (r.error or r.suppressed or r.silent) and _ms(r.t) >= _ms(q)


def _base_mark(r: ResponseRecord, cls: str) -> Mark:
    return Mark(
        t=r.t,
        cls=cls,  # type: ignore[arg-type]
        text=r.text,
        tools=[c.model_dump(mode="json") for c in r.tool_calls],
        latency_s=r.latency_s,
        prompt_tokens=r.prompt_tokens,
        completion_tokens=r.completion_tokens,
        error=r.error,
        parse_error=r.parse_error,
    )


def _hit_time(row: Mapping[str, Any] | None) -> int | None:
    if not row or row.get("outcome") != "hit":
        return None
    return _ms(row.get("response_t"))


def _verdict_label(inter: Interaction, k: int, r: ResponseRecord, rows: Rows) -> str:
    tgt = inter.targets[k]
    if tgt.tools is not None:
        return "yes (tool set)" if toolset_match(r.tool_calls, tgt.tools) else "no (tool set)"
    row = rows.get(tgt.id) or {}
    if _ms(row.get("response_t")) == _ms(r.t) and row.get("verdict"):
        return str(row["verdict"])
    return ""


def _allocate(inter: Interaction, recs: Sequence[ResponseRecord], rows: Rows, tol: float,
              merge: float) -> tuple[dict[int, tuple[int, str, bool]], dict[str, Any]]:  # fmt: skip
    hit_t = [_hit_time(rows.get(t.id)) for t in inter.targets]
    unjudged = [(rows.get(t.id) or {}).get("outcome") == "unjudged" for t in inter.targets]

    def verdict(k: int, j: int) -> bool | None:
        if unjudged[k]:
            return None
        return hit_t[k] is not None and _ms(recs[j].t) == hit_t[k]

    allocs = allocate_first_response(
        inter.targets, recs, verdict, q=inter.q, tolerance_s=tol, merge_s=merge
    )
    owner: dict[int, tuple[int, str, bool]] = {}
    regions: dict[str, Any] = {}
    for a in allocs:
        hi = None if a.region_s[1] == float("inf") else a.region_s[1]
        regions[inter.targets[a.target_index].id] = (a.region_s[0], hi)
        for j in a.group.members if a.group else ():
            owner[j] = (a.target_index, a.outcome, j == a.matched)
    return owner, regions


def _match(inter: Interaction, recs: Sequence[ResponseRecord], rows: Rows) -> dict[int, tuple[int, str, bool]]:  # fmt: skip
    order = [j for j, r in enumerate(recs) if _is_candidate(r, inter.q)]
    hit_t = [_hit_time(rows.get(t.id)) for t in inter.targets]
    matrix = [[h is not None and _ms(recs[j].t) == h for j in order] for h in hit_t]
    result = match_order_preserving(matrix) if order else None
    pairs = result.pairs if result else []
    return {order[j]: (k, "hit", True) for k, j in pairs}


def classify_interaction(
    inter: Interaction,
    records: Sequence[ResponseRecord],
    rows: Rows | None,
    *,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
) -> tuple[list[Mark], dict[str, str], dict[str, Any]]:
    """Marks for one run's records of ``inter``.

    Args:
        records: every record of the interaction (silent ones are dropped: they are grid points,
            not marks), sorted by t.
        rows: ``target_id -> targets.csv row`` (outcome, response_t, verdict), or ``None`` for an
            unscored run (every mark is then ``unscored``).
        tolerance_s, merge_s: the scoring settings of the run (s).

    Returns:
        ``(marks, outcomes, regions)``: marks in time order; ``outcomes`` target id -> outcome
        (from the score files); ``regions`` target id -> [b_{k-1}, b_k) (``None`` = +inf; T1–T7
        only).
    """
    recs = list(records)
    regions: dict[str, Any] = {}
    owner: dict[int, tuple[int, str, bool]] = {}
    if rows is not None:
        if inter.task.startswith("T8"):
            owner = _match(inter, recs, rows)
        else:
            owner, regions = _allocate(inter, recs, rows, tolerance_s, merge_s)
    marks: list[Mark] = []
    for j, r in enumerate(recs):
        if r.error:
            marks.append(_base_mark(r, "error"))
        elif r.suppressed:
            marks.append(_base_mark(r, "suppressed"))
        elif r.silent:
            continue
        elif _ms(r.t) < _ms(inter.q):
            marks.append(_base_mark(r, "ignored"))
        elif rows is None:
            marks.append(_base_mark(r, "unscored"))
        elif j in owner:
            k, outcome, matched = owner[j]
            # the target's final outcome wins where the infra rule overrode the group's timing
            # (docs/protocol.md, infra_error_rule), as in scores/responses.csv
            final = str((rows.get(inter.targets[k].id) or {}).get("outcome", ""))
            m = _base_mark(r, "infra_error" if final == "infra_error" else outcome)
            m.target, m.matched = inter.targets[k].id, matched
            m.verdict = _verdict_label(inter, k, r, rows)
            marks.append(m)
        else:
            marks.append(_base_mark(r, "unmatched"))
    outcomes = {t.id: str((rows or {}).get(t.id, {}).get("outcome", "")) for t in inter.targets}
    return marks, outcomes, regions
