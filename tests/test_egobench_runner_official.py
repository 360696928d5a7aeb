"""``--set runner=official``: the official loop's rules (Wind-Flipped/EgoBench run/multi_agent.py,
run/utils.py, run/apis/unified.py, read by hand): "STOP" anywhere in the user's reply stops; past
the tool-call limit the agent's turn ends, not the episode; backend failures become the
utterance "Error: ..."; the opening line; the tool-result message; evaluator and summarizer
off, one rewrite; easy mode only. Our default keeps its own rules (asserted beside each)."""

from __future__ import annotations

import json

import pytest

from interactscope.egobench.agents import AgentStep, ModelAgent, NoneAgent
from interactscope.egobench.episode_settings import build_settings
from interactscope.egobench.episodes import run_episode
from interactscope.egobench.records import ToolCall
from interactscope.egobench.user_sim import OFFICIAL_OPENING, OPENING, ModelUser, ScriptedUser
from interactscope.engines import EngineError
from tests.helpers.ego_fakes import NO, FakeEngine, _blind, _retail1, _user_engine

OFFICIAL = {"runner": "official"}


def test_profile_defaults_and_easy_mode_only() -> None:
    s = build_settings("easy", OFFICIAL)
    assert (s.user.evaluator, s.user.summarizer, s.user.max_rewrites) == (False, False, 1)
    assert s.agent.tool_mode == "text"
    assert build_settings("easy", {**OFFICIAL, "user.evaluator": True}).user.evaluator is True
    ours = build_settings("easy")
    assert (ours.user.evaluator, ours.user.summarizer, ours.user.max_rewrites) == (True, True, 3)
    with pytest.raises(ValueError, match="easy mode only"):
        build_settings("hard", OFFICIAL)


def test_stop_anywhere_in_the_reply_stops_only_with_the_official_runner() -> None:
    v, t = _retail1()
    msgs = ["What does this wine cost?", "Thanks, that is all. STOP", "and more"]
    off = run_episode(
        v, t, NoneAgent(), ScriptedUser(msgs), build_settings("easy", OFFICIAL), _blind(t)
    )
    assert off.stop_reason == "user_stop"
    assert [d.text for d in off.dialogue if d.role == "user"] == msgs[:2]
    ours = run_episode(v, t, NoneAgent(), ScriptedUser(msgs), build_settings("easy"), _blind(t))
    assert [d.text for d in ours.dialogue if d.role == "user"] == [*msgs, "STOP"]


class Batches(NoneAgent):
    """Three get_price calls per step, forever."""

    def step(self) -> AgentStep:
        call = ToolCall(name="get_price", arguments={"product_name": "zonin"})
        return AgentStep(calls=[call] * 3)


def test_past_the_call_limit_the_turn_ends_not_the_episode() -> None:
    v, t = _retail1()
    s = build_settings("easy", {**OFFICIAL, "limits.max_tool_calls": 7})
    rec = run_episode(v, t, Batches(), ScriptedUser(["go", "again"]), s, _blind(t))
    # batches of 3 run whole; after 9 > 7 the turn ends; the next turn runs one batch (12 > 7)
    assert rec.stop_reason == "user_stop" and len(rec.calls) == 12
    agent_lines = [d.text for d in rec.dialogue if d.role == "agent"]
    assert agent_lines == ["[Interaction stopped: tool calls exceeded 7]"] * 2
    ours = run_episode(
        v,
        t,
        Batches(),
        ScriptedUser(["go"]),
        build_settings("easy", {"limits.max_tool_calls": 7}),
        _blind(t),
    )
    assert ours.stop_reason == "max_tool_calls" and len(ours.calls) == 7


def test_backend_failures_become_the_utterance_error() -> None:
    v, t = _retail1()

    def boom(messages, tools):
        raise EngineError("connection refused")

    s = build_settings("easy", OFFICIAL)
    rec = run_episode(v, t, ModelAgent(FakeEngine(boom), "x"), ScriptedUser(["hi"]), s, _blind(t))
    assert rec.stop_reason == "user_stop"
    assert [d.text for d in rec.dialogue if d.role == "agent"] == ["Error: connection refused"]
    assert rec.errors == ["agent engine: connection refused"]
    user = ModelUser(FakeEngine(boom), t, "retail", s)
    rec2 = run_episode(
        v,
        t,
        NoneAgent(),
        user,
        build_settings("easy", {**OFFICIAL, "limits.max_user_turns": 2}),
        _blind(t),
    )
    assert [d.text for d in rec2.dialogue if d.role == "user"] == ["Error: connection refused"] * 2
    assert rec2.stop_reason == "max_user_turns"
    ours = run_episode(
        v,
        t,
        NoneAgent(),
        ModelUser(FakeEngine(boom), t, "retail", build_settings("easy")),
        build_settings("easy"),
        _blind(t),
    )
    assert ours.stop_reason == "error"


def test_opening_line_and_one_rewrite_without_a_second_verdict() -> None:
    v, t = _retail1()
    eng = _user_engine("What does this wine cost?", verdicts=[NO, NO, NO])
    s = build_settings("easy", {**OFFICIAL, "user.evaluator": True})
    turn = ModelUser(eng, t, "retail", s).first()
    assert eng.calls[0][0][-1].text() == OFFICIAL_OPENING
    assert OFFICIAL_OPENING.endswith(
        "Let's begin the conversation.\nDear customer, how can I help you?"
    )
    evaluator = [1 for m, _ in eng.calls if "review one message" in m[0].text()]
    actor = [1 for m, _ in eng.calls if "role-playing" in m[0].text()]
    assert len(evaluator) == 1 and len(actor) == 2 and turn.verdict.rewrites == 1
    eng2 = _user_engine("Hi")
    ModelUser(eng2, t, "retail", build_settings("easy")).first()
    assert eng2.calls[0][0][-1].text() == OPENING


def test_tool_results_go_back_as_one_tool_execution_result_message() -> None:
    v, t = _retail1()
    batch = json.dumps(
        [
            {"name": "get_price", "arguments": {"product_name": "ZONIN Chianti"}},
            {"name": "fly_to_the_moon", "arguments": {}},
        ]
    )

    def reply(messages, tools):
        return "Done." if "Tool execution result" in messages[-1].text() else batch

    eng = FakeEngine(reply)
    s = build_settings("easy", OFFICIAL)
    rec = run_episode(v, t, ModelAgent(eng, "fake"), ScriptedUser(["price?"]), s, _blind(t))
    msg = eng.calls[1][0][-1]
    assert msg.role == "user" and msg.text().startswith("Tool execution result: ")
    out, err = rec.calls[0].result.output, rec.calls[1].result.error
    assert err and not rec.calls[1].result.ok
    # the output itself (no ok wrapper), then {"error": ...}, joined by "; "
    assert msg.text() == (
        "Tool execution result: "
        + json.dumps(out, ensure_ascii=False)
        + "; "
        + json.dumps({"error": err}, ensure_ascii=False)
    )


def test_video_file_goes_to_engines_that_take_it_else_frames(tmp_path) -> None:
    import base64

    import numpy as np

    from interactscope.egobench.agents import Visual
    from interactscope.engines import VideoPart
    from interactscope.engines.openai_compat import to_openai_messages

    v, t = _retail1()
    clip = tmp_path / "retail1.mp4"
    clip.write_bytes(b"\x00\x00\x00\x18ftypmp42-not-a-real-video")
    visual = Visual(
        sees_pixels=True, frames=[np.zeros((8, 8, 3), np.uint8)], pts_s=[0.0], video=str(clip)
    )

    def first_video(engine, video: str) -> VideoPart:
        s = build_settings("easy", {"agent.video": video})
        run_episode(v, t, ModelAgent(engine, "x"), ScriptedUser(["hi"]), s, visual)
        return next(p for p in engine.calls[0][0][1].parts() if isinstance(p, VideoPart))

    takes = FakeEngine(lambda m, tools: "Hello.")
    takes.video_file = True
    part = first_video(takes, "file")
    assert part.path == str(clip) and part.frames == []
    wire = to_openai_messages([{"role": "user", "content": [part]}])[0]["content"][0]
    assert wire == {
        "type": "video_url",
        "video_url": {
            "url": "data:video/mp4;base64," + base64.b64encode(clip.read_bytes()).decode()
        },
    }
    assert len(first_video(FakeEngine(lambda m, tools: "Hello."), "file").frames) == 1  # no flag
    takes2 = FakeEngine(lambda m, tools: "Hello.")
    takes2.video_file = True
    assert first_video(takes2, "frames").path is None
