"""EgoBench run folders: run.json, append-only episodes.jsonl, kill -9 and resume, shards and
merge, and one episode end to end against an OpenAI-compatible stub server on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from interactscope.egobench import package_data_dir
from interactscope.egobench.run_folder import (
    EPISODES,
    EgoRunError,
    load_run,
    merge_runs,
    read_episodes,
)
from interactscope.egobench.run_score import score_run
from interactscope.egobench.runner import RunRequest, execute, prepare
from tests.helpers.ego_stub import Stub  # noqa: F401

DATA = package_data_dir()
ROOT = Path(__file__).resolve().parents[1]


def _req(out: Path, **kw: Any) -> RunRequest:
    base = {
        "agent": "oracle",
        "user": "scripted",
        "data": DATA,
        "variants": ["retail1"],
        "out": out,
    }
    return RunRequest(**{**base, **kw})


def _keys(out: Path) -> list[str]:
    return [f"{r.variant}:{r.task_id}" for r in read_episodes(out / EPISODES)]


def test_run_json_records_agent_user_mode_data_and_settings(tmp_path: Path) -> None:
    out = tmp_path / "run"
    execute(prepare(_req(out, tasks="1-4", mode="hard", sets={"limits.max_user_turns": 5})))
    m, recs = load_run(out)
    assert m.agent["name"] == "oracle" and m.user["kind"] == "scripted" and m.mode == "hard"
    assert m.tasks == {"retail1": [1, 2, 3, 4]} and m.task_filter == "1-4"
    assert len(m.data["variants"]["retail1"]) == 16
    assert (
        m.settings["limits"]["max_user_turns"] == 5
        and m.settings["limits"]["max_tool_calls"] == 200
    )
    assert "pydantic" in m.packages and m.ended_at is not None
    assert m.summary["episodes"] == 4 and m.summary["stop_reasons"] == {"user_stop": 4}
    assert [r.task_id for r in recs] == [1, 2, 3, 4] and all(r.mode == "hard" for r in recs)


def test_rerun_skips_done_episodes_and_refuses_other_settings(tmp_path: Path) -> None:
    out = tmp_path / "run"
    execute(prepare(_req(out, tasks="1-3")))
    again = execute(prepare(_req(out, tasks="1-3")))
    assert (again.written, again.skipped) == (0, 3)
    assert _keys(out) == ["retail1:1", "retail1:2", "retail1:3"]
    with pytest.raises(EgoRunError, match=r"mode: 'easy' != 'static'"):
        execute(prepare(_req(out, tasks="1-3", mode="static")))


def _as_old_folder(out: Path, **old_settings: Any) -> None:
    """Make ``out`` look written before the `reference` setting existed: no `reference` key in
    run.json's settings (plus ``old_settings``), and its last episode not yet played."""
    m = json.loads((out / "run.json").read_text())
    del m["settings"]["reference"]
    m["settings"].update(old_settings)
    (out / "run.json").write_text(json.dumps(m))
    lines = (out / EPISODES).read_text().splitlines(keepends=True)
    (out / EPISODES).write_text("".join(lines[:-1]))


def test_a_run_json_without_the_reference_key_resumes(tmp_path: Path) -> None:
    """A missing `reference` reads as its old default `ours` (the rules every run executed with
    before the key), so the folder resumes: the two episodes kept, the third played."""
    out = tmp_path / "run"
    execute(prepare(_req(out, tasks="1-3")))
    _as_old_folder(out)
    again = execute(prepare(_req(out, tasks="1-3")))
    assert (again.written, again.skipped) == (1, 2)
    assert _keys(out) == ["retail1:1", "retail1:2", "retail1:3"]
    assert load_run(out)[0].settings["reference"] == "ours"


def test_an_old_folders_explicit_tool_rules_compare_by_effect(tmp_path: Path) -> None:
    """Before `reference`, run.json wrote `undeclared_params: drop` and
    `coerce_numeric_strings: true` (the old defaults). `drop` is ours' rule, so it equals a new
    run's None; coercion is not (ours: off), so a default resume is refused naming only it,
    and resuming with --set coerce_numeric_strings=true works."""
    out = tmp_path / "run"
    execute(prepare(_req(out, tasks="1-3")))
    _as_old_folder(out, undeclared_params="drop", coerce_numeric_strings=True)
    with pytest.raises(EgoRunError) as ei:
        execute(prepare(_req(out, tasks="1-3")))
    diffs = str(ei.value).split("(existing != requested):")[1].split()
    assert diffs == ["settings.coerce_numeric_strings:", "True", "!=", "False"]
    again = execute(prepare(_req(out, tasks="1-3", sets={"coerce_numeric_strings": True})))
    assert (again.written, again.skipped) == (1, 2)


def test_an_old_kitchen_folder_rescores_and_resumes_with_the_rule_it_ran_with(
    tmp_path: Path,
) -> None:
    """A run.json from before `kitchen_numeric_strings` reads as `reject` (ours' rule then:
    kitchen1 task 1's 7 string quantities fail validation), so `ego score` replays it as it
    ran: the agent state equals the recorded one and the 7 GT failures are counted; resuming
    under today's `float` is refused naming the rule, and resuming with the old rule works."""
    out = tmp_path / "run"
    kitchen = {"variants": ["kitchen1"], "tasks": "1-2"}
    execute(prepare(_req(out, **kitchen, sets={"kitchen_numeric_strings": "reject"})))
    m = json.loads((out / "run.json").read_text())
    del m["settings"]["kitchen_numeric_strings"]  # written before the setting existed
    (out / "run.json").write_text(json.dumps(m))
    manifest, records = load_run(out)
    assert manifest.settings["kitchen_numeric_strings"] == "reject"
    task1 = score_run(out).results["kitchen1"].tasks[0]
    assert task1.gt_failed_calls == 7
    assert task1.agent_hash == next(r.final_state_hash for r in records if r.task_id == 1)
    lines = (out / EPISODES).read_text().splitlines(keepends=True)
    (out / EPISODES).write_text(lines[0])  # task 2 not yet played
    with pytest.raises(EgoRunError, match=r"settings.kitchen_numeric_strings: 'reject' != 'float'"):
        execute(prepare(_req(out, **kitchen)))
    again = execute(prepare(_req(out, **kitchen, sets={"kitchen_numeric_strings": "reject"})))
    assert (again.written, again.skipped) == (1, 1)


def test_an_old_folder_without_kitchen_resumes_without_the_kitchen_rule(tmp_path: Path) -> None:
    """`kitchen_numeric_strings` acts on kitchen's tools only: an old retail run.json without
    it (read as `reject`) resumes under today's `float` with no flag, as nothing differs."""
    out = tmp_path / "run"
    execute(prepare(_req(out, tasks="1-2")))
    m = json.loads((out / "run.json").read_text())
    del m["settings"]["kitchen_numeric_strings"]
    (out / "run.json").write_text(json.dumps(m))
    lines = (out / EPISODES).read_text().splitlines(keepends=True)
    (out / EPISODES).write_text(lines[0])
    again = execute(prepare(_req(out, tasks="1-2")))
    assert (again.written, again.skipped) == (1, 1)


TOOL_RULES = ("undeclared_params", "coerce_numeric_strings", "kitchen_numeric_strings")


def test_run_json_records_the_resolved_tool_rules_and_a_null_folder_still_resumes(
    tmp_path: Path,
) -> None:
    """A new run.json records the rules summary.json reports (under `ours`: drop, false,
    float), not `null`. A folder written with `null` (before this) resumes with no flag and
    re-scores identically: null is the profile's rule, the one it ran with."""
    out = tmp_path / "run"
    kitchen = {"variants": ["kitchen1"], "tasks": "1-2"}
    execute(prepare(_req(out, **kitchen)))
    m = json.loads((out / "run.json").read_text())
    assert [m["settings"][k] for k in TOOL_RULES] == ["drop", False, "float"]
    scored = score_run(out).results["kitchen1"]
    assert [scored.summary.settings[k] for k in TOOL_RULES] == ["drop", False, "float"]
    m["settings"].update(dict.fromkeys(TOOL_RULES))  # as written before the rules were resolved
    (out / "run.json").write_text(json.dumps(m))
    assert score_run(out).results["kitchen1"].tasks == scored.tasks
    lines = (out / EPISODES).read_text().splitlines(keepends=True)
    (out / EPISODES).write_text(lines[0])  # task 2 not yet played
    again = execute(prepare(_req(out, **kitchen)))
    assert (again.written, again.skipped) == (1, 1)
    assert score_run(out).results["kitchen1"].tasks == scored.tasks


def test_torn_last_line_is_dropped_and_that_episode_played_again(tmp_path: Path) -> None:
    out = tmp_path / "run"
    execute(prepare(_req(out, tasks="1-3")))
    lines = (out / EPISODES).read_text().splitlines(keepends=True)
    (out / EPISODES).write_text("".join(lines[:2]) + lines[2][:40])  # killed mid-write
    res = execute(prepare(_req(out, tasks="1-3")))
    assert res.written == 1
    assert _keys(out) == ["retail1:1", "retail1:2", "retail1:3"]


SLOW_RUNNER = """
import sys, time
from interactscope.egobench.agents import OracleAgent, register_agent

class Slow(OracleAgent):
    name = "slow"
    def step(self):
        time.sleep(0.15)
        return super().step()

register_agent("slow", lambda spec: Slow())
from interactscope.cli import main
sys.argv = ["interactscope", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
def test_kill_9_during_a_run_then_rerun_gives_each_task_exactly_once(tmp_path: Path) -> None:
    script = tmp_path / "slow_run.py"
    script.write_text(SLOW_RUNNER)
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        str(script),
        "ego",
        "run",
        "--agent",
        "slow",
        "--variant",
        "retail1",
        "--tasks",
        "1-12",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and len(_lines(out)) < 3:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written = len(_lines(out))
    assert 3 <= written < 12, "the run must be killed part-way"
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _keys(out) == [f"retail1:{i}" for i in range(1, 13)]
    m, _ = load_run(out)
    assert len(m.invocations) == 2 and m.invocations[1].written == 12 - written
    assert score_run(out).results["retail1"].summary.joint_succ == 1.0


def _lines(out: Path) -> list[str]:
    p = out / EPISODES
    return [x for x in p.read_text().split("\n")[:-1] if x] if p.exists() else []


@pytest.mark.slow
def test_shards_cover_the_run_once_and_merge(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    execute(prepare(_req(whole)))
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for k, s in enumerate(shards, 1):
        execute(prepare(_req(s, shard=f"{k}/2")))
    a, b = (set(_keys(s)) for s in shards)
    assert a and b and not a & b and a | b == set(_keys(whole))
    merged = merge_runs(shards, tmp_path / "merged")
    assert merged.shard is None and merged.summary["episodes"] == 32
    assert _keys(tmp_path / "merged") == _keys(whole)  # task order restored
    assert score_run(tmp_path / "merged").results["retail1"].summary.joint_succ == 1.0
    with pytest.raises(EgoRunError, match=r"missing shard\(s\): 2/2"):
        merge_runs([shards[0], shards[0]], tmp_path / "bad")


# --------------------------------------------------------------------------- OpenAI stub


def test_episode_end_to_end_against_an_openai_compatible_server(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    stub = Stub()
    try:
        cfg = tmp_path / "stub-model.yaml"
        cfg.write_text(
            f"backend: openai\nmodel: stub\nbase_url: {stub.url}\n"
            "api_key_optional: true\nnative_tools: true\nmax_retries: 0\n"
        )
        script = tmp_path / "script.yaml"
        script.write_text('"retail1:1": ["What does the ZONIN Chianti cost?"]\n')
        out = tmp_path / "run"
        res = execute(prepare(_req(out, agent=str(cfg), user=f"scripted:{script}", tasks="1")))
        assert res.errors == 0
    finally:
        stub.server.shutdown()
    (rec,) = read_episodes(out / EPISODES)
    assert [c.call.name for c in rec.calls] == ["get_price"]
    assert rec.calls[0].result.ok and rec.calls[0].result.output
    assert rec.stop_reason == "user_stop"
    assert [d.text for d in rec.dialogue] == [
        "What does the ZONIN Chianti cost?",
        "This wine costs 98.",
        "STOP",
    ]
    assert rec.input_tokens == 100 and rec.output_tokens == 10
    first, second = stub.requests
    assert {t["function"]["name"] for t in first["tools"]} >= {"get_price", "add_to_cart"}
    assert second["messages"][-1]["role"] == "tool"
    assert second["messages"][-1]["tool_call_id"] == "call_1"
    assert json.loads(second["messages"][-1]["content"])["ok"] is True


def test_same_model_as_agent_and_user_is_loaded_once(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    cfg = tmp_path / "m.yaml"
    cfg.write_text(
        "backend: openai\nmodel: m\nbase_url: http://127.0.0.1:9/v1\napi_key_optional: true\n"
    )
    other = tmp_path / "n.yaml"
    other.write_text(cfg.read_text().replace("model: m", "model: n"))
    run = prepare(_req(tmp_path / "r", agent=str(cfg), user=str(cfg)))
    from interactscope.egobench import load_variant

    v = load_variant(DATA, "retail1")
    assert run.make_user(v, v.task(1)).engine is run.agent.engine
    assert run.manifest.user["kind"] == "model" and run.manifest.user["backend"] == "openai"
    run2 = prepare(_req(tmp_path / "r2", agent=str(cfg), user=str(other)))
    assert run2.make_user(v, v.task(1)).engine is not run2.agent.engine


@pytest.mark.slow
def test_cli_shards_merge_and_score_run(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interactscope.cli import app

    cli = CliRunner()
    for k in (1, 2):
        res = cli.invoke(
            app,
            [
                "ego",
                "run",
                "--agent",
                "oracle",
                "--variant",
                "retail1",
                "--shard",
                f"{k}/2",
                "--out",
                str(tmp_path / f"s{k}"),
            ],
        )
        assert res.exit_code == 0, res.output
    res = cli.invoke(
        app,
        ["ego", "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m")],
    )
    assert res.exit_code == 0 and "32 episodes from 2 shards" in res.output
    res = cli.invoke(app, ["ego", "score-run", str(tmp_path / "m")])
    assert res.exit_code == 0
    assert "retail1: 32 tasks | JointSucc 1.000  MicroAcc 1.000 (79/79)" in res.output
    assert (tmp_path / "m" / "scores" / "user_health.json").exists()
