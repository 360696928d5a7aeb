"""First-response allocation for T1–T7 (docs/protocol.md, first-response allocation).

All times are seconds; they are compared as integer milliseconds (``round(t * 1000)``), so the
closed windows and ``t <= g + merge_s`` are exact. The content verdicts come from a judge (or the
tool-set check); this module only applies the timing rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from interactscope.streaming.schema import Target
from interactscope.streaming.tasks import OUTCOMES

__all__ = [
    "OUTCOMES",
    "Group",
    "TargetAllocation",
    "allocate_first_response",
    "candidate_responses",
    "group_responses",
    "ms",
]


Verdict = bool | None
EligibleLike = Callable[[int, int], Verdict] | Sequence[Sequence[Verdict]] | Any


def ms(t: float) -> int:
    """Seconds -> integer milliseconds (docs/protocol.md, scoring: times compared after rounding to ms)."""
    return int(round(float(t) * 1000.0))


@dataclass(frozen=True)
class Group:
    """Responses merged into one group (docs/protocol.md, first-response allocation, step 2).

    Attributes:
        opened_s: time of the earliest member, g (s).
        members: indices into the caller's ``responses`` sequence, in time order.
        times_s: the members' times (s, ms-rounded).
    """

    opened_s: float
    members: tuple[int, ...]
    times_s: tuple[float, ...]


@dataclass(frozen=True)
class TargetAllocation:
    """Outcome of one target (docs/protocol.md, first-response allocation, step 4).

    Attributes:
        target_index: index into the caller's ``targets``.
        outcome: ``hit``/``premature``/``wrong``/``late``/``missed``/``unjudged``.
        region_s: [b_{k−1}, b_k) in seconds (``inf`` for the last target).
        window_s: closed window [lo, hi] in seconds.
        group: the consumed group, or ``None`` (missed).
        on_time: some member of the consumed group lies in the window, whatever its content
            (T1's "on-time first response", docs/protocol.md, metrics).
        matched: index (into ``responses``) of the first eligible member of a hit, else ``None``.
    """

    target_index: int
    outcome: str
    region_s: tuple[float, float]
    window_s: tuple[float, float]
    group: Group | None
    on_time: bool
    matched: int | None

    @property
    def hit(self) -> bool:
        return self.outcome == "hit"


def _time_of(r: Any) -> float:
    return float(r) if isinstance(r, (int, float)) else float(r.t)


def _is_candidate(r: Any) -> bool:
    """A non-silent, non-suppressed response without an infrastructure error. Plain numbers
    (times) are candidates, which keeps hand-written tests short."""
    if isinstance(r, (int, float)):
        return True
    if getattr(r, "error", None):
        return False
    if getattr(r, "suppressed", False):
        return False
    return not getattr(r, "silent", False)


def candidate_responses(responses: Sequence[Any], q: float) -> list[int]:
    """Indices of the responses docs/protocol.md, first-response allocation, step 1 keeps (non-silent, t ≥ q; records with ``error``
    set or ``suppressed`` are not responses), sorted by time (stable)."""
    q_ms = ms(q)
    keep = [i for i, r in enumerate(responses) if _is_candidate(r) and ms(_time_of(r)) >= q_ms]
    return sorted(keep, key=lambda i: ms(_time_of(responses[i])))


def group_responses(
    responses: Sequence[Any], order: Sequence[int], merge_s: float = 2.0
) -> list[Group]:
    """docs/protocol.md, first-response allocation, step 2: the earliest ungrouped response opens a group at g; every response with
    t ≤ g + merge_s joins it. ``order``: candidate indices in time order."""
    merge_ms = ms(merge_s)
    groups: list[Group] = []
    cur: list[int] = []
    g = 0
    for i in order:
        t = ms(_time_of(responses[i]))
        if cur and t <= g + merge_ms:
            cur.append(i)
            continue
        if cur:
            groups.append(_make_group(responses, cur))
        cur, g = [i], t
    if cur:
        groups.append(_make_group(responses, cur))
    return groups


def _make_group(responses: Sequence[Any], members: list[int]) -> Group:
    times = tuple(ms(_time_of(responses[i])) / 1000.0 for i in members)
    return Group(opened_s=times[0], members=tuple(members), times_s=times)


def _verdict_fn(eligible: EligibleLike) -> Callable[[int, int], Verdict]:
    if callable(eligible):
        return eligible

    def get(k: int, j: int) -> Verdict:
        v = eligible[k][j]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        return bool(v)

    return get


def allocate_first_response(
    targets: Sequence[Target],
    responses: Sequence[Any],
    eligible: EligibleLike,
    *,
    q: float,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
) -> list[TargetAllocation]:
    """First-response allocation (docs/protocol.md, first-response allocation) for one interaction.

    Args:
        targets: the interaction's targets (time-ordered; they are ordered by anchor τ here).
        responses: response records (objects with ``t`` and optionally ``silent``, ``error``,
            ``suppressed``) or plain times in seconds; any order, silent ones included.
        eligible: content verdicts, ``eligible[k][j]`` (or a callable ``(k, j)``) for target k and
            response j (indices into the arguments as given): ``True``/``False``, or ``None`` for an
            unparseable verdict. Either the content check C or E = 1[t ∈ W]·C may be given: the
            window test is applied here, so both give the same result. Only pairs with the
            response inside the target's window are ever read.
        q: query time (s); responses before q are ignored.
        tolerance_s: δ, window half-width in seconds (``tolerance_s``, default 2).
        merge_s: grouping span in seconds (``merge_s``, default 2).

    Returns:
        One :class:`TargetAllocation` per target, in the order of ``targets``.

    A group with no member inside the window, some before and some after (possible only when
    ``merge_s`` exceeds the window width) is classed ``premature``: the group opened early.
    A target whose consumed group has no eligible member but an in-window member with an
    unparseable verdict is ``unjudged``.
    """
    verdict = _verdict_fn(eligible)
    order = candidate_responses(responses, q)
    groups = group_responses(responses, order, merge_s)
    by_anchor = sorted(range(len(targets)), key=lambda k: ms(targets[k].anchor_s))
    anchors = [ms(targets[k].anchor_s) for k in by_anchor]
    out: dict[int, TargetAllocation] = {}
    for pos, k in enumerate(by_anchor):
        # Region bounds doubled (2·b in ms) so the midpoints b_k = (τ_k + τ_{k+1}) / 2 are exact.
        lo2 = 2 * ms(q) if pos == 0 else anchors[pos - 1] + anchors[pos]
        hi2 = anchors[pos] + anchors[pos + 1] if pos + 1 < len(by_anchor) else None
        w_lo, w_hi = (ms(x) for x in targets[k].window(tolerance_s))
        region = (lo2 / 2000.0, float("inf") if hi2 is None else hi2 / 2000.0)
        window = (w_lo / 1000.0, w_hi / 1000.0)
        consumed = next(
            (
                g
                for g in groups
                if 2 * ms(g.opened_s) >= lo2 and (hi2 is None or 2 * ms(g.opened_s) < hi2)
            ),
            None,
        )
        if consumed is None:
            out[k] = TargetAllocation(k, "missed", region, window, None, False, None)
            continue
        inside = [j for j in consumed.members if w_lo <= ms(_time_of(responses[j])) <= w_hi]
        verdicts = [(j, verdict(k, j)) for j in inside]
        matched = next((j for j, v in verdicts if v is True), None)
        if matched is not None:
            outcome = "hit"
        elif any(v is None for _, v in verdicts):
            outcome = "unjudged"
        elif inside:
            outcome = "wrong"
        elif all(ms(_time_of(responses[j])) > w_hi for j in consumed.members):
            outcome = "late"
        else:
            outcome = "premature"
        out[k] = TargetAllocation(k, outcome, region, window, consumed, bool(inside), matched)
    return [out[k] for k in range(len(targets))]
