"""Versioned prompt templates (SPEC §2; issue 5): what each decision request tells the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from interactscope.media import Frame
from interactscope.streaming.adapters.base import DecisionRequest
from interactscope.streaming.protocol import prompts
from interactscope.streaming.protocol.observation import AttachmentView, Observation
from interactscope.streaming.protocol.prompts import (
    PROMPT_VERSION,
    TEMPLATES,
    build_messages,
    fmt_time,
    messages_to_text,
    online_turn,
    render_text,
)
from interactscope.streaming.schema import Interaction, ResponseRecord, ToolSpec, VideoRecord
from interactscope.streaming.settings import Settings

TOOLS = [
    ToolSpec(name="take_photo", description="Take a photo.", parameters={"type": "object"}),
    ToolSpec(name="start_voice_memo", description="Start a voice memo."),
]


def _interaction(task="T1", q=0.0, text="Take a photo when a cyclist appears.", **kw):
    return Interaction.model_validate(
        {
            "id": "i1",
            "video_id": "v",
            "task": task,
            "query": {"time_s": q, "text": text, **kw},
            "targets": [{"id": "k1", "time_s": 5.0}],
        }
    )


def _frames(seconds, h=8, w=10):
    return [
        Frame(int(s), float(s), np.full((h, w, 3), int(s) * 5 % 256, np.uint8)) for s in seconds
    ]


def _obs(t, seconds=None, audio=True, transcript=None, words=(), **kw):
    seconds = list(range(int(t) + 1)) if seconds is None else seconds
    return Observation(
        t=t,
        frames=_frames(seconds),
        n_frames_available=kw.pop("n_available", len(seconds)),
        audio=np.arange(round(t * 16000), dtype=np.float32) if audio else None,
        transcript=transcript,
        words=tuple(words),
        has_audio=audio,
        query_text="x",
        **kw,
    )


def _request(t, obs, settings=None, tools=TOOLS, history=(), interaction=None):
    return DecisionRequest(
        interaction=interaction or _interaction(),
        video=VideoRecord(id="v", path="v.mp4"),
        bench_root=Path("."),
        t=t,
        settings=settings or Settings(prompt_version="v1"),
        tools=list(tools),
        observation=obs,
        history=list(history),
    )


def _kinds(msg):
    return [p["type"] for p in msg["content"]]


def _text_of(msg):
    return "\n".join(p["text"] for p in msg["content"] if p["type"] == "text")


def test_version_constant_matches_settings_default_and_unknown_version_raises():
    # v2 (prefix layout) is the default for new runs since issue 25; v1 stays selectable
    assert PROMPT_VERSION == "v2" == Settings().prompt_version
    assert "v1" in TEMPLATES
    with pytest.raises(KeyError, match="v9"):
        build_messages(_request(1.0, _obs(1.0), Settings(prompt_version="v9")))


def test_fmt_time_writes_seconds_with_one_to_three_decimals():
    assert fmt_time(12) == "12.0 s"
    assert fmt_time(3.25) == "3.25 s"
    assert fmt_time(7.6) == "7.6 s"
    assert fmt_time(0.125) == "0.125 s"


def test_system_states_role_silence_token_tools_and_call_format():
    msgs = build_messages(_request(12.0, _obs(12.0, seconds=[10, 11, 12])))
    assert [m["role"] for m in msgs] == ["system", "user"]
    system = _text_of(msgs[0])
    assert "always-on assistant" in system and "first-person" in system
    assert "answer with exactly <SILENT> and nothing else" in system
    assert '- take_photo: Take a photo. Parameters (JSON Schema): {"type": "object"}' in system
    assert "- start_voice_memo: Start a voice memo." in system
    assert '```json\n{"name": "<tool name>", "arguments": {...}}\n```' in system
    user = _text_of(msgs[1])
    assert "User request (made at 0.0 s): Take a photo when a cyclist appears." in user
    assert user.endswith(
        "Current stream time: t = 12.0 s. Respond now if the request calls for it at this "
        "moment, otherwise answer exactly <SILENT>."
    )


def test_no_tool_catalogue_without_tools_and_custom_silence_token():
    s = Settings(silence_token="<QUIET>", prompt_version="v1")
    msgs = build_messages(_request(2.0, _obs(2.0), s, tools=[]))
    system = _text_of(msgs[0])
    assert "tools" not in system and "```json" not in system
    assert "answer with exactly <QUIET> and nothing else" in system
    assert "<SILENT>" not in messages_to_text(msgs)


def test_user_turn_carries_frames_with_times_and_the_audio_array_in_order():
    obs = _obs(3.4, seconds=[0, 1, 2, 3])
    msgs = build_messages(_request(3.4, obs))
    user = msgs[1]["content"]
    assert _kinds(msgs[1]) == ["text", "image", "text", "image", "text", "image", "text", "image",
                               "text", "audio", "text"]  # fmt: skip
    images = [p for p in user if p["type"] == "image"]
    assert [p["pts_s"] for p in images] == [0.0, 1.0, 2.0, 3.0]
    assert images[3]["image"] is obs.frames[3].image  # our arrays, never paths
    assert "[frame at 2.0 s]" in user[4]["text"]
    assert "The stream so far (0 s to 3.4 s):" in user[0]["text"]
    audio = user[9]
    assert audio["audio"] is obs.audio and audio["sampling_rate"] == 16000
    assert audio["audio"].shape == (54400,)
    assert "Audio from 0 s to 3.4 s:" in user[8]["text"]


def test_capped_frames_are_announced():
    obs = _obs(40.0, seconds=[0, 13, 26, 40], n_available=41)
    text = messages_to_text(build_messages(_request(40.0, obs)))
    assert "(4 of the 41 frames so far, one per second)" in text


def test_frames_as_video_gives_one_video_part():
    obs = _obs(2.0)
    user = build_messages(_request(2.0, obs), frames_as="video")[1]["content"]
    vids = [p for p in user if p["type"] == "video"]
    assert len(vids) == 1 and not any(p["type"] == "image" for p in user)
    assert vids[0]["pts_s"] == [0.0, 1.0, 2.0] and len(vids[0]["video"]) == 3
    assert "[video: 3 frames, at 0.0 s, 1.0 s, 2.0 s]" in _text_of({"content": user})


def test_history_lists_the_models_own_last_responses():
    hist = [
        ResponseRecord(interaction_id="i1", t=3.0, text="A cyclist!", silent=False),
        ResponseRecord(interaction_id="i1", t=5.0, text="Another one.", silent=False),
    ]
    text = _text_of(build_messages(_request(6.0, _obs(6.0), history=hist))[1])
    assert "Your previous responses in this stream:\n[3.0 s] A cyclist!\n[5.0 s] Another one." in (
        text
    )
    assert "previous responses" not in _text_of(build_messages(_request(6.0, _obs(6.0)))[1])


def test_text_only_rendering_omits_pixels_and_audio_keeps_transcript():
    obs = _obs(5.0, audio=False, transcript="hello there")
    msgs = render_text(_request(5.0, obs))
    assert all(isinstance(m["content"], str) for m in msgs)
    assert "You cannot see the video" in msgs[0]["content"]
    assert "(6 video frames omitted: this model cannot see them)" in msgs[1]["content"]
    assert "Speech heard so far (automatic transcript): hello there" in msgs[1]["content"]
    parts = build_messages(_request(5.0, _obs(5.0)), text_only=True)[1]["content"]
    assert {p["type"] for p in parts} == {"text"}


def test_empty_transcript_is_stated():
    text = messages_to_text(build_messages(_request(1.0, _obs(1.0, audio=False, transcript=""))))
    assert "Speech heard so far (automatic transcript): (none)" in text


def test_scene_none_and_no_observation_give_the_request_only():
    s = Settings(scene="none", prompt_version="v1")
    msgs = build_messages(_request(4.0, None, s))
    assert "No camera or microphone input is available" in _text_of(msgs[0])
    assert _kinds(msgs[1]) == ["text"]
    assert "stream so far" not in _text_of(msgs[1])
    assert "t = 4.0 s" in _text_of(msgs[1])


def test_attachments_image_part_and_spoken_request():
    img = np.zeros((4, 4, 3), np.uint8)
    it = _interaction(text="", attachments=[{"kind": "audio", "path": "q.wav"}])
    obs = _obs(2.0, attachments=[AttachmentView("image", "a.png", image=img),
                                 AttachmentView("audio", "q.wav", heard_s=1.0)])  # fmt: skip
    user = build_messages(_request(2.0, obs, interaction=it))[1]["content"]
    assert user[0]["text"].startswith("User request (spoken at 0.0 s; it is in the audio")
    att = [p for p in user if p.get("attachment")]
    assert len(att) == 1 and att[0]["image"] is img
    assert "Audio attached to the request: it plays in the stream from 0.0 s." in user[2]["text"]
    obs_asr = _obs(2.0, audio=False, transcript="", attachments=[
        AttachmentView("audio", "q.wav", transcript="what is that")])  # fmt: skip
    text = messages_to_text(build_messages(_request(2.0, obs_asr, interaction=it)))
    assert "Audio attached to the request (transcript so far): what is that" in text


def test_online_turn_replays_then_appends_only_what_is_new():
    s = Settings(prompt_version="v1")
    first_obs = _obs(2.0)
    first = online_turn(_request(2.0, first_obs, s), None)
    assert [m["role"] for m in first] == ["system", "user"]
    assert "The stream so far (0 s to 2.0 s), replayed:" in _text_of(first[1])
    assert [p["pts_s"] for p in first[1]["content"] if p["type"] == "image"] == [0.0, 1.0, 2.0]
    nxt_obs = _obs(3.5, seconds=[0, 1, 2, 3])
    nxt = online_turn(_request(3.5, nxt_obs, s), first_obs)
    assert [m["role"] for m in nxt] == ["user"]
    parts = nxt[0]["content"]
    assert [p["pts_s"] for p in parts if p["type"] == "image"] == [3.0]
    audio = [p["audio"] for p in parts if p["type"] == "audio"]
    assert len(audio) == 1 and audio[0].shape == (56000 - 32000,)
    assert audio[0][0] == 32000.0  # the continuation of the stream, sample 32000 on
    assert "New in the stream since 2.0 s (up to 3.5 s):" in parts[0]["text"]
    assert _text_of(nxt[0]).endswith("otherwise answer exactly <SILENT>.")


def test_online_turn_new_transcript_words_only():
    from interactscope.media import Word

    w = [Word(" hello", 0.5, 1.0), Word(" there", 2.2, 2.8)]
    a = _obs(2.0, audio=False, transcript="hello", words=w[:1])
    b = _obs(3.0, audio=False, transcript="hello there", words=w)
    text = _text_of(online_turn(_request(3.0, b), a)[0])
    assert "Speech heard since 2.0 s (automatic transcript): there" in text
    assert "hello" not in text


def test_template_wording_is_data_keyed_by_version():
    tp = prompts.get_template("v1")
    assert tp.silence.format(token="<X>") == (
        "If you should not respond at this moment, answer with exactly <X> and nothing else."
    )
