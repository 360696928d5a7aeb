"""Collection loop: kill + resume, failures recorded, controls, baselines, protocols."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from interactscope.core import registry as plugins
from interactscope.streaming.collect import run_collect
from interactscope.streaming.protocol.grid import decision_grid
from interactscope.streaming.runlog import RunFolder
from tests.helpers.demo_points import DEMO_POINTS
from tests.helpers.foundation_fixtures import DEMO, interaction, write_bench


@pytest.fixture
def talkative(tmp_path, monkeypatch):
    monkeypatch.setitem(plugins.table("backends"), "talkative", "tests.helpers.talkative:Talkative")

    def make(**cfg):
        p = tmp_path / "talkative.yaml"
        p.write_text(json.dumps({"backend": "talkative", **cfg}))
        return str(p)

    return make


@pytest.mark.slow
def test_sigkill_midway_then_rerun_gives_exactly_the_grid(tmp_path):
    """Resume: kill -9 during collect, re-run the same command."""
    cfg = tmp_path / "slow-oracle.yaml"
    cfg.write_text("backend: oracle\noptions:\n  simulate_latency_s: 0.05\n")
    run = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "interactscope.cli",
        "collect",
        "--model",
        str(cfg),
        "--bench",
        str(DEMO),
        "--out",
        str(run),
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    resp = run / "responses.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if resp.exists() and resp.read_bytes().count(b"\n") >= 20:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = resp.read_bytes().count(b"\n")
    assert 20 <= n_before < 89, "the kill should land midway"  # 89 demo decision points
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in resp.read_text().splitlines()]
    got = Counter((r["interaction_id"], r["t"]) for r in rows)
    bench_grids = {
        "t1-taxi": decision_grid(0.0, 10.0),
        "t8b-said": decision_grid(5.0, 7.6),
    }
    assert all(v == 1 for v in got.values()), "no duplicates"
    assert Counter(k[0] for k in got) == Counter(DEMO_POINTS)
    for iid, grid in bench_grids.items():
        assert sorted(t for i, t in got if i == iid) == grid


def test_unreadable_video_is_recorded_and_run_goes_on(tmp_path):
    root = write_bench(
        tmp_path / "b",
        [interaction("good"), {**interaction("broken"), "video_id": "bad"}],
        videos=[{"id": "city", "path": "media/city.mp4"}, {"id": "bad", "path": "media/bad.mp4"}],
    )
    (root / "media" / "bad.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 this is not a video")
    s = run_collect(model="oracle", bench=root, out=tmp_path / "run", progress=False)
    recs = RunFolder(tmp_path / "run").responses()
    broken = [r for r in recs if r.interaction_id == "broken"]
    assert len(broken) == 1 and "bad.mp4" in broken[0].error and broken[0].silent is False
    assert len([r for r in recs if r.interaction_id == "good"]) == 9
    assert s.errors == 1 and set(s.failed_interactions) == {"broken"}


def test_adapter_exception_fails_only_that_decision_point(tmp_path, talkative):
    root = write_bench(tmp_path / "b", [interaction("a")])
    s = run_collect(model=talkative(fail_at=2.0), bench=root, out=tmp_path / "r", progress=False)
    recs = {r.t: r for r in RunFolder(tmp_path / "r").responses()}
    assert recs[2.0].error == "ConnectionError: server hung up"
    assert recs[2.0].silent is False  # an infrastructure error is never silence
    assert recs[3.0].error is None and recs[3.0].text == "history=0"
    assert s.errors == 1 and s.non_silent == 8


def test_cooldown_suppresses_points_after_a_response(tmp_path, talkative):
    root = write_bench(tmp_path / "b", [interaction("a")])
    run_collect(
        model=talkative(),
        bench=root,
        out=tmp_path / "r",
        progress=False,
        overrides={"cooldown_s": 3},
    )
    recs = RunFolder(tmp_path / "r").responses()
    # speaks at 0; 1, 2, 3 lie in (0, 3] -> suppressed; speaks at 4; 5, 6, 7 suppressed;
    # 7.6 > 4 + 3 -> speaks
    assert [r.t for r in recs if not r.silent] == [0.0, 4.0, 7.6]
    assert [r.t for r in recs if r.suppressed] == [1.0, 2.0, 3.0, 5.0, 6.0, 7.0]
    assert all(r.silent for r in recs if r.suppressed)


def test_history_shows_last_n_non_silent_responses(tmp_path, talkative):
    root = write_bench(tmp_path / "b", [interaction("a")])
    run_collect(
        model=talkative(),
        bench=root,
        out=tmp_path / "r",
        progress=False,
        overrides={"history.n": 2},
    )
    texts = [r.text for r in RunFolder(tmp_path / "r").responses()]
    assert texts[:4] == ["history=0", "history=1", "history=2", "history=2"]


def test_online_rolling_steps_in_order_and_redoes_partial_interactions(tmp_path, talkative):
    late = [{"id": "k1", "reference": "x", "time_s": 7.0}]
    root = write_bench(
        tmp_path / "b", [interaction("a", q=2.5), interaction("b", q=6.0, targets=late)]
    )
    run = tmp_path / "r"
    run_collect(model=talkative(), bench=root, out=run, progress=False, protocol="online")
    recs = RunFolder(run).responses()
    assert [r.t for r in recs if r.interaction_id == "a"] == [2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 7.6]
    # drop the last two records of "a": a session cannot be resumed mid-interaction
    lines = (run / "responses.jsonl").read_text().splitlines(keepends=True)
    a_lines = [i for i, x in enumerate(lines) if '"interaction_id":"a"' in x]
    keep = [x for i, x in enumerate(lines) if i not in a_lines[-2:]]
    (run / "responses.jsonl").write_text("".join(keep))
    s = run_collect(model=talkative(), bench=root, out=run, progress=False, protocol="online")
    assert s.written == 7  # all of "a" again, none of "b"
    k = [(r.interaction_id, r.t) for r in RunFolder(run).responses()]
    assert len(k) == len(set(k)) == 7 + 3


def test_blind_fire_answers_once_at_q_plus_delay_with_most_frequent_tool(tmp_path):
    run = tmp_path / "r"
    run_collect(model="blind-fire", bench=DEMO, out=run, progress=False)
    spoken = [r for r in RunFolder(run).responses() if not r.silent]
    by_iid = {r.interaction_id: r for r in spoken}
    # at most once per interaction; t8b-said (q = 5) would fire at 8.0, after the 7.6 s clip end:
    # 11 demo interactions - t8b-said = 10
    assert len(spoken) == len(by_iid) == 10 and "t8b-said" not in by_iid
    assert by_iid["t1-cyclist"].t == 5.0  # q = 2 + 3
    assert by_iid["t1-home-chores"].t == 3.0  # q = 0 + 3
    assert by_iid["t2-cut"].tool_calls == []


def test_blind_fire_calls_the_most_frequent_tool_it_is_offered(tmp_path):
    run = tmp_path / "r"
    run_collect(model="blind-fire", bench=DEMO, out=run, progress=False)
    by_iid = {r.interaction_id: r for r in RunFolder(run).responses() if not r.silent}
    # demo catalogue: search_web, take_photo, start_voice_memo are targets once each -> tie
    # broken by name
    assert [c.name for c in by_iid["t1-taxi"].tool_calls] == ["search_web"]
    # household catalogue: add_to_household_action_list is the only target tool (twice)
    assert [c.name for c in by_iid["t1-home-chores"].tool_calls] == ["add_to_household_action_list"]


def test_silent_baseline_never_speaks(tmp_path):
    s = run_collect(model="silent", bench=DEMO, out=tmp_path / "r", progress=False)
    assert s.non_silent == 0 and s.written == 89  # sum(DEMO_POINTS.values())


@pytest.mark.parametrize("backend", ["silent", "oracle", "blind-fire"])
def test_every_baseline_sleeps_simulate_latency_s_per_call(tmp_path, monkeypatch, backend):
    """``simulate_latency_s`` is a BaselineOptions option: one sleep of that length per decision
    point, blind-fire included (it answered at once before)."""
    from interactscope.streaming.adapters import baselines

    slept: list[float] = []
    monkeypatch.setattr(baselines.time, "sleep", slept.append)
    cfg = tmp_path / "slow.yaml"
    cfg.write_text(f"backend: {backend}\noptions:\n  simulate_latency_s: 0.25\n")
    run_collect(model=str(cfg), bench=DEMO, out=tmp_path / "run", progress=False)
    assert slept.count(0.25) == sum(DEMO_POINTS.values())  # 89 (time.sleep is global: others)
