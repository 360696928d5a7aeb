"""Per-interaction scoring: which pairs need a content verdict, and the target outcomes (docs/protocol.md, scoring).

Record handling (setting ``records``, recorded in ``summary.json``):

* a record with ``error`` set is an infrastructure error: not a response and not silence; it is
  left out of allocation/matching and counted under ``health.infrastructure_errors``; a target
  that no answer could have served gets the outcome ``infra_error``: excluded from numerator
  and denominator like ``unjudged`` (:func:`infra_outcome`, setting ``infra_error_rule``): under
  ``window`` (default) a ``missed`` or ``late`` target (no response consumed it before its
  window) whose every decision point inside its closed window (at least one) is an error, or a
  ``missed`` one whose whole region is; under ``region`` (the rule before) only a ``missed``
  target whose whole region is; under matching (T8) a ``missed`` target whose window is; always
  every target of an interaction whose records are all errors (an unreadable video leaves one
  error record at q);
* a ``suppressed`` record (cooldown control) is silent;
* a non-silent record before q cannot exist on the decision grid; if one does it is ignored.

Content check C (docs/protocol.md, scoring): a target with ``tools`` (T1) is checked by the exact tool-name set
(:func:`~interactscope.streaming.judges.toolset.toolset_match`); every other target by the text judge's
verdict on (request, reference, candidate = the record's raw text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from interactscope.streaming.judges.toolset import tool_names, toolset_match
from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.scoring.allocation import (
    allocate_first_response,
    candidate_responses,
    ms,
)
from interactscope.streaming.scoring.matching import match_with_unjudged
from interactscope.streaming.scoring.responses import Owner, ResponseRow, response_rows
from interactscope.streaming.scoring.results import DEFAULT_MERGE_S, DEFAULT_TOLERANCE_S
from interactscope.streaming.tasks import UNSCORED_OUTCOMES, task_spec

__all__ = [
    "INFRA_ERROR_RULES",
    "InteractionScore",
    "infra_outcome",
    "pairs_that_matter",
    "score_interaction",
    "uses_matching",
]

Verdict = bool | None
TextVerdicts = Callable[[str, int], tuple[Verdict, str]]
"""(target id, response time in ms) -> (verdict, label) for text-judged pairs."""


def uses_matching(task: str) -> bool:
    """Whether ``task`` is scored by order-preserving matching (T8) rather than first-response
    allocation (T1–T7): its :class:`~interactscope.streaming.tasks.TaskSpec` ``scoring_rule``."""
    return task_spec(task).scoring_rule == "matching"


def _in_window(t: float, window: tuple[float, float]) -> bool:
    return ms(window[0]) <= ms(t) <= ms(window[1])


INFRA_ERROR_RULES = ("window", "region")
"""Values of the scoring setting ``infra_error_rule`` (docs/protocol.md, where the paper is
silent): ``window`` (default) or ``region`` (the rule before; see :func:`infra_outcome`)."""


def _all_errors(records: Sequence[ResponseRecord], lo2: int, hi2: int | None) -> bool:
    """Whether the records with 2·ms(t) in [lo2, hi2) (``hi2`` None: no upper end) are at least
    one and all infrastructure errors (bounds doubled so half-millisecond region ends are exact)."""
    inside = [r for r in records if 2 * ms(r.t) >= lo2 and (hi2 is None or 2 * ms(r.t) < hi2)]
    return bool(inside) and all(r.error for r in inside)


def _span_failed(
    records: Sequence[ResponseRecord], span_s: tuple[float, float], closed: bool
) -> bool:
    """Whether the region [lo, hi) or closed window [lo, hi] (s; ``hi`` may be inf) holds at
    least one record and only error records."""
    lo2 = int(round(span_s[0] * 2000))
    hi = span_s[1]
    hi2 = None if hi == float("inf") else int(round(hi * 2000)) + (1 if closed else 0)
    return _all_errors(records, lo2, hi2)


def infra_outcome(
    outcome: str,
    records: Sequence[ResponseRecord],
    *,
    window_s: tuple[float, float],
    region_s: tuple[float, float] | None = None,
    rule: str = "window",
) -> str:
    """A target's outcome with the infrastructure-error rule applied: ``infra_error`` when no
    answer could have served the target, else ``outcome`` unchanged.

    Args:
        outcome: the allocation (or matching) outcome.
        records: every record of the interaction (error ones included).
        window_s: the target's closed window [τ − δ, τ + δ] (s).
        region_s: its allocation region [b_{k−1}, b_k) (s; ``inf`` for the last target);
            ``None`` under order-preserving matching (T8), where the window is what counts.
        rule: ``window`` — a ``missed``/``late`` target (no response consumed it before its
            window) whose window holds only error records, or a ``missed`` one whose region
            does; ``region`` — only a ``missed`` target whose region holds only errors.
            Under both, every target of an interaction whose records are all errors (an
            unreadable video has a single error record at q, so its later spans are empty).

    Raises:
        ValueError: an unknown ``rule``.
    """
    if rule not in INFRA_ERROR_RULES:
        raise ValueError(f"infra_error_rule {rule!r}: valid: {', '.join(INFRA_ERROR_RULES)}")
    open_ = ("missed", "late") if rule == "window" else ("missed",)
    if outcome not in open_:
        return outcome
    if records and all(r.error for r in records):
        return "infra_error"
    if region_s is None:
        return "infra_error" if _span_failed(records, window_s, closed=True) else outcome
    if outcome == "missed" and _span_failed(records, region_s, closed=False):
        return "infra_error"
    if rule == "window" and _span_failed(records, window_s, closed=True):
        return "infra_error"
    return outcome


def pairs_that_matter(
    interaction: Interaction,
    records: Sequence[ResponseRecord],
    *,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
) -> list[tuple[int, int]]:
    """(target index, record index) pairs whose content verdict can change the score.

    T1–T7: the in-window members of the group each target consumes (consumption does not depend
    on content, so responses in later groups of a region are never judged). T8: every candidate
    response inside a target's window.
    """
    targets = interaction.targets
    if uses_matching(interaction.task):
        order = candidate_responses(records, interaction.q)
        return [
            (k, j)
            for k, tgt in enumerate(targets)
            for j in order
            if _in_window(records[j].t, tgt.window(tolerance_s))
        ]
    allocs = allocate_first_response(
        targets,
        records,
        lambda k, j: False,
        q=interaction.q,
        tolerance_s=tolerance_s,
        merge_s=merge_s,
    )
    out = []
    for a in allocs:
        if a.group is None:
            continue
        out.extend(
            (a.target_index, j) for j in a.group.members if _in_window(records[j].t, a.window_s)
        )
    return out


@dataclass
class InteractionScore:
    """Rows for ``targets.csv``, one row for ``interactions.csv``, and the rows of
    ``responses.csv`` (one per record)."""

    targets: list[dict[str, Any]] = field(default_factory=list)
    interaction: dict[str, Any] = field(default_factory=dict)
    responses: list[ResponseRow] = field(default_factory=list)


Judged = dict[tuple[int, int], tuple[Verdict, str]]


def _content_check(
    interaction: Interaction, records: Sequence[ResponseRecord], text_verdict: TextVerdicts
) -> tuple[Callable[[int, int], tuple[Verdict, str]], Judged]:
    """(target index, record index) -> (verdict, label): the tool-set check for targets with
    ``tools``, else the text judge's verdict; each pair evaluated once. Also returns the dict
    of every pair evaluated so far (filled as the function is called)."""
    targets = interaction.targets
    cache: dict[tuple[int, int], tuple[Verdict, str]] = {}

    def content(k: int, j: int) -> tuple[Verdict, str]:
        if (k, j) not in cache:
            tgt, rec = targets[k], records[j]
            if tgt.tools is not None:
                ok = toolset_match(rec.tool_calls, tgt.tools)
                cache[(k, j)] = (ok, "yes" if ok else "no")
            else:
                cache[(k, j)] = text_verdict(tgt.id, ms(rec.t))
        return cache[(k, j)]

    return content, cache


def _matched_rows(
    interaction: Interaction,
    records: Sequence[ResponseRecord],
    content: Callable[[int, int], tuple[Verdict, str]],
    base: dict[str, Any],
    tolerance_s: float,
) -> tuple[list[dict[str, Any]], int | None, dict[int, Owner]]:
    """Order-preserving matching: target rows, ``complete`` (1/0) for sequence tasks, and the
    owner of each matched record."""
    targets = interaction.targets
    order = candidate_responses(records, interaction.q)
    matrix: list[list[Verdict]] = [
        [
            content(k, j)[0] if _in_window(records[j].t, tgt.window(tolerance_s)) else False
            for j in order
        ]
        for k, tgt in enumerate(targets)
    ]
    result = match_with_unjudged(matrix)
    matched = {k: order[j] for k, j in result.pairs}
    excluded = set(result.excluded)
    rows = []
    for k, tgt in enumerate(targets):
        j = matched.get(k)
        outcome = "unjudged" if k in excluded else ("hit" if j is not None else "missed")
        outcome = infra_outcome(outcome, records, window_s=tgt.window(tolerance_s))
        rows.append(_row(base, k, tgt, tolerance_s, outcome, None, None, j, records, content))
    complete = None
    infra = any(r["outcome"] == "infra_error" for r in rows)
    if task_spec(interaction.task).has_sequences and not excluded and not infra:
        complete = int(result.count == len(targets))
    owners = {j: (k, "hit", True) for k, j in matched.items()}
    return rows, complete, owners


def _allocated_rows(
    interaction: Interaction,
    records: Sequence[ResponseRecord],
    content: Callable[[int, int], tuple[Verdict, str]],
    base: dict[str, Any],
    tolerance_s: float,
    merge_s: float,
    infra_rule: str = "window",
) -> tuple[list[dict[str, Any]], dict[int, Owner]]:
    """First-response allocation: one row per target, and the owner of each member of a
    consumed group."""
    targets = interaction.targets
    allocs = allocate_first_response(
        targets,
        records,
        lambda k, j: content(k, j)[0],
        q=interaction.q,
        tolerance_s=tolerance_s,
        merge_s=merge_s,
    )
    rows = []
    owners: dict[int, Owner] = {}
    for a in allocs:
        for m in a.group.members if a.group is not None else ():
            owners[m] = (a.target_index, a.outcome, m == a.matched)
        j: int | None = a.matched
        if j is None and a.group is not None:
            inside = [m for m in a.group.members if _in_window(records[m].t, a.window_s)]
            j = inside[0] if inside else a.group.members[0]
        outcome = infra_outcome(
            a.outcome, records, window_s=a.window_s, region_s=a.region_s, rule=infra_rule
        )
        rows.append(
            _row(
                base,
                a.target_index,
                targets[a.target_index],
                tolerance_s,
                outcome,
                None if outcome == "infra_error" else a.on_time,
                a.group,
                j,
                records,
                content,
            )
        )
    return rows, owners


def _interaction_row(
    interaction: Interaction,
    records: Sequence[ResponseRecord],
    rows: list[dict[str, Any]],
    base: dict[str, Any],
    complete: int | None,
) -> dict[str, Any]:
    """Counts of one interaction: targets, scored, hits, records, responses, probed span."""
    responses = [r for r in records if not r.error and not r.suppressed and not r.silent]
    # Error records are not probed: an interaction whose records all failed adds 0 minutes.
    times = [r.t for r in records if not r.error]
    probed_s = max(0.0, max(times) - interaction.q) if times else 0.0
    return {
        **base,
        "targets": len(interaction.targets),
        "scored": sum(1 for r in rows if r["outcome"] not in UNSCORED_OUTCOMES),
        "hits": sum(1 for r in rows if r["outcome"] == "hit"),
        "records": len(records),
        "responses": len(responses),
        "probed_s": round(probed_s, 3),
        "infrastructure_errors": sum(1 for r in records if r.error),
        "suppressed": sum(1 for r in records if r.suppressed),
        "parse_errors": sum(1 for r in records if r.parse_error),
        "complete": complete,
    }


def score_interaction(
    interaction: Interaction,
    records: Sequence[ResponseRecord],
    text_verdict: TextVerdicts,
    *,
    cluster: str,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    merge_s: float = DEFAULT_MERGE_S,
    infra_rule: str = "window",
) -> InteractionScore:
    """Score one interaction: outcome per target (first-response allocation, or order-preserving
    matching for the assistance tasks) plus the volume figures. Times in seconds.

    Args:
        records: every record of the interaction in this run (silent and error ones included).
        text_verdict: lookup of text-judge verdicts for the pairs of :func:`pairs_that_matter`.
        cluster: the video's bootstrap cluster.
        infra_rule: the ``infra_error_rule`` setting (:func:`infra_outcome`).
    """
    content, judged = _content_check(interaction, records, text_verdict)
    base = {
        "interaction_id": interaction.id,
        "task": interaction.task,
        "panel": interaction.panel,
        "video_id": interaction.video_id,
        "cluster": cluster,
    }
    complete: int | None = None
    if uses_matching(interaction.task):
        rows, complete, owners = _matched_rows(interaction, records, content, base, tolerance_s)
    else:
        rows, owners = _allocated_rows(
            interaction, records, content, base, tolerance_s, merge_s, infra_rule
        )
    summary = _interaction_row(interaction, records, rows, base, complete)
    responses = response_rows(interaction, records, owners, judged, merge_s=merge_s)
    return InteractionScore(targets=rows, interaction=summary, responses=responses)


def _row(
    base: dict[str, Any],
    k: int,
    tgt: Any,
    tolerance_s: float,
    outcome: str,
    on_time: bool | None,
    group: Any,
    j: int | None,
    records: Sequence[ResponseRecord],
    content: Callable[[int, int], tuple[Verdict, str]],
) -> dict[str, Any]:
    lo, hi = tgt.window(tolerance_s)
    rec = records[j] if j is not None else None
    in_window = rec is not None and _in_window(rec.t, (lo, hi))
    return {
        **base,
        "target_id": tgt.id,
        "target_index": k,
        "evidence": tgt.evidence,
        "anchor_s": round(tgt.anchor_s, 3),
        "window_lo_s": round(lo, 3),
        "window_hi_s": round(hi, 3),
        "outcome": outcome,
        "hit": int(outcome == "hit"),
        "scored": int(outcome not in UNSCORED_OUTCOMES),
        "on_time": None if on_time is None else int(on_time),
        "group_open_s": None if group is None else group.opened_s,
        "group_size": None if group is None else len(group.members),
        "response_t": None if rec is None else rec.t,
        "response_text": "" if rec is None else rec.text,
        "response_tools": "" if rec is None else " ".join(sorted(tool_names(rec.tool_calls))),
        "verdict": content(k, j)[1] if (rec is not None and in_window) else "",
    }
