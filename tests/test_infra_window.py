"""The ``infra_error_rule`` setting (docs/protocol.md, where the paper is silent): a target whose
whole ±δ window failed, and that no response consumed before its window, cannot have been hit,
so under ``window`` (default) it is ``infra_error``; ``region`` keeps the rule before (only a
whole failed region). Values worked out by hand.

Targets τ = 3 and τ = 9, q = 0, δ = 2: regions [0, 6) and [6, ∞), windows [1, 5] and [7, 11]."""

from __future__ import annotations

import pytest

from interactscope.streaming.judges import make_judge
from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.scoring.core import infra_outcome, score_interaction
from interactscope.streaming.scoring.results import ScoringOptions
from interactscope.streaming.scoring.run import score_collection


def _rec(t: float, *, error: bool = False, text: str | None = None) -> ResponseRecord:
    if error:
        return ResponseRecord(interaction_id="i", t=t, silent=False, error="HTTP 503")
    if text is not None:
        return ResponseRecord(interaction_id="i", t=t, silent=False, text=text)
    return ResponseRecord(interaction_id="i", t=t, silent=True, text="<SILENT>")


def _inter() -> Interaction:
    return Interaction(
        id="i",
        video_id="v",
        task="T2",
        query={"time_s": 0.0, "text": "r"},
        targets=[
            {"id": "a", "time_s": 3.0, "reference": "x"},
            {"id": "b", "time_s": 9.0, "reference": "y"},
        ],
    )


def _yes(target_id: str, t_ms: int) -> tuple[bool, str]:
    return True, "yes"


def _outcomes(recs: list[ResponseRecord], rule: str | None) -> list[str]:
    kw = {} if rule is None else {"infra_rule": rule}
    s = score_interaction(_inter(), recs, _yes, cluster="c", **kw)
    return [r["outcome"] for r in s.targets]


def _window_failed() -> list[ResponseRecord]:
    # 0 s answered silently (the region [0, 6) is not all errors), 1..5 s (the window) failed
    return [_rec(t, error=1 <= t <= 5) for t in range(13)]


def test_a_failed_window_is_infra_error_by_default_and_missed_under_region():
    recs = _window_failed()
    assert _outcomes(recs, None) == ["infra_error", "missed"]
    assert _outcomes(recs, "window") == ["infra_error", "missed"]
    assert _outcomes(recs, "region") == ["missed", "missed"]


def test_late_after_a_failed_window_is_infra_error_under_window_only():
    # a response at 5.5 s: after the window [1, 5], inside the region [0, 6) -> consumed late
    recs = sorted(_window_failed() + [_rec(5.5, text="x")], key=lambda r: r.t)
    assert _outcomes(recs, "window") == ["infra_error", "missed"]
    assert _outcomes(recs, "region") == ["late", "missed"]


def test_a_response_before_the_window_stays_premature():
    # the response at 0 s opens a group before the window: the model answered too early
    recs = [_rec(0, text="x")] + _window_failed()[1:]
    assert _outcomes(recs, "window") == ["premature", "missed"]
    assert _outcomes(recs, "region") == ["premature", "missed"]


def test_one_healthy_point_in_the_window_keeps_the_miss():
    recs = [_rec(t, error=1 <= t <= 4) for t in range(13)]  # 5 s answered silently
    assert _outcomes(recs, "window") == ["missed", "missed"]


def test_window_end_is_closed():
    # window of b is [7, 11]: 7..11 failed, 12 healthy (outside) -> still infra_error
    recs = [_rec(t, error=7 <= t <= 11) for t in range(13)]
    assert _outcomes(recs, "window") == ["missed", "infra_error"]
    assert _outcomes(recs, "region") == ["missed", "missed"]


def test_unknown_rule_is_one_line():
    with pytest.raises(ValueError, match="infra_error_rule"):
        infra_outcome("missed", [], window_s=(0.0, 1.0), rule="nope")
    with pytest.raises(ValueError, match="infra_error_rule"):
        ScoringOptions.of(infra_error_rule="nope")


def test_denominator_and_recorded_setting():
    recs = _window_failed()
    judge = make_judge("lexical")
    for rule, scored, recorded in (("window", 1, "window"), ("region", 2, "region")):
        res = score_collection(
            [_inter()], recs, {"v": "v"}, judge, options=ScoringOptions(infra_error_rule=rule)
        )
        assert int(res.interactions["scored"].sum()) == scored
        assert res.summary.settings.model_extra["infra_error_rule"] == recorded
    # a clean run does not record the default: its summary.json keeps its bytes
    clean = [_rec(t) for t in range(13)]
    res = score_collection([_inter()], clean, {"v": "v"}, judge)
    assert "infra_error_rule" not in (res.summary.settings.model_extra or {})
