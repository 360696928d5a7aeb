"""Streamed T1 tool calls executed against an EgoBench environment (issue 13)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interactscope.core import registry as plugins
from interactscope.streaming.adapters.base import Adapter, AdapterOutput
from interactscope.streaming.bench import BenchmarkError, load_benchmark
from interactscope.streaming.collect import run_collect
from interactscope.streaming.environments.scores import score_environments, totals
from interactscope.streaming.protocol.prompts import build_messages
from interactscope.streaming.runlog import RunFolder
from interactscope.streaming.schema import ToolCall
from tests.helpers.env_bench import ADD, ENV, GET, TARGET, U1, WASH, env_bench, kill_and_resume
from tests.helpers.foundation_fixtures import REPO, interaction, write_bench

PROMPTS: list[tuple[float, str]] = []


class Scripted(Adapter):
    """Emits the calls its config scripts at each time (``calls``: {"t": [call, ...]});
    silent elsewhere; records each prompt's text in PROMPTS."""

    free_options = True  # its script is in its config

    backend = "scripted"
    needs_media = False

    def respond(self, request):
        time.sleep(float(self.config.get("latency_s", 0)))
        text = " ".join(p.get("text", "") for m in build_messages(request) for p in m["content"])
        PROMPTS.append((request.t, text))
        script = self.config.get("calls", {}).get(f"{request.t:g}", [])
        calls = [ToolCall(**c) for c in script]
        return AdapterOutput(text="" if calls else "<SILENT>", tool_calls=calls or None)


@pytest.fixture
def scripted(tmp_path, monkeypatch):
    monkeypatch.setitem(plugins.table("backends"), "scripted", "tests.test_env_streaming:Scripted")
    import tests.test_env_streaming as me

    me.PROMPTS.clear()

    def make(calls: dict, **cfg):
        p = tmp_path / f"scripted{len(list(tmp_path.glob('scripted*')))}.yaml"
        p.write_text(json.dumps({"backend": "scripted", "calls": calls, **cfg}))
        return str(p)

    return make


def test_environment_format_loads(tmp_path):
    b = load_benchmark(env_bench(tmp_path / "b", [TARGET]))
    assert set(b.environments) == {"home"}
    it = b.interaction("env1")
    assert {t.name for t in b.offered_tools(it)} == set(b.environments["home"].tools)
    assert it.targets[0].calls[1].arguments == WASH


def test_environment_validation_names_file_line_id_field(tmp_path):
    bad = {
        "id": "k1",
        "time_s": 3.0,
        "tools": [ADD],
        "calls": [
            {"name": "fly_drone", "arguments": {}},
            {"name": ADD, "arguments": {**WASH, "required_action": "polish"}},
        ],
    }
    other = {**interaction("env2", task="T1", environment="garage"), "targets": [TARGET]}
    with pytest.raises(BenchmarkError) as ei:
        load_benchmark(env_bench(tmp_path / "b", [bad], extra=[other]))
    got = {(p.line, p.interaction_id, p.field): p.message for p in ei.value.problems}
    assert "not in environment 'home'" in got[(1, "env1", "targets[0].calls[0].name")]
    assert "polish" in got[(1, "env1", "targets[0].calls[1].arguments")]
    assert "unknown environment 'garage'" in got[(2, "env2", "query.environment")]
    assert all(p.file.endswith("interactions.jsonl") for p in ei.value.problems)


def test_unknown_scenario_is_a_problem(tmp_path):
    with pytest.raises(BenchmarkError) as ei:
        load_benchmark(env_bench(tmp_path / "b", [TARGET], env={**ENV, "scenario": "garage"}))
    (p,) = [p for p in ei.value.problems if p.field == "environments[0].scenario"]
    assert p.file.endswith("benchmark.json") and "unknown scenario 'garage'" in p.message


def test_order_scenario_is_accepted_and_listed(tmp_path):
    """EgoBench has six scenarios (egobench.scenarios: order is the sixth); an environment
    naming `order` is not refused, and an unknown one lists all six."""
    b = load_benchmark(env_bench(tmp_path / "a", [TARGET], env={**ENV, "scenario": "order"}))
    assert b.environments["home"].decl.scenario == "order"
    with pytest.raises(BenchmarkError) as ei:
        load_benchmark(env_bench(tmp_path / "b", [TARGET], env={**ENV, "scenario": "garage"}))
    (p,) = [p for p in ei.value.problems if p.field == "environments[0].scenario"]
    assert p.message.endswith(
        "expected one of household, kitchen, order, restaurant, retail, warehouse"
    )


def test_hand_worked_run(tmp_path, scripted):
    """Two correct calls at 3 s (window [1, 5]), the write repeated at 6 s (a later group of
    the same region: nothing for the paper's scoring) -> joint time-tool hit, joint time-call
    hit, state incorrect (two wash rows), action precision 1/2 (the get changes nothing)."""
    root = env_bench(tmp_path / "b", [TARGET])
    cfg = scripted(
        {
            "3": [{"name": GET, "arguments": {"user_id": U1}}, {"name": ADD, "arguments": WASH}],
            "6": [{"name": ADD, "arguments": WASH}],
        }
    )
    run_collect(model=cfg, bench=root, out=tmp_path / "run", progress=False)
    recs = RunFolder(tmp_path / "run").responses()
    by_t = {r.t: r for r in recs}
    assert [r["changed"] for r in by_t[3.0].tool_results] == [False, True]
    assert by_t[6.0].tool_results[0]["ok"] is True
    assert not hasattr(by_t[2.0], "tool_results") and by_t[7.6].env_state_hash
    (s,) = score_environments(load_benchmark(root), recs)
    assert (s.time_tool_hits, s.time_call_hits, s.call_targets) == (1, 1, 1)
    assert s.state_correct is False
    assert (s.matched_writes, s.writes) == (1, 2)
    tot = totals([s])
    assert tot["action_precision"] == {"matched": 1, "state_changing": 2}


def test_state_correct_without_the_duplicate_and_wrong_arguments_miss(tmp_path, scripted):
    root = env_bench(tmp_path / "b", [TARGET])
    cfg = scripted(
        {
            "3": [
                {"name": GET, "arguments": {"user_id": U1}},
                {"name": ADD, "arguments": {**WASH, "due_date": "2026-08-21"}},
            ]
        }
    )
    run_collect(model=cfg, bench=root, out=tmp_path / "run", progress=False)
    (s,) = score_environments(load_benchmark(root), RunFolder(tmp_path / "run").responses())
    assert (s.time_tool_hits, s.time_call_hits) == (1, 0)  # right tools, wrong date
    assert s.state_correct is False and (s.matched_writes, s.writes) == (0, 1)
    cfg = scripted(
        {"4": [{"name": GET, "arguments": {"user_id": U1}}, {"name": ADD, "arguments": WASH}]}
    )
    run_collect(model=cfg, bench=root, out=tmp_path / "run2", progress=False)
    (s,) = score_environments(load_benchmark(root), RunFolder(tmp_path / "run2").responses())
    assert (s.time_call_hits, s.state_correct, s.matched_writes, s.writes) == (1, True, 1, 1)


@pytest.mark.parametrize("show", [True, False])
def test_offline_probing_shows_results_only_with_the_setting(tmp_path, scripted, show):
    root = env_bench(tmp_path / "b", [TARGET])
    cfg = scripted({"0": [{"name": ADD, "arguments": WASH}]})
    over = {"environment.show_results": True} if show else {}
    run_collect(model=cfg, bench=root, out=tmp_path / "run", progress=False, overrides=over)
    import tests.test_env_streaming as me  # the module the adapter registry imported

    prompts = dict(me.PROMPTS)
    assert "Tool calls you made" not in prompts[0.0]  # nothing executed before q
    shown = "Household action added successfully." in prompts[1.0]
    assert shown is show
    assert ("add_to_household_action_list(" in prompts[1.0]) is show
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["settings"].get("environment") == ({"show_results": True} if show else None)


def test_no_environment_keeps_records_and_settings_as_before(tmp_path, scripted):
    root = write_bench(
        tmp_path / "b",
        [
            interaction(
                "p", task="T1", targets=[{"id": "k", "time_s": 3.0, "tools": ["take_photo"]}]
            )
        ],
    )
    run_collect(
        model=scripted({"3": [{"name": "take_photo"}]}),
        bench=root,
        out=tmp_path / "r",
        progress=False,
    )
    rows = [json.loads(x) for x in (tmp_path / "r" / "responses.jsonl").read_text().splitlines()]
    assert all("tool_results" not in r and "env_state_hash" not in r for r in rows)
    assert "environment" not in json.loads((tmp_path / "r" / "run.json").read_text())["settings"]


SCRIPT = """
import sys
from interactscope.core import registry as plugins
from interactscope.streaming.collect import run_collect
plugins.register("backends", "scripted", "tests.test_env_streaming:Scripted")
run_collect(model=sys.argv[1], bench=sys.argv[2], out=sys.argv[3], progress=False)
"""


def _final_hashes(run: Path) -> dict[str, str]:
    return {
        r.interaction_id: r.env_state_hash
        for r in RunFolder(run).responses()
        if getattr(r, "env_state_hash", None)
    }


@pytest.mark.slow
def test_kill_9_midway_and_resume_rebuilds_the_state(tmp_path, scripted):
    other = {**interaction("env2", task="T1", environment="home"), "targets": [TARGET]}
    root = env_bench(tmp_path / "b", [TARGET], extra=[other])
    calls = {
        "1": [{"name": ADD, "arguments": WASH}],
        "2": [{"name": ADD, "arguments": {**WASH, "name": "Board Game Box"}}],
        "4": [{"name": "remove_from_household_action_list", "arguments": WASH}],
        "6": [{"name": ADD, "arguments": {**WASH, "required_action": "dry"}}],
    }
    cfg = scripted(calls, latency_s=0.15, batch_size=1)
    run_collect(model=cfg, bench=root, out=tmp_path / "whole", progress=False)
    want = _final_hashes(tmp_path / "whole")
    assert set(want) == {"env1", "env2"}
    run = tmp_path / "run"
    kill_and_resume(SCRIPT, cfg, root, run)
    assert _final_hashes(run) == want


@pytest.mark.slow
def test_oracle_run_scored_by_the_cli_prints_the_new_columns(tmp_path):
    """The oracle sends the expected calls with their arguments at the grid point nearest τ:
    every new column is perfect, and the paper's summary.json is written as always."""
    root = env_bench(tmp_path / "b", [TARGET])
    run_collect(model="oracle", bench=root, out=tmp_path / "run", progress=False)
    res = subprocess.run(
        [sys.executable, "-m", "interactscope.cli", "score", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr
    assert "env1 | 1/1 | 1/1 | correct | 1/1" in res.stdout
    assert "T1 joint time-call 1/1 = 1.000; state correct 1/1 = 1.000; action precision 1/1" in (
        res.stdout
    )
    doc = json.loads((tmp_path / "run" / "scores" / "environment_scores.json").read_text())
    assert doc["totals"]["state_correct"] == {"correct": 1, "interactions": 1}
    summary = json.loads((tmp_path / "run" / "scores" / "summary.json").read_text())
    assert "environment" not in json.dumps(summary)


DEMO_ENV = REPO / "interactscope" / "data" / "demo-env"


@pytest.mark.parametrize(
    ("model", "line"),
    [
        ("oracle", "t1-home-chores | 2/2 | 2/2 | correct | 2/2"),
        ("blind-fire", "t1-home-chores | 1/2 | 0/2 | incorrect | 0/0"),
    ],
)
@pytest.mark.slow
def test_environment_demo_scores_as_its_readme_says(tmp_path, model, line):
    run_collect(model=model, bench=DEMO_ENV, out=tmp_path / "run", progress=False)
    res = subprocess.run(
        [sys.executable, "-m", "interactscope.cli", "score", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr
    assert line in res.stdout
