"""Prompts are typed messages from the protocol to the adapters (issue 23): ``build_prompt`` /
``online_prompt`` give ``Message`` values with typed parts; ``build_messages`` / ``online_turn``
are exactly their dict form (``prompt_dicts``, the inverse of ``as_messages``), so the recorded
renderings (tests/test_prompt_layout.py) keep every byte."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from interactscope.engines.base import (
    AudioPart,
    ImagePart,
    Message,
    TextPart,
    VideoPart,
    as_messages,
    prompt_dicts,
)
from interactscope.media import Frame
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.protocol.observation import Observation
from interactscope.streaming.protocol.prompts import (
    build_messages,
    build_prompt,
    online_prompt,
    online_turn,
)
from interactscope.streaming.protocol.requests import request_at
from interactscope.streaming.settings import Settings

DEMO = Path(__file__).resolve().parents[1] / "annotations" / "demo"


def _obs(t: float) -> Observation:
    """Frames at 0..floor(t) s (4x6, value 10k) and t s of native 16 kHz audio."""
    frames = [Frame(k, float(k), np.full((4, 6, 3), 10 * k, np.uint8)) for k in range(int(t) + 1)]
    return Observation(t=t, frames=frames, n_frames_available=len(frames),
                       audio=np.zeros(int(t * 16000), np.float32), has_audio=True,
                       query_text="x", audio_mode="native")  # fmt: skip


def _request(t: float, **settings):
    bench = load_benchmark(DEMO, probe_media=False)
    it = next(i for i in bench.interactions if i.id == "t1-taxi")
    return request_at(bench, it, t, Settings.model_validate(settings), observation=_obs(t))


def _same(a: list[dict], b: list[dict], identical: bool = True) -> None:
    """Equal dict forms: same keys in the same order, arrays the very same objects (equal ones
    when ``identical`` is off: two builds slice new audio views)."""
    assert [list(m) for m in a] == [list(m) for m in b]
    for ma, mb in zip(a, b, strict=True):
        assert ma["role"] == mb["role"] and len(ma["content"]) == len(mb["content"])
        for pa, pb in zip(ma["content"], mb["content"], strict=True):
            assert list(pa) == list(pb)
            for k in pa:
                if k in ("image", "audio"):
                    assert pa[k] is pb[k] if identical else np.array_equal(pa[k], pb[k])
                elif k == "video":
                    assert all(x is y for x, y in zip(pa[k], pb[k], strict=True))
                else:
                    assert pa[k] == pb[k]


def test_build_prompt_is_typed_and_build_messages_is_its_dict_form():
    req = _request(3.0)
    typed = build_prompt(req)
    assert [type(m) for m in typed] == [Message, Message]
    kinds = [type(p) for p in typed[1].content]
    # request text, then per frame 0..3 s: label text + image, then the audio label + audio
    assert kinds.count(ImagePart) == 4 and kinds.count(AudioPart) == 1 and TextPart in kinds
    (audio,) = [p for p in typed[1].content if isinstance(p, AudioPart)]
    assert audio.stream and audio.sample_rate == 16000 and len(audio.audio) == 48000
    assert audio.audio is req.observation.audio  # the causal array itself, no copy
    assert [p.pts_s for p in typed[1].content if isinstance(p, ImagePart)] == [0.0, 1.0, 2.0, 3.0]
    dicts = build_messages(req)
    _same(prompt_dicts(typed), dicts)
    assert dicts[1]["content"][-2]["role"] == "stream"  # the dict form keeps its audio role
    _same(prompt_dicts(as_messages(dicts)), dicts)  # the round trip is the identity


def test_video_layout_and_online_steps_are_typed_too():
    req = _request(2.0)
    (video,) = [p for p in build_prompt(req, frames_as="video")[1].content
                if isinstance(p, VideoPart)]  # fmt: skip
    assert video.pts_s == [0.0, 1.0, 2.0] and len(video.frames) == 3
    _same(
        prompt_dicts(build_prompt(req, frames_as="video")), build_messages(req, frames_as="video")
    )
    first = online_prompt(req, None)
    assert [m.role for m in first] == ["system", "user"]
    later_req = _request(3.0)
    later = online_prompt(later_req, req.observation)
    assert [m.role for m in later] == ["user"]
    new_images = [p for p in later[0].content if isinstance(p, ImagePart)]
    assert [p.pts_s for p in new_images] == [3.0]  # only the frame newer than the last step
    (new_audio,) = [p for p in later[0].content if isinstance(p, AudioPart)]
    assert len(new_audio.audio) == 16000 and new_audio.stream  # the samples of (2 s, 3 s]
    _same(prompt_dicts(later), online_turn(later_req, req.observation), identical=False)


def test_the_openai_adapter_builds_and_keeps_typed_messages():
    from types import SimpleNamespace

    from interactscope.streaming.adapters.base import AdapterOutput
    from interactscope.streaming.adapters.openai_backend import OpenAIAdapter, OpenAISession

    req = _request(1.0)
    adapter = OpenAIAdapter.__new__(OpenAIAdapter)  # _build reads nothing of the adapter
    assert all(isinstance(m, Message) for m in adapter._build(req))
    asked = []
    fake = SimpleNamespace(
        options=SimpleNamespace(online_max_images=1),
        settings=SimpleNamespace(silence_token="<SILENT>"),
        ask=lambda msgs, r: asked.append(list(msgs)) or AdapterOutput(text="ok"),
    )
    session = OpenAISession(fake, req.interaction)
    session.step(req)
    session.step(_request(2.0))
    assert all(isinstance(m, Message) for m in session.messages)
    assert [m.role for m in session.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert session.messages[2].content == "ok"
    images = [p for m in session.messages for p in m.parts() if isinstance(p, ImagePart)]
    assert [p.pts_s for p in images] == [2.0]  # online_max_images = 1: the newest frame stays
    notes = [p for m in asked[1] for p in m.parts() if isinstance(p, TextPart)]
    assert sum(p.text == "(older frame removed)" for p in notes) == 2  # frames 0 and 1 s
