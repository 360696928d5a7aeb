"""Peer benchmarks' own scoring rules as named variants, so one run can be scored both by this
project's timing-aware allocation and by the rule the peer publishes.

Each variant is a plain function ``(interaction, its records, tolerance_s) -> per-target
results``. Only non-silent, error-free responses at or after the query time count. Times are
compared after rounding to milliseconds; windows are closed. Sources (the peers' code):

- ``streamingbench-time`` / ``streamingbench-answer``: StreamingBench ``src/data/count.py``:
  the first "yes" (here: the first response) is time-correct if −2 ≤ t − τ ≤ 2; answer-correct if
  additionally ``reference in text`` (case-sensitive substring).
- ``window-any`` / ``window-any-substring``: ±δ without allocation: a target is hit by any
  response inside its window (an interval target: the interval); one response may serve several
  targets; the second also needs ``reference in text`` (case-sensitive).
- ``ovo-letter``: OVO-Bench ``OVOBenchOfflineScore``: ``gt_letter in response`` on the first
  response, no timing; the letter is that of the reference among the query's lettered options.
- ``omnimmi-pa``: OmniMMI ``evaluate.py``: responses in the first second after the query are
  dropped (``int(t) != 0``); hit if the first remaining response lies in the event interval;
  no content check. ``precision`` (share of responses inside) is reported per target.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel

from interactscope.core.errors import InteractScopeError
from interactscope.streaming.schema import Interaction, ResponseRecord, Target


class PeerScoringError(InteractScopeError, ValueError):
    """The variant cannot score this benchmark (one line naming the variant, interaction and the
    import setting that fixes it)."""


class PeerTargetResult(BaseModel):
    """One target under one peer variant."""

    interaction_id: str
    target_id: str
    hit: bool
    response_t: float | None
    """Time (s) of the response the rule looked at; None when there was none."""
    response_text: str | None
    precision: float | None = None


class PeerScore(BaseModel):
    """``hits / targets`` of a run under one variant (``rate`` is None with no targets)."""

    variant: str
    tolerance_s: float
    targets: int
    hits: int
    rate: float | None
    per_task: dict[str, float | None]
    results: list[PeerTargetResult]


def responses(interaction: Interaction, records: list[ResponseRecord]) -> list[ResponseRecord]:
    """The interaction's non-silent, error-free responses at or after q, by time."""
    q = round(interaction.q, 3)
    out = [
        r
        for r in records
        if r.interaction_id == interaction.id
        and not r.silent
        and not r.suppressed
        and r.error is None
        and round(r.t, 3) >= q
    ]
    return sorted(out, key=lambda r: r.t)


def in_window(t: float, target: Target, tolerance_s: float) -> bool:
    """t inside the target's closed window (τ ± δ, or its interval), in milliseconds."""
    a, b = target.window(tolerance_s)
    return round(a, 3) <= round(t, 3) <= round(b, 3)


def _result(
    it: Interaction, tg: Target, hit: bool, r: ResponseRecord | None, **kw
) -> PeerTargetResult:
    return PeerTargetResult(
        interaction_id=it.id,
        target_id=tg.id,
        hit=hit,
        response_t=None if r is None else r.t,
        response_text=None if r is None else r.text,
        **kw,
    )


def _first(check_text: bool) -> Callable:
    def score(it: Interaction, recs: list[ResponseRecord], tol: float) -> list[PeerTargetResult]:
        resp = responses(it, recs)
        first = resp[0] if resp else None
        out = []
        for tg in it.targets:
            hit = first is not None and in_window(first.t, tg, tol)
            if check_text:
                hit = hit and tg.reference in first.text
            out.append(_result(it, tg, hit, first))
        return out

    return score


def _window_any(check_text: bool) -> Callable:
    def score(it: Interaction, recs: list[ResponseRecord], tol: float) -> list[PeerTargetResult]:
        resp = responses(it, recs)
        out = []
        for tg in it.targets:
            inside = [r for r in resp if in_window(r.t, tg, tol)]
            if check_text:
                inside = [r for r in inside if tg.reference in r.text]
            out.append(_result(it, tg, bool(inside), inside[0] if inside else None))
        return out

    return score


def option_letter(query_text: str, reference: str) -> str | None:
    """The letter of the line ``X. <reference>`` in the query text, else None."""
    for m in re.finditer(r"^([A-Z])\. (.*)$", query_text, flags=re.M):
        if m.group(2).strip() == reference.strip():
            return m.group(1)
    return None


def score_ovo_letter(
    it: Interaction, recs: list[ResponseRecord], tol: float
) -> list[PeerTargetResult]:
    """First response contains the option letter (substring, as the peer); no timing."""
    resp = responses(it, recs)
    first = resp[0] if resp else None
    out = []
    for tg in it.targets:
        letter = option_letter(it.query.text, tg.reference)
        if letter is None:
            raise PeerScoringError(
                f"variant ovo-letter: interaction {it.id}: no lettered option equals the "
                "reference; import with --set options_in_query=true"
            )
        out.append(_result(it, tg, first is not None and letter in first.text, first))
    return out


def score_omnimmi_pa(
    it: Interaction, recs: list[ResponseRecord], tol: float
) -> list[PeerTargetResult]:
    """First response with int(t − q) ≠ 0 inside the interval; precision over those responses."""
    resp = [r for r in responses(it, recs) if int(r.t - it.q) != 0]
    out = []
    for tg in it.targets:
        if tg.interval_s is None:
            raise PeerScoringError(
                f"variant omnimmi-pa: interaction {it.id}: target {tg.id} has no interval; "
                "import with --set target=interval"
            )
        first = resp[0] if resp else None
        inside = sum(in_window(r.t, tg, tol) for r in resp)
        out.append(
            _result(
                it,
                tg,
                first is not None and in_window(first.t, tg, tol),
                first,
                precision=inside / len(resp) if resp else 0.0,
            )
        )
    return out


VARIANTS: dict[str, tuple[Callable, str]] = {
    "streamingbench-time": (_first(False), "first response within ±δ of τ (StreamingBench time)"),
    "streamingbench-answer": (
        _first(True),
        "first response within ±δ of τ and containing the reference (StreamingBench answer)",
    ),
    "window-any": (_window_any(False), "any response within the window, no allocation"),
    "window-any-substring": (
        _window_any(True),
        "any response within the window containing the reference, no allocation",
    ),
    "ovo-letter": (
        score_ovo_letter,
        "first response contains the option letter, no timing (OVO-Bench)",
    ),
    "omnimmi-pa": (score_omnimmi_pa, "first response after 1 s inside the interval (OmniMMI PA)"),
}


def score_peer(
    variant: str,
    interactions: list[Interaction],
    records: list[ResponseRecord],
    tolerance_s: float = 2.0,
) -> PeerScore:
    """Score ``records`` against ``interactions`` under ``variant``.

    Args:
        tolerance_s: δ (s) of the ±δ windows (the peers' 2 s by default).

    Returns:
        ``PeerScore`` with one result per target, hits / targets overall and per task.

    Raises:
        PeerScoringError: unknown variant, or a benchmark the variant cannot score.
    """
    if variant not in VARIANTS:
        raise PeerScoringError(f"unknown variant {variant!r}; choose one of: {', '.join(VARIANTS)}")
    fn = VARIANTS[variant][0]
    by_id: dict[str, list[ResponseRecord]] = {}
    for r in records:
        by_id.setdefault(r.interaction_id, []).append(r)
    results: list[PeerTargetResult] = []
    per_task_hits: dict[str, list[int]] = {}
    for it in interactions:
        res = fn(it, by_id.get(it.id, []), tolerance_s)
        results.extend(res)
        acc = per_task_hits.setdefault(it.task, [0, 0])
        acc[0] += sum(r.hit for r in res)
        acc[1] += len(res)
    hits = sum(r.hit for r in results)
    return PeerScore(
        variant=variant,
        tolerance_s=tolerance_s,
        targets=len(results),
        hits=hits,
        rate=hits / len(results) if results else None,
        per_task={k: (h / n if n else None) for k, (h, n) in sorted(per_task_hits.items())},
        results=results,
    )
