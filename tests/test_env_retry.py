"""Environment interactions (issue 13): ``--retry-errors`` keeps the state in time order, Online
Rolling requests carry the results executed so far, kill -9 + resume in Online Rolling."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from interactscope.core import registry as plugins
from interactscope.streaming.adapters.base import Adapter, AdapterOutput, Session
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.collect import run_collect
from interactscope.streaming.environments.execution import InteractionEnvironment, fresh_environment
from interactscope.streaming.runlog import RunFolder, retried
from interactscope.streaming.schema import ResponseRecord, ToolCall
from tests.helpers.env_bench import ADD, TARGET, WASH, env_bench, kill_and_resume
from tests.helpers.foundation_fixtures import interaction

REMOVE = "remove_from_household_action_list"
BOX = {**WASH, "name": "Board Game Box"}
SEEN: list[tuple[float, list[dict]]] = []


class Scripted(Adapter):
    """Emits the calls its config scripts at each time (``calls``: {"t": [call, ...]}), silent
    elsewhere; raises at the times in ``fail`` while the file ``flag`` does not exist; records
    each request's ``(t, tool_results)`` in SEEN. Online Rolling steps answer the same way."""

    free_options = True  # its script is in its config

    backend = "scripted-retry"
    needs_media = False
    supports_online = True

    def respond(self, request):
        time.sleep(float(self.config.get("latency_s", 0)))
        SEEN.append((request.t, list(request.tool_results or [])))
        key = f"{request.t:g}"
        if key in self.config.get("fail", []) and not Path(self.config["flag"]).exists():
            raise ConnectionError("server hung up")
        calls = [ToolCall(**c) for c in self.config.get("calls", {}).get(key, [])]
        return AdapterOutput(text="" if calls else "<SILENT>", tool_calls=calls or None)

    def open_session(self, interaction, video):
        adapter = self

        class S(Session):
            def step(self, request):
                return adapter.respond(request)

        return S()


@pytest.fixture
def scripted(tmp_path, monkeypatch):
    monkeypatch.setitem(
        plugins.table("backends"), "scripted-retry", "tests.test_env_retry:Scripted"
    )
    import tests.test_env_retry as me  # the module the adapter registry imports

    me.SEEN.clear()

    def make(calls: dict, **cfg) -> str:
        p = tmp_path / f"scripted{len(list(tmp_path.glob('scripted*')))}.yaml"
        p.write_text(json.dumps({"backend": "scripted-retry", "calls": calls, **cfg}))
        return str(p)

    return make


def _seen() -> list[tuple[float, list[dict]]]:
    import tests.test_env_retry as me

    return list(me.SEEN)


def _by_t(run: Path, iid: str = "env1") -> dict[float, ResponseRecord]:
    return {r.t: r for r in RunFolder(run).responses() if r.interaction_id == iid}


def _results(run: Path) -> dict[float, list]:
    return {t: getattr(r, "tool_results", None) for t, r in _by_t(run).items()}


def _hash_after(root: Path, calls: list[ToolCall]) -> str:
    env = InteractionEnvironment(fresh_environment(load_benchmark(root), "home"))
    for c in calls:
        env.execute(c)
    return env.state_hash()


def test_retried_drops_an_in_order_interaction_from_its_first_error_on():
    def rec(iid, t, err=False):
        return ResponseRecord(interaction_id=iid, t=t, error="boom" if err else None)

    recs = [rec("e", 0), rec("e", 1), rec("e", 2, True), rec("e", 3), rec("e", 4, True),
            rec("p", 0, True), rec("p", 1)]  # fmt: skip
    keys = [r.key for r in retried(recs, {"e"})]
    assert keys == [("e", 0.0), ("e", 1.0), ("p", 1.0)]
    keys = [r.key for r in retried(recs)]  # no environment: only the error records go
    assert keys == [("e", 0.0), ("e", 1.0), ("e", 3.0), ("p", 1.0)]


CALLS = {
    "2": [{"name": ADD, "arguments": WASH}, {"name": ADD, "arguments": BOX}],
    "4": [{"name": REMOVE, "arguments": WASH}],
}


@pytest.mark.parametrize("protocol", ["offline", "online"])
def test_retry_errors_redoes_later_points_in_time_order(tmp_path, scripted, protocol):
    """Hand-worked: 2 s adds Cup and Box, 4 s removes Cup -> the state is seed + Box and the
    remove succeeds. The first run fails at 2 s, so 4 s removes a Cup that is not there (state
    = seed). ``--retry-errors`` must redo 2 s *and* 4 s in that order: records and final state
    hash equal an uninterrupted run's (before the fix, 4 s kept its failed remove and the last
    point kept the seed's hash)."""
    root = env_bench(tmp_path / "b", [TARGET])
    flag = tmp_path / "fixed"
    over = {"protocol": protocol}
    whole = scripted(CALLS)
    run_collect(model=whole, bench=root, out=tmp_path / "whole", progress=False, overrides=over)
    want = _by_t(tmp_path / "whole")
    assert want[4.0].tool_results[0]["changed"] is True
    assert want[7.6].env_state_hash == _hash_after(root, [ToolCall(name=ADD, arguments=BOX)])

    cfg = scripted(CALLS, fail=["2"], flag=str(flag))
    run = tmp_path / "run"
    first = run_collect(model=cfg, bench=root, out=run, progress=False, overrides=over)
    assert first.errors >= 1 and _by_t(run)[2.0].error
    if protocol == "offline":
        assert _by_t(run)[4.0].tool_results[0]["error"] == "matching action was not found"
        assert _by_t(run)[7.6].env_state_hash == _hash_after(root, [])
    flag.write_text("")
    import tests.test_env_retry as me

    me.SEEN.clear()
    run_collect(model=cfg, bench=root, out=run, progress=False, overrides=over, retry_errors=True)
    got = _by_t(run)
    assert sorted(got) == sorted(want) and not any(r.error for r in got.values())
    assert _results(run) == _results(tmp_path / "whole")
    assert got[7.6].env_state_hash == want[7.6].env_state_hash
    asked = [t for t, _ in _seen()]
    # offline: only 2 s on are asked again, in order; online: the whole interaction is redone
    assert asked == ([2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.6] if protocol == "offline" else
                     [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.6])  # fmt: skip


@pytest.mark.parametrize("protocol", ["offline", "online"])
def test_online_rolling_requests_carry_the_results_so_far(tmp_path, scripted, protocol):
    """Online Rolling always passes the executed calls and their results of an environment
    interaction; Offline Probing only with ``environment.show_results``."""
    root = env_bench(tmp_path / "b", [TARGET])
    cfg = scripted({"1": [{"name": ADD, "arguments": WASH}]})
    run_collect(
        model=cfg,
        bench=root,
        out=tmp_path / "run",
        progress=False,
        overrides={"protocol": protocol},
    )
    seen = dict(_seen())
    assert seen[0.0] == [] and seen[1.0] == []  # nothing executed before 1 s
    if protocol == "offline":
        assert seen[2.0] == [] and seen[7.6] == []
        return
    (done,) = seen[2.0]
    assert (done["t"], done["name"], done["arguments"]) == (1.0, ADD, WASH)
    assert done["result"]["ok"] is True and done["result"]["changed"] is True
    assert seen[7.6] == seen[2.0]


SCRIPT = """
import sys
from interactscope.core import registry as plugins
from interactscope.streaming.collect import run_collect
plugins.register("backends", "scripted-retry", "tests.test_env_retry:Scripted")
run_collect(model=sys.argv[1], bench=sys.argv[2], out=sys.argv[3], progress=False,
            overrides={"protocol": "online"})
"""


def _final_hashes(run: Path) -> dict[str, str]:
    return {
        r.interaction_id: r.env_state_hash
        for r in RunFolder(run).responses()
        if getattr(r, "env_state_hash", None)
    }


@pytest.mark.slow
def test_online_kill_9_midway_and_resume_gives_the_uninterrupted_hashes(tmp_path, scripted):
    """Online Rolling: the killed interaction is partial and redone from q on resume, its
    environment fresh; final state hashes equal an uninterrupted run's."""
    other = {**interaction("env2", task="T1", environment="home"), "targets": [TARGET]}
    root = env_bench(tmp_path / "b", [TARGET], extra=[other])
    calls = {
        "1": [{"name": ADD, "arguments": WASH}],
        "2": [{"name": ADD, "arguments": BOX}],
        "4": [{"name": REMOVE, "arguments": WASH}],
        "6": [{"name": ADD, "arguments": {**WASH, "required_action": "dry"}}],
    }
    cfg = scripted(calls, latency_s=0.15)
    over = {"protocol": "online"}
    run_collect(model=cfg, bench=root, out=tmp_path / "whole", progress=False, overrides=over)
    want = _final_hashes(tmp_path / "whole")
    assert set(want) == {"env1", "env2"}
    run = tmp_path / "run"
    kill_and_resume(SCRIPT, cfg, root, run)
    assert _final_hashes(run) == want
    assert len(RunFolder(run).responses()) == 18
