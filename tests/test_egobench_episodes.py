"""EgoBench episodes: the loop and its stop rules, the simulated user's modes, the agents
(oracle, none, model over a fake engine in native and text tool modes), the video for the
agent, and bad input refused before any episode."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.egobench import load_variant, score_log
from interactscope.egobench.agents import (
    AgentStep,
    ModelAgent,
    NoneAgent,
    OracleAgent,
    load_visual,
)
from interactscope.egobench.episode_settings import build_settings
from interactscope.egobench.episodes import run_episode
from interactscope.egobench.logs import from_episode
from interactscope.egobench.prompts import load_chitchat, load_prompts
from interactscope.egobench.records import ToolCall
from interactscope.egobench.run_score import score_run, user_health
from interactscope.egobench.runner import RunRequest, execute, parse_task_ids, prepare
from interactscope.egobench.user_sim import ModelUser, ScriptedUser, is_stop, parse_verdict
from interactscope.engines import ChatResult, EngineError, VideoPart
from tests.helpers.ego_fakes import DATA, NO, YES, FakeEngine, _blind, _retail1, _user_engine  # noqa: F401

# --------------------------------------------------------------------------- baselines


def _play_all(agent_name: str, tmp_path: Path):
    from interactscope.egobench import list_variants

    req = RunRequest(
        agent=agent_name,
        user="scripted",
        data=DATA,
        variants=list_variants(DATA),
        out=tmp_path / agent_name,
    )
    execute(prepare(req))
    return score_run(tmp_path / agent_name)


@pytest.mark.slow
def test_oracle_with_scripted_user_scores_one_on_every_shipped_variant(tmp_path: Path) -> None:
    score = _play_all("oracle", tmp_path)
    assert len(score.results) == 7
    for name, r in score.results.items():
        assert r.summary.n_tasks == len(load_variant(DATA, name).tasks)
        assert r.summary.joint_succ == 1.0, name
        assert r.summary.micro_acc == 1.0, name
        # the live environment's final state equals the ground truth replay's
        assert all(t.gt_hash == t.agent_hash for t in r.tasks)
    assert (tmp_path / "oracle" / "scores" / "retail1" / "tasks.csv").exists()


@pytest.mark.slow
def test_none_agent_scores_zero(tmp_path: Path) -> None:
    score = _play_all("none", tmp_path)
    for r in score.results.values():
        assert r.summary.joint_succ == 0.0
        assert r.summary.matched == 0


# --------------------------------------------------------------------------- stop rules


@pytest.mark.parametrize(
    ("text", "stop"),
    [
        ("STOP", True),
        ("  STOP\n", True),
        ("STOP.", True),
        ('"STOP"', True),
        ("**STOP**", True),
        ("Please STOP now.", False),
        ("stop", False),
        ("STOP STOP", False),
        ("", False),
    ],
)
def test_stop_is_the_whole_reply(text: str, stop: bool) -> None:
    assert is_stop(text) is stop


def test_stop_inside_a_sentence_does_not_end_the_episode() -> None:
    v, t = _retail1()
    user = ScriptedUser(["Hi, what does this wine cost?", "Do not STOP yet, check the cart."])
    rec = run_episode(v, t, NoneAgent(), user, build_settings("easy"), _blind(t))
    assert rec.stop_reason == "user_stop"
    users = [d.text for d in rec.dialogue if d.role == "user"]
    assert users == ["Hi, what does this wine cost?", "Do not STOP yet, check the cart.", "STOP"]
    assert [d.role for d in rec.dialogue].count("agent") == 2


def test_ten_user_turns_stop_the_episode() -> None:
    v, t = _retail1()
    user = ScriptedUser([f"message {i}" for i in range(1, 16)])
    rec = run_episode(v, t, NoneAgent(), user, build_settings("easy"), _blind(t))
    assert rec.stop_reason == "max_user_turns"
    assert [d.text for d in rec.dialogue if d.role == "user"] == [
        f"message {i}" for i in range(1, 11)
    ]
    assert sum(d.role == "agent" for d in rec.dialogue) == 10


class Looper(NoneAgent):
    """Calls get_price forever."""

    def step(self) -> AgentStep:
        return AgentStep(calls=[ToolCall(name="get_price", arguments={"product_name": "zonin"})])


def test_two_hundred_tool_calls_stop_the_episode() -> None:
    v, t = _retail1()
    rec = run_episode(v, t, Looper(), ScriptedUser(["go"]), build_settings("easy"), _blind(t))
    assert rec.stop_reason == "max_tool_calls"
    assert len(rec.calls) == 200
    assert all(c.result is not None and c.result.ok for c in rec.calls)
    small = build_settings("easy", {"limits.max_tool_calls": 7})
    assert len(run_episode(v, t, Looper(), ScriptedUser(["go"]), small, _blind(t)).calls) == 7


def test_engine_error_fails_the_episode_with_its_message() -> None:
    v, t = _retail1()

    def boom(messages, tools):
        raise EngineError("connection refused")

    agent = ModelAgent(FakeEngine(boom), "fake")
    rec = run_episode(v, t, agent, ScriptedUser(["hello"]), build_settings("easy"), _blind(t))
    assert rec.stop_reason == "error"
    assert rec.errors == ["agent engine: connection refused"]
    assert (
        score_log([from_episode(rec)], v.model_copy(update={"tasks": [t]})).summary.joint_succ == 0
    )


# --------------------------------------------------------------------------- simulated user


def test_hard_mode_adds_scenario_chitchat_and_easy_does_not() -> None:
    v, t = _retail1()
    draft = "How much is the third bottle I pointed at?"
    hard = ModelUser(_user_engine(draft), t, "retail", build_settings("hard")).first()
    sentences = load_chitchat("retail")
    assert hard.text.startswith(draft + " ")
    assert hard.text[len(draft) + 1 :] in sentences
    easy = ModelUser(_user_engine(draft), t, "retail", build_settings("easy")).first()
    assert easy.text == draft


def test_hard_mode_tells_the_actor_to_interrupt_a_malformed_reply() -> None:
    v, t = _retail1()
    eng = _user_engine("Answer properly!")
    user = ModelUser(eng, t, "retail", build_settings("hard"))
    user.first()
    user.reply('[{"name": ', problem="unparsable tool call")
    actor_systems = [m[0].text() for m, _ in eng.calls if "role-playing" in m[0].text()]
    assert "malformed (unparsable tool call)" in actor_systems[-1]
    assert "was malformed" not in actor_systems[0]


def test_static_mode_sends_one_request_then_only_acknowledgements() -> None:
    v, t = _retail1()
    eng = _user_engine("Also add the cheapest wine to my cart and compute the tax.")
    s = build_settings("static", {"limits.max_user_turns": 4})
    rec = run_episode(v, t, NoneAgent(), ModelUser(eng, t, "retail", s), s, _blind(t))
    users = [d.text for d in rec.dialogue if d.role == "user"]
    acks = load_prompts("user")["acknowledgements"]
    assert users[0] == "Also add the cheapest wine to my cart and compute the tax."
    assert users[1:] == [acks[0], acks[1], acks[2]]
    first_system = next(m[0].text() for m, _ in eng.calls if "role-playing" in m[0].text())
    assert "whole request in this one message" in first_system
    assert rec.stop_reason == "max_user_turns"


def test_static_followup_stop_ends_the_episode() -> None:
    v, t = _retail1()
    answers = iter(["Here is everything I need.", "STOP"])
    eng = _user_engine("")
    base = eng.reply
    eng.reply = lambda m, tools: next(answers) if "role-playing" in m[0].text() else base(m, tools)
    s = build_settings("static")
    rec = run_episode(v, t, NoneAgent(), ModelUser(eng, t, "retail", s), s, _blind(t))
    assert rec.stop_reason == "user_stop"
    assert [d.text for d in rec.dialogue if d.role == "user"] == [
        "Here is everything I need.",
        "STOP",
    ]


def test_evaluator_makes_the_actor_rewrite_at_most_three_times() -> None:
    v, t = _retail1()
    eng = _user_engine("I am the assistant, how can I help?", verdicts=[NO] * 10)
    turn = ModelUser(eng, t, "retail", build_settings("easy")).first()
    actor = [1 for m, _ in eng.calls if "role-playing" in m[0].text()]
    assert len(actor) == 4  # the draft + 3 rewrites
    assert turn.verdict.rewrites == 3 and not turn.verdict.all_pass
    assert turn.verdict.context_consistency is False and turn.verdict.role_consistency is True
    eng2 = _user_engine("What does this wine cost?", verdicts=[NO])
    turn2 = ModelUser(eng2, t, "retail", build_settings("easy")).first()
    assert turn2.verdict.rewrites == 1 and turn2.verdict.all_pass
    rewrite_prompt = [m[0].text() for m, _ in eng2.calls if "role-playing" in m[0].text()][-1]
    assert "rejected by a reviewer" in rewrite_prompt


def test_user_never_sees_the_ground_truth() -> None:
    v, t = _retail1()
    eng = _user_engine("What does the wine cost?")
    s = build_settings("easy", {"limits.max_user_turns": 3})
    run_episode(v, t, OracleAgent(), ModelUser(eng, t, "retail", s), s, _blind(t))
    seen = "\n".join(m.text() for msgs, _ in eng.calls for m in msgs)
    assert t.instruction in seen
    assert "compute_total_nutrition" not in seen and '"tax_rate": 0.07' not in seen


def test_unreadable_verdict_fails_every_criterion() -> None:
    verdict, _, err = parse_verdict("looks fine to me", 2)
    assert not any(
        [
            verdict.role_consistency,
            verdict.instruction_fidelity,
            verdict.resistance,
            verdict.context_consistency,
        ]
    )
    assert err == "user turn 2: evaluator reply unreadable"


def test_user_health_rates_and_trajectory_all_pass() -> None:
    v, t = _retail1()
    s = build_settings("easy", {"limits.max_user_turns": 2})
    good = run_episode(
        v, t, NoneAgent(), ModelUser(_user_engine("Price?"), t, "retail", s), s, _blind(t)
    )
    bad_s = build_settings("easy", {"limits.max_user_turns": 2, "user.max_rewrites": 0})
    bad = run_episode(
        v,
        t,
        NoneAgent(),
        ModelUser(_user_engine("Price?", verdicts=[YES, NO]), t, "retail", bad_s),
        bad_s,
        _blind(t),
    )
    h = user_health([good, bad])
    assert h.turns == 4 and h.trajectories == 2
    assert h.rates["context_consistency"] == 0.75 and h.rates["role_consistency"] == 1.0
    assert h.all_pass == 0.5


# --------------------------------------------------------------------------- model agent


def test_model_agent_text_mode_calls_reach_the_environment_and_results_come_back() -> None:
    v, t = _retail1()

    def reply(messages, tools):
        assert tools is None  # text mode: no native tools
        if messages[-1].role == "user" and "Tool results" in messages[-1].text():
            return "The ZONIN Chianti costs 98."
        return (
            '```json\n[{"name": "get_price", "arguments": {"product_name": "ZONIN Chianti"}}]\n```'
        )

    eng = FakeEngine(reply)
    s = build_settings("easy", {"agent.tool_mode": "text"})
    rec = run_episode(v, t, ModelAgent(eng, "fake"), ScriptedUser(["price?"]), s, _blind(t))
    assert [c.call.name for c in rec.calls] == ["get_price"]
    assert rec.calls[0].result.ok
    assert "get_price" in eng.calls[0][0][0].text()  # the catalogue is in the system prompt
    results_msg = eng.calls[1][0][-1].text()
    assert results_msg.startswith("Tool results:") and '"ok": true' in results_msg
    assert [d.text for d in rec.dialogue if d.role == "agent"] == ["The ZONIN Chianti costs 98."]
    assert rec.input_tokens == 20 and rec.output_tokens == 4


def test_model_agent_native_mode_sends_tools_and_tool_messages() -> None:
    from interactscope.streaming.schema import ToolCall as EngineCall

    v, t = _retail1()

    def reply(messages, tools):
        assert tools is not None and len(tools) == len(v.tools)
        if messages[-1].role == "tool":
            return "It costs 98."
        return ChatResult(
            text="",
            tool_calls=[EngineCall(name="get_price", arguments={"product_name": "zonin"})],
            tool_call_ids=["call_7"],
        )

    eng = FakeEngine(reply)
    s = build_settings("easy", {"agent.tool_mode": "native"})
    rec = run_episode(v, t, ModelAgent(eng, "fake"), ScriptedUser(["price?"]), s, _blind(t))
    second = eng.calls[1][0]
    assert second[-2].role == "assistant" and second[-2].tool_call_ids == ["call_7"]
    assert second[-1].role == "tool" and second[-1].tool_call_id == "call_7"
    assert rec.calls[0].call.arguments == {"product_name": "zonin"}


def test_malformed_text_call_is_recorded_and_not_executed() -> None:
    v, t = _retail1()
    eng = FakeEngine(lambda m, tools: '{"name": "get_price", "arguments": {oops')
    s = build_settings("easy", {"agent.tool_mode": "text"})
    rec = run_episode(v, t, ModelAgent(eng, "fake"), ScriptedUser(["price?"]), s, _blind(t))
    assert len(rec.calls) == 1 and rec.calls[0].malformed and rec.calls[0].result is None


# --------------------------------------------------------------------------- video


def _clip(folder: Path, name: str, seconds: int = 4) -> Path:
    from tests.helpers.media_fixtures import write_silent_video

    folder.mkdir(parents=True, exist_ok=True)
    return write_silent_video(folder / name, seconds=seconds, fps=2, size=32)


def test_frames_at_fps_under_the_cap_and_description_when_absent(tmp_path: Path) -> None:
    v, t = _retail1()
    _clip(tmp_path, Path(t.image_path).name, seconds=4)
    s = build_settings("easy").frames
    vis = load_visual(t, tmp_path, s)
    # 2 fps clip of 4.0 s: the frame shown at second k = 0..4 is the last with pts <= k
    assert vis.sees_pixels and vis.pts_s == [0.0, 1.0, 2.0, 3.0, 3.5]
    assert vis.frames[0].shape == (32, 32, 3)
    half = load_visual(t, tmp_path, build_settings("easy", {"frames.fps": 0.5}).frames)
    assert half.pts_s == [0.0, 2.0, 3.5] and half.step_s == 2.0
    capped = load_visual(t, tmp_path, build_settings("easy", {"frames.max": 2}).frames)
    assert capped.pts_s == [0.0, 3.5]  # uniform cap keeps the oldest and the newest
    absent = load_visual(v.task(2).model_copy(update={"image_path": "nope.mp4"}), tmp_path, s)
    assert absent.sees_pixels is False and absent.description == v.task(2).image_description


def test_frames_go_with_the_first_user_message_or_every_one(tmp_path: Path) -> None:
    v, t = _retail1()
    _clip(tmp_path, Path(t.image_path).name, seconds=2)
    for every, expected in ((False, [True, False]), (True, [True, True])):
        s = build_settings("easy", {"frames.every_turn": every, "agent.tool_mode": "text"})
        eng = FakeEngine(lambda m, tools: "ok")
        vis = load_visual(t, tmp_path, s.frames)
        rec = run_episode(v, t, ModelAgent(eng, "fake"), ScriptedUser(["a", "b"]), s, vis)
        users = [m for m in eng.calls[-1][0] if m.role == "user"]
        assert [any(isinstance(p, VideoPart) for p in m.parts()) for m in users] == expected
        assert rec.sees_pixels is True


# --------------------------------------------------------------------------- bad input


def test_task_spec() -> None:
    assert parse_task_ids("1,5-7") == {1, 5, 6, 7}
    assert parse_task_ids(None) is None
    with pytest.raises(ValueError, match="not an id or a range"):
        parse_task_ids("3-1")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--variant", "retail9"], "unknown variant 'retail9'"),
        (
            ["--variant", "retail1", "--video-dir", "/no/such/folder"],
            "--video-dir /no/such/folder: no such folder",
        ),
        (["--variant", "retail1", "--agent", "silent"], "cannot chat: backend 'silent'"),
        (["--variant", "retail1", "--user", "blind-fire"], "--user 'blind-fire'"),
        (["--variant", "retail1", "--tasks", "1,99"], "no task 99"),
        (
            ["--variant", "retail1", "--set", "limits.nope=1"],
            "unknown episode setting 'limits.nope'",
        ),
        (["--variant", "retail1", "--mode", "weird"], "--mode 'weird': expected easy, hard"),
        (["--variant", "retail1", "--shard", "3/2"], "--shard 3/2: need 1 <= K <= N"),
    ],
)
def test_bad_input_is_one_line_before_any_episode(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    out = tmp_path / "run"
    argv = ["ego", "run", "--out", str(out), *args]
    if "--agent" not in args:
        argv += ["--agent", "oracle"]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 1
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and needle in lines[0]
    assert not out.exists()


def test_run_without_agent_lists_the_agents_and_the_cpu_default(tmp_path: Path, monkeypatch):
    from interactscope.core import registry

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INTERACTSCOPE_CONFIGS", raising=False)
    agents = registry.table("agents")  # other test modules register agents at import
    for name in [n for n in agents if n not in ("oracle", "none", "egointeract")]:
        monkeypatch.delitem(agents, name)
    res = CliRunner().invoke(app, ["ego", "run", "--variant", "retail1", "--out", "run"])
    assert res.exit_code == 2 and not (tmp_path / "run").exists()
    assert res.stderr == (
        "--agent: missing; name the agent: oracle, none, egointeract (with --agent-model), or a "
        "chat model (cascade, gemini, gemini-3.1-pro, gpt-4o, internvl3.5-8b, qwen2.5-omni-3b, "
        "qwen2.5-omni-7b, qwen3-omni, qwen3-vl-8b, qwen3.5-omni-plus, vllm-serve); e.g. "
        "--agent cascade (the CPU default, sees no pixels) or --agent oracle (replays the "
        "ground truth)\n"
    )


def test_data_folder_missing_or_without_the_variant_is_one_line(tmp_path: Path) -> None:
    """A --data folder that does not exist says so (and what the bundled one holds); one that
    lacks the variant lists its own variants."""

    def err(data: Path) -> str:
        argv = ["ego", "run", "--agent", "oracle", "--variant", "retail1", "--data", str(data)]
        res = CliRunner().invoke(app, [*argv, "--out", str(tmp_path / "run")])
        assert res.exit_code == 1 and not (tmp_path / "run").exists()
        return res.stderr

    assert err(tmp_path / "nodata") == (
        f"{tmp_path / 'nodata'}: no such data folder; --data must point at a folder with "
        "tasks/<variant>.json, db/ and tools/ (without --data: the bundled data, variants "
        "household1, kitchen1, restaurant1, restaurant5, retail1, retail6, warehouse1)\n"
    )
    (tmp_path / "d" / "tasks").mkdir(parents=True)
    assert err(tmp_path / "d") == (
        f"{tmp_path / 'd' / 'tasks' / 'retail1.json'}: unknown variant 'retail1'; the variants "
        f"in {tmp_path / 'd'}: none (no tasks/*.json)\n"
    )
    for name in ("kitchen1", "household1"):
        (tmp_path / "d" / "tasks" / f"{name}.json").write_text("[]")
    assert err(tmp_path / "d").endswith(f"in {tmp_path / 'd'}: household1, kitchen1\n")


def test_demo_prints_two_lines(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["ego", "demo", "--out", str(tmp_path / "demo")])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 2
    assert "21 played" in lines[0]
    assert "21 tasks (easy) | JointSucc 1.000  MicroAcc 1.000 (75/75)" in lines[1]


def test_scene_text_and_first_user_message_are_separate_paragraphs() -> None:
    """The blind agent's first user message: the scene description, a blank line, the user's
    words (they were glued: "...in succession.Hello.")."""
    v, t = _retail1()
    eng = FakeEngine(lambda messages, tools: "Hi.")
    s = build_settings("easy", {})
    run_episode(v, t, ModelAgent(eng, "fake"), ScriptedUser(["Hello."]), s, _blind(t))
    first_user = next(m for m in eng.calls[0][0] if m.role == "user").text()
    assert first_user.endswith("\n\nHello.") and t.image_description.strip() in first_user
