"""Environment columns honour infrastructure errors and the EgoBench cleaning rule (issue 24,
items 1 and 2). Values worked out by hand.

The bench: one T1 interaction on city_speech.mp4 (7.6 s, q = 0: decision points 0, 1, ..., 7,
7.6) against the household environment; δ = 2 s, merge 2 s. A scripted adapter emits the calls
its config gives at each time and raises (an infrastructure error on that record) at the times
listed under ``fail``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.core import registry as plugins
from interactscope.streaming.adapters.base import Adapter, AdapterOutput
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.collect import run_collect
from interactscope.streaming.environments.scores import score_environments, totals
from interactscope.streaming.runlog import RunFolder
from interactscope.streaming.schema import ToolCall
from tests.helpers.env_bench import ADD, GET, TARGET, U1, WASH, env_bench

GRID = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.6]
GAME = {**WASH, "name": "Board Game Box"}


class Failing(Adapter):
    """``calls``: {"t": [call, ...]}; ``fail``: times whose request raises."""

    free_options = True  # its script is in its config

    backend = "failing"
    needs_media = False

    def respond(self, request):
        if any(abs(request.t - f) < 1e-9 for f in self.config.get("fail", [])):
            raise RuntimeError("HTTP 503 from the model server")
        script = self.config.get("calls", {}).get(f"{request.t:g}", [])
        calls = [ToolCall(**c) for c in script]
        return AdapterOutput(text="" if calls else "<SILENT>", tool_calls=calls or None)


@pytest.fixture
def failing(tmp_path, monkeypatch):
    monkeypatch.setitem(plugins.table("backends"), "failing", "tests.test_env_infra:Failing")

    def make(calls: dict, fail: list[float] = ()) -> str:
        p = tmp_path / f"failing{len(list(tmp_path.glob('failing*')))}.yaml"
        p.write_text(json.dumps({"backend": "failing", "calls": calls, "fail": list(fail)}))
        return str(p)

    return make


def _collect(tmp_path, root, cfg):
    run = tmp_path / "run"
    run_collect(model=cfg, bench=root, out=run, progress=False)
    return run, RunFolder(run).responses()


def test_all_error_interaction_is_left_out_and_unjudged(tmp_path, failing):
    root = env_bench(tmp_path / "b", [TARGET])
    run, recs = _collect(tmp_path, root, failing({}, fail=GRID))
    assert len(recs) == 9 and all(r.error for r in recs)
    # the driver stamps no state hash on the failed last decision point
    assert getattr(recs[-1], "env_state_hash", None) is None
    (s,) = score_environments(load_benchmark(root), recs)
    # not a miss: 0 of 0 targets, 1 infra_error; no state verdict
    assert (s.time_tool_hits, s.call_targets, s.time_call_hits) == (0, 0, 0)
    assert (s.infra_error_targets, s.infrastructure_errors) == (1, 9)
    assert s.state_correct is None and "failed" in s.state_reason
    tot = totals([s])
    assert tot["joint_time_call"] == {"hits": 0, "targets": 0}
    assert tot["state_correct"] == {"correct": 0, "interactions": 0}
    assert tot["health"] == {
        "infrastructure_errors": 9,
        "infra_error_targets": 1,
        "state_unjudged": 1,
    }


def test_score_warns_and_strict_fails(tmp_path, failing):
    root = env_bench(tmp_path / "b", [TARGET])
    run, _ = _collect(tmp_path, root, failing({}, fail=GRID))
    res = CliRunner().invoke(app, ["score", str(run), "--judge", "lexical", "--json"])
    assert res.exit_code == 0, res.output
    assert (
        "warning: environment columns: 9 record(s) carry an infrastructure error; 1 target(s)"
        in (res.output)
    )
    doc = json.loads(next(x for x in res.output.splitlines() if x.startswith("{")))
    env = doc["environment"]
    assert env["totals"]["joint_time_call"] == {"hits": 0, "targets": 0}
    assert env["interactions"][0]["targets"][0]["outcome"] == "infra_error"
    strict = CliRunner().invoke(app, ["score", str(run), "--judge", "lexical", "--strict"])
    assert strict.exit_code == 3


def test_unreadable_video_is_infra_error(tmp_path, failing):
    root = env_bench(tmp_path / "b", [TARGET])
    (root / "media" / "city.mp4").write_bytes(b"not a video at all")
    _, recs = _collect(tmp_path, root, failing({"3": [{"name": ADD, "arguments": WASH}]}))
    assert recs and all(r.error for r in recs)
    bench = load_benchmark(root, media_errors="record")
    (s,) = score_environments(bench, recs)
    assert (s.call_targets, s.infra_error_targets, s.state_correct) == (0, 1, None)


K1 = {"id": "k1", "time_s": 2.0, "tools": [ADD], "calls": [{"name": ADD, "arguments": WASH}]}
K2 = {"id": "k2", "time_s": 5.0, "tools": [ADD], "calls": [{"name": ADD, "arguments": GAME}]}


def test_second_target_window_all_errors(tmp_path, failing):
    """k1 τ 2 (region [0, 3.5), window [0, 4]) is answered at 2 s; k2 τ 5 (region [3.5, ∞),
    window [3, 7]): 3..7 failed, 7.6 answered silently. Under ``window`` k2 is infra_error and
    the state (which needed k2's call) is not judged; under ``region`` (7.6 is healthy) k2 is a
    miss and the state incorrect."""
    root = env_bench(tmp_path / "b", [K1, K2])
    cfg = failing({"2": [{"name": ADD, "arguments": WASH}]}, fail=[3, 4, 5, 6, 7])
    _, recs = _collect(tmp_path, root, cfg)
    assert recs[-1].t == 7.6 and not recs[-1].error and recs[-1].env_state_hash
    bench = load_benchmark(root)
    (s,) = score_environments(bench, recs)
    assert [t["outcome"] for t in s.targets] == ["hit", "infra_error"]
    assert (s.time_tool_hits, s.call_targets, s.time_call_hits) == (1, 1, 1)
    assert (s.matched_writes, s.writes) == (1, 1)
    assert s.state_correct is None and "1 target(s) could not be answered" in s.state_reason
    (old,) = score_environments(bench, recs, infra_rule="region")
    assert [t["outcome"] for t in old.targets] == ["hit", "missed"]
    assert (old.call_targets, old.time_call_hits, old.state_correct) == (2, 1, False)


def test_second_target_region_all_errors(tmp_path, failing):
    """k2's region [3.5, ∞) all failed (4..7.6): infra_error under both rules; the final point
    failed, so no state verdict."""
    root = env_bench(tmp_path / "b", [K1, K2])
    cfg = failing({"2": [{"name": ADD, "arguments": WASH}]}, fail=[4, 5, 6, 7, 7.6])
    _, recs = _collect(tmp_path, root, cfg)
    assert getattr(recs[-1], "env_state_hash", None) is None
    for rule in ("window", "region"):
        (s,) = score_environments(load_benchmark(root), recs, infra_rule=rule)
        assert [t["outcome"] for t in s.targets] == ["hit", "infra_error"]
        assert (s.call_targets, s.time_call_hits, s.state_correct) == (1, 1, None)


def test_undeclared_argument_dropped_at_run_time_and_at_scoring(tmp_path, failing):
    """An extra argument the tool does not declare is ignored when the call runs (the state is
    the expected one); scoring drops it too: joint time-call hit 1/1, matched write 1/1."""
    root = env_bench(tmp_path / "b", [TARGET])
    extra = {**WASH, "colour": "blue"}
    calls = {"3": [{"name": GET, "arguments": {"user_id": U1}}, {"name": ADD, "arguments": extra}]}
    _, recs = _collect(tmp_path, root, failing(calls))
    by_t = {r.t: r for r in recs}
    assert by_t[3.0].tool_results[1]["ignored"] == ["colour"]
    (s,) = score_environments(load_benchmark(root), recs)
    assert s.state_correct is True
    assert (s.time_tool_hits, s.time_call_hits, s.call_targets) == (1, 1, 1)
    assert (s.matched_writes, s.writes) == (1, 1)
