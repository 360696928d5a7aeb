"""Peer scoring variants on hand-made interactions and records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.importers.peer_scoring import PeerScoringError, score_peer
from interactscope.streaming.schema import Interaction, Query, ResponseRecord, Target


def _it(iid: str, targets: list[Target], text: str = "Tell me.", task: str = "T2") -> Interaction:
    return Interaction(
        id=iid, video_id="v", task=task, query=Query(time_s=0.0, text=text), targets=targets
    )


def _r(iid: str, t: float, text: str | None, **kw) -> ResponseRecord:
    return ResponseRecord(interaction_id=iid, t=t, text=text or "", silent=text is None, **kw)


GOAL_A = _it("a", [Target(id="t0", reference="Goal", time_s=10.0)])
GOAL_B = _it("b", [Target(id="t0", reference="Goal", time_s=10.0)])
RECORDS = [
    _r("a", 5.0, "no"),  # first response of a: 5 s before τ
    _r("a", 9.0, "Goal!"),
    _r("a", 11.0, "Goal"),
    _r("b", 8.0, None),  # silent
    _r("b", 9.0, "Goal", error="HTTP 500"),  # infrastructure error: not a response
    _r("b", 9.5, "goal"),  # in time, wrong case
]


def test_streamingbench_first_response_rules():
    time = score_peer("streamingbench-time", [GOAL_A, GOAL_B], RECORDS)
    # a: first response at 5 s, |5 - 10| > 2 -> miss; b: 9.5 s -> time-correct
    assert [r.hit for r in time.results] == [False, True]
    assert (time.hits, time.targets, time.rate) == (1, 2, 0.5)
    assert time.results[1].response_t == 9.5
    ans = score_peer("streamingbench-answer", [GOAL_A, GOAL_B], RECORDS)
    # b's "goal" does not contain "Goal" (case-sensitive substring, as the peer)
    assert [r.hit for r in ans.results] == [False, False] and ans.rate == 0.0


def test_window_any_without_allocation():
    two = _it(
        "c",
        [
            Target(id="t0", reference="one", time_s=10.0),
            Target(id="t1", reference="two", time_s=11.0),
        ],
    )
    recs = [_r("c", 10.5, "one two")]
    s = score_peer("window-any", [GOAL_A, two], RECORDS + recs)
    # a: 9 and 11 lie in [8, 12]; c: the single response at 10.5 serves both targets
    assert [r.hit for r in s.results] == [True, True, True]
    sub = score_peer("window-any-substring", [GOAL_A], RECORDS)
    assert sub.results[0].hit and sub.results[0].response_t == 9.0
    narrow = score_peer("window-any", [two], [_r("c", 11.5, "x")], tolerance_s=1.0)
    # δ = 1: 11.5 is outside [9, 11] and inside [10, 12]
    assert [r.hit for r in narrow.results] == [False, True]


def test_ovo_letter():
    q = "What colour?\nA. red\nB. blue"
    it1 = _it("m1", [Target(id="t0", reference="blue", time_s=3.0)], text=q, task="T8-B")
    it2 = _it("m2", [Target(id="t0", reference="blue", time_s=3.0)], text=q, task="T8-B")
    recs = [_r("m1", 3.0, "B"), _r("m2", 3.0, "A"), _r("m2", 4.0, "B")]
    s = score_peer("ovo-letter", [it1, it2], recs)
    # only the first response counts; timing is not checked
    assert [r.hit for r in s.results] == [True, False]
    bare = _it(
        "m3", [Target(id="t0", reference="blue", time_s=3.0)], text="What colour?", task="T8-B"
    )
    with pytest.raises(PeerScoringError, match="options_in_query=true"):
        score_peer("ovo-letter", [bare], recs)


def test_omnimmi_pa_interval_and_precision():
    it = _it("p", [Target(id="t0", reference="x", interval_s=(20.0, 40.0))], task="T8-A")
    recs = [_r("p", 0.5, "now"), _r("p", 25.0, "now"), _r("p", 50.0, "now")]
    s = score_peer("omnimmi-pa", [it], recs)
    # 0.5 s is dropped (int(t) == 0); the first remaining response (25 s) is inside [20, 40]
    assert s.results[0].hit and s.results[0].response_t == 25.0
    assert s.results[0].precision == 0.5  # 25 inside, 50 outside
    with pytest.raises(PeerScoringError, match="target=interval"):
        score_peer("omnimmi-pa", [GOAL_A], RECORDS)


def test_unknown_variant():
    with pytest.raises(PeerScoringError, match="unknown variant 'nope'"):
        score_peer("nope", [GOAL_A], RECORDS)


def test_cli_score_peer(tmp_path: Path):
    bench = tmp_path / "bench"
    (bench / "v").mkdir(parents=True)
    (bench / "v" / "a.mp4").touch()
    (bench / "benchmark.json").write_text(
        json.dumps({"name": "t", "version": "1", "videos": [{"id": "v", "path": "v/a.mp4"}]})
    )
    (bench / "interactions.jsonl").write_text(
        "\n".join(i.model_dump_json() for i in (GOAL_A, GOAL_B)) + "\n"
    )
    run = tmp_path / "run"
    run.mkdir()
    manifest = {
        "model": "m",
        "backend": "b",
        "protocol": "offline",
        "settings": {},
        "benchmark": {
            "name": "t",
            "version": "1",
            "path": str(bench),
            "fingerprint": "x",
            "n_interactions": 2,
        },
    }
    (run / "run.json").write_text(json.dumps(manifest))
    (run / "responses.jsonl").write_text("\n".join(r.model_dump_json() for r in RECORDS) + "\n")
    res = CliRunner().invoke(app, ["score-peer", str(run), "--variant", "streamingbench-time"])
    assert res.exit_code == 0, res.output
    assert "streamingbench-time: 1/2 targets = 50.0 % (T2 50.0 %)" in res.output
    saved = json.loads((run / "peer-scores" / "streamingbench-time.json").read_text())
    assert saved["hits"] == 1
    res = CliRunner().invoke(app, ["score-peer", str(run), "--variant", "nope"])
    assert res.exit_code == 1 and "unknown variant" in res.output
