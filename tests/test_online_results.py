"""Tool results in the Online Rolling session (issue 13): a step's user turn lists the calls the
environment executed since the previous step, each once, with their results."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from interactscope.streaming.protocol.observation import Observation
from interactscope.streaming.protocol.prompts import online_turn
from interactscope.streaming.protocol.types import DecisionRequest
from interactscope.streaming.schema import Interaction, ToolSpec, VideoRecord
from interactscope.streaming.settings import Settings

IT = Interaction.model_validate(
    {
        "id": "i1",
        "video_id": "v",
        "task": "T1",
        "query": {"time_s": 0.0, "text": "Book a table when we reach the restaurant."},
        "targets": [{"id": "k1", "time_s": 3.0, "tools": ["book_table"]}],
    }
)
TOOLS = [ToolSpec(name="book_table", description="Book a table.")]
BOOKED = {"ok": True, "output": {"booking": "B1"}}
FULL = {"ok": False, "error": "no table free"}
EXECUTED = [
    {"t": 1.0, "name": "book_table", "arguments": {"people": 2}, "result": FULL},
    {"t": 2.0, "name": "book_table", "arguments": {"people": 2}, "result": BOOKED},
    {"t": 2.0, "name": "take_photo", "arguments": {}, "result": {"ok": True, "output": None}},
]


def _obs(t: float) -> Observation:
    return Observation(t=t, frames=[], n_frames_available=0, audio=None, has_audio=False,
                       audio_mode="none")  # fmt: skip


def _request(t: float, executed) -> DecisionRequest:
    return DecisionRequest(interaction=IT, video=VideoRecord(id="v", path="v.mp4"),
                           bench_root=Path("."), t=t, settings=Settings(audio={"mode": "none"}),
                           tools=TOOLS, observation=_obs(t), tool_results=executed)  # fmt: skip


def _text(msgs) -> str:
    assert [m["role"] for m in msgs] == ["user"]
    return "\n".join(p["text"] for p in msgs[0]["content"] if p["type"] == "text")


def test_a_step_shows_the_calls_executed_since_the_previous_step():
    # at 3 s, previous step 2 s: the two calls made at 2 s are new, the one at 1 s was shown
    text = _text(online_turn(_request(3.0, EXECUTED), _obs(2.0), first=False))
    lines = text.split("\n")
    i = lines.index("Tool calls you made since 2.0 s and their results:")
    assert lines[i + 1 : i + 3] == [
        '[2 s] book_table({"people": 2}) -> {"booking": "B1"}',
        "[2 s] take_photo({}) -> null",
    ]
    assert "no table free" not in text
    assert lines[-1].startswith("Current stream time: t = 3.0 s.")  # the ask stays last
    assert i == len(lines) - 4


def test_the_session_count_decides_what_is_new():
    # the session showed one result so far: the other two follow, failed calls with their error
    text = _text(online_turn(_request(3.0, EXECUTED[1:]), _obs(2.0), results_shown=0))
    assert '[2 s] book_table({"people": 2}) -> {"booking": "B1"}' in text
    text = _text(online_turn(_request(2.5, EXECUTED[:1]), _obs(2.0), results_shown=0))
    assert '[1 s] book_table({"people": 2}) -> {"error": "no table free"}' in text
    # everything shown already: no block at all
    text = _text(online_turn(_request(4.0, EXECUTED), _obs(3.0), results_shown=3))
    assert "Tool calls" not in text


def test_no_results_no_block_and_the_turn_is_unchanged():
    with_none = online_turn(_request(3.0, []), _obs(2.0))
    assert "Tool calls" not in _text(with_none)
    later = online_turn(_request(4.0, EXECUTED), _obs(3.0))  # nothing at or after 3 s
    assert _text(later) == _text(with_none).replace("3.0 s", "4.0 s").replace("2.0 s", "3.0 s")


def test_the_first_step_shows_every_result_once_in_the_replay():
    msgs = online_turn(_request(2.0, EXECUTED[:1]), None)
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = "\n".join(p["text"] for p in msgs[1]["content"] if p["type"] == "text")
    assert user.count("no table free") == 1
    assert "Tool calls you made since the start and their results:" in user
    assert np.all([p["type"] == "text" for p in msgs[1]["content"]])
