"""Online Rolling with a kept KV cache (issue 18): the same greedy answers as re-encoding.

Tiny random-weight Qwen2.5-Omni thinker and Qwen2.5-VL (``tests/helpers/tiny_qwen.py``); a synthetic
stream of distinct noise frames at 1 fps and noise audio at 16 kHz.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")

from interactscope.engines.qwen_audio import tight_audio_length  # noqa: E402
from interactscope.media import Frame  # noqa: E402
from interactscope.streaming.adapters.base import DecisionRequest  # noqa: E402
from interactscope.streaming.adapters.transformers_backend import (  # noqa: E402
    TransformersAdapter,
    _drop_oldest_frames,
)
from interactscope.streaming.protocol.observation import Observation  # noqa: E402
from interactscope.streaming.schema import Interaction, VideoRecord  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.tiny_qwen import tiny_omni, tiny_qwen3_vl, tiny_vl  # noqa: E402

SR = 16000
IT = Interaction.model_validate(
    {
        "id": "memo",
        "video_id": "v",
        "task": "T1",
        "query": {"time_s": 2.0, "text": "Take a photo when the door opens."},
        "targets": [{"id": "k1", "time_s": 5.0, "tools": ["take_photo"]}],
    }
)
VIDEO = VideoRecord(id="v", path="media/v.mp4")
CFG = {
    "generation": {"max_new_tokens": 4, "temperature": 0},
    "processor_kwargs": {"min_pixels": 56 * 56, "max_pixels": 112 * 112},
}


def _frame(i: int) -> Frame:
    rng = np.random.default_rng(1000 + i)
    return Frame(i, float(i), rng.integers(0, 256, (48, 64, 3), dtype=np.uint8))


AUDIO = np.random.default_rng(7).normal(0, 0.1, 30 * SR).astype(np.float32)


def _obs(t: float, fmax: int, audio: bool = True) -> Observation:
    frames = [_frame(i) for i in range(int(np.floor(t)) + 1)]
    shown = frames[-fmax:]
    return Observation(t=t, frames=shown, n_frames_available=len(frames),
                       audio=AUDIO[: round(t * SR)] if audio else None,
                       has_audio=audio)  # fmt: skip


class LogitSpy:
    """Wraps ``generate`` to keep each call's per-token logits (``logits[k]``: (steps, vocab))."""

    def __init__(self, model):
        self.model, self.inner, self.logits = model, model.generate, []

    def __call__(self, **kw):
        out = self.inner(**kw, output_logits=True, return_dict_in_generate=True)
        self.logits.append(np.stack([x[0].float().numpy() for x in out.logits]))
        return out


def _run(model_proc, grid, settings, *, audio=True, **cfg):
    model, proc = model_proc
    ad = TransformersAdapter("tiny", {**CFG, **cfg}, settings, model=model, processor=proc)
    ad.prepare(None)
    spy = LogitSpy(ad.engine.generator)
    ad.engine.generator.generate = spy
    session = ad.open_session(IT, VIDEO)
    outs = []
    try:
        for t in grid:
            obs = _obs(t, settings.frames.max, audio)
            req = DecisionRequest(interaction=IT, video=VIDEO, bench_root=Path("."), t=t,
                                  settings=settings, observation=obs)  # fmt: skip
            out = session.step(req)
            out.extra["logits"] = spy.logits[-1]
            outs.append(out)
    finally:
        del ad.engine.generator.generate  # the class's method again
    return outs, session


def _same_answers(new, old):
    """Greedy texts, prompt lengths and every generated token's logits (to float error)."""
    assert [o.text for o in new] == [o.text for o in old]
    assert [o.prompt_tokens for o in new] == [o.prompt_tokens for o in old]
    for a, b in zip(new, old, strict=True):
        la, lb = a.extra["logits"], b.extra["logits"]
        assert la.shape == lb.shape
        np.testing.assert_allclose(la, lb, atol=2e-4, rtol=0)


GRID = [2.0, 3.0, 4.0, 5.0, 5.5, 6.0, 7.0, 8.0, 9.0]


@pytest.mark.slow
@pytest.mark.parametrize("frames_as", ["video", "image"])
def test_kept_cache_answers_equal_re_encoding_on_tiny_omni(frames_as):
    s = Settings(frames={"max": 32})
    old, _ = _run(tiny_omni(), GRID, s, session_cache=False, frames_as=frames_as)
    new, session = _run(tiny_omni(), GRID, s, session_cache=True, frames_as=frames_as)
    _same_answers(new, old)
    assert session.kept.prefills == 1  # only the first step: no frame ever left
    first, later = new[0].extra, [o.extra for o in new[1:]]
    assert first["session_prefill"] and first["session_cached_tokens"] == 0
    assert not any(e["session_prefill"] for e in later)
    for prev, o in zip(new, new[1:], strict=False):
        # the cache holds the previous prompt: the step runs only the rest through the model
        assert o.extra["session_cached_tokens"] == prev.prompt_tokens
        assert o.extra["session_new_tokens"] == o.prompt_tokens - prev.prompt_tokens
    # one new frame per whole second; 5.5 s brings none
    assert [e["new_frames_sent"] for e in later] == (
        [2, 2, 2, 0, 2, 2, 2, 2] if frames_as == "video" else [1, 1, 1, 0, 1, 1, 1, 1]
    )
    assert sum(o.extra["session_new_tokens"] for o in new) == session.kept.processed_tokens


@pytest.mark.slow
def test_kept_cache_equals_re_encoding_past_the_frame_cap_with_reprefills():
    s = Settings(frames={"max": 4})
    grid = [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    old, so = _run(tiny_omni(), grid, s, session_cache=False, session_reprefill_every=2)
    new, sn = _run(tiny_omni(), grid, s, session_cache=True, session_reprefill_every=2)
    _same_answers(new, old)
    # frames 0..2 at q = 2; one per step after; past 4 held, 2 leave (3 remain): at 4 s, 6 s,
    # 8 s and 10 s (5 frames held each time)
    assert [o.extra["n_frames"] for o in new] == [3, 4, 3, 4, 3, 4, 3, 4, 3]
    prefills = [t for t, o in zip(grid, new, strict=True) if o.extra["session_prefill"]]
    assert prefills == [2.0, 4.0, 6.0, 8.0, 10.0]
    assert sn.kept.prefills == 5 and new[-1].extra["session_frames_dropped"] == 8
    assert so.frames_dropped == sn.frames_dropped == 8


@pytest.mark.slow
@pytest.mark.parametrize("build", [tiny_vl, tiny_qwen3_vl])
def test_kept_cache_answers_equal_re_encoding_on_tiny_vl(build):
    s = Settings(frames={"max": 32}, audio={"mode": "none"})
    old, _ = _run(build(), GRID, s, audio=False, session_cache=False)
    new, session = _run(build(), GRID, s, audio=False, session_cache=True)
    _same_answers(new, old)
    assert session.kept.prefills == 1


@pytest.mark.slow
def test_tight_audio_padding_matches_the_window_padding():
    s = Settings(frames={"max": 32})
    old, _ = _run(tiny_omni(), GRID[:5], s, session_audio_padding="window")
    new, _ = _run(tiny_omni(), GRID[:5], s, session_audio_padding="tight")
    _same_answers(new, old)
    fe = tiny_omni()[1].feature_extractor
    for n in (16000, 16000 + 64, 4000):
        wav = AUDIO[SR : SR + n]
        kw = {"sampling_rate": SR, "return_attention_mask": True, "padding": "max_length"}
        ref = fe([wav], **kw)
        p = tight_audio_length(n, fe.n_fft, fe.hop_length, fe.n_samples)
        got = fe([wav], max_length=p, **kw)
        valid = int(ref["attention_mask"].sum())
        assert int(got["attention_mask"].sum()) == valid and got["input_features"].shape[-1] < 3000
        np.testing.assert_allclose(  # the valid log-mel frames are the same
            got["input_features"][0, :, :valid], ref["input_features"][0, :, :valid], atol=1e-5
        )
    # 1 s = 16000 samples + 201 zeros, rounded up to the 160-sample hop: 16320; 10 s window cap
    assert tight_audio_length(16000, 400, 160, 160000) == 16320
    assert tight_audio_length(159900, 400, 160, 160000) == 160000
    assert tight_audio_length(8000, 400, 160, None) == 8320


def test_frames_leave_k_at_a_time():
    from interactscope.engines.base import Message, VideoPart

    def conv(n):
        video = VideoPart(frames=[np.zeros((2, 2, 3), np.uint8)] * n,
                          pts_s=[float(i) for i in range(n)])  # fmt: skip
        return [Message(role="user", content=[video])]

    m = conv(5)
    assert _drop_oldest_frames(m, 5, 3) == 0  # at the cap: nothing leaves
    m = conv(6)
    assert _drop_oldest_frames(m, 5, 3) == 3 and len(m[0].content[0].frames) == 3
    assert m[0].content[0].pts_s == [3.0, 4.0, 5.0]
    m = conv(6)
    assert _drop_oldest_frames(m, 5, 1) == 1  # K = 1: exactly the cap
    m = conv(7)
    assert _drop_oldest_frames(m, 5, 9) == 6  # K is at most the cap: 1 frame remains


@pytest.mark.slow
def test_evict_keeps_the_cache_past_the_cap_with_the_re_encoded_tokens():
    # frames.max 4, q = 2: the replay holds frames 0..2 as one video part, then one part per
    # step. Past 4 frames the oldest part leaves whole: at 4 s the replay (3 frames), at 7 s
    # frame 3, at 8 s frame 4 (prompt v1: the held text is the re-encoded text less whole
    # visual parts; v2's label of the video above changes with the frames it holds)
    s = Settings(frames={"max": 4}, prompt_version="v1")
    grid = [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    old, _ = _run(tiny_omni(), grid, s, session_cache=False, session_window="evict")
    new, sn = _run(tiny_omni(), grid, s, session_cache=True, session_window="evict")
    assert [o.extra["n_frames"] for o in new] == [3, 4, 2, 3, 4, 4, 4]
    assert [o.extra["n_frames"] for o in old] == [3, 4, 2, 3, 4, 4, 4]
    _same_answers(new[:2], old[:2])  # the same conversation and cache until the first eviction
    assert [o.prompt_tokens for o in new] == [o.prompt_tokens for o in old]
    assert sn.kept.prefills == 1 and sn.kept.evictions == 3  # at 4, 7 and 8 s
    assert not any(o.extra["session_prefill"] for o in new[1:])
    # the tiny processor: a 48x64 frame (under min_pixels 56*56) -> 56x56 px -> 4x4 patches of
    # 14 px -> 4 tokens per frame pair after the 2x2 merge, between the vision start and end
    # tokens: the replay (frames 0..2, padded to 4) holds 2 * 4 + 2 = 10, one frame 4 + 2 = 6
    evicted = [o.extra.get("session_evicted_tokens", 0) for o in new]
    assert evicted == [0, 0, 10, 0, 0, 6, 6]
    # the held tokens are exactly those re-encoding the same conversation gives
    eng = sn.adapter.engine
    held = eng.process(eng.render(sn.messages[:-1]))["input_ids"]
    assert sn.kept.ids[0].tolist() == held[0].tolist()
    # each step ran only its new tokens: flat, never the whole conversation again
    assert max(o.extra["session_new_tokens"] for o in new[1:]) < new[0].prompt_tokens


def test_session_options_are_recorded():
    model, proc = tiny_omni()
    ad = TransformersAdapter("tiny", {**CFG, "session_window": "evict"}, Settings(),
                             model=model, processor=proc)  # fmt: skip
    assert ad.describe()["session"] == {
        "cache": True,
        "max_frames": 32,  # frames.max
        "reprefill_every": 16,  # half the cap
        "window": "evict",
        "audio_padding": "tight",
        "history": "all",  # evict keeps every turn
    }
    with pytest.raises(Exception, match="session_window"):
        TransformersAdapter("tiny", {**CFG, "session_window": "slide"}, Settings(),
                            model=model, processor=proc)  # fmt: skip


@pytest.mark.slow
def test_evict_with_image_frames_drops_one_frame_a_step():
    s = Settings(frames={"max": 4})
    grid = [2.0, 3.0, 4.0, 5.0, 6.0]
    old, _ = _run(tiny_omni(), grid, s, frames_as="image", session_cache=False,
                  session_window="evict")  # fmt: skip
    new, sn = _run(tiny_omni(), grid, s, frames_as="image", session_window="evict")
    assert [o.extra["n_frames"] for o in new] == [3, 4, 4, 4, 4]
    _same_answers(new[:2], old[:2])
    # one image (56x56 px: 4 tokens + vision start and end) leaves the cache at each step
    assert [o.extra.get("session_evicted_tokens", 0) for o in new] == [0, 0, 6, 6, 6]
    assert [o.prompt_tokens for o in new] == [o.prompt_tokens for o in old]
    eng = sn.adapter.engine
    held = eng.process(eng.render(sn.messages[:-1]))["input_ids"]
    assert sn.kept.ids[0].tolist() == held[0].tolist() and sn.kept.prefills == 1


def _prefill_sizes(outs):
    return [o.prompt_tokens for o in outs if o.extra.get("session_prefill")]


@pytest.mark.slow
def test_history_window_bounds_the_re_prefill():
    # frames.max 4, K = 2: past the cap two frames leave every second step and the cache is
    # prefilled again; with session_history: window the turns whose frames left go too, so every
    # re-prefill holds the instruction turn and the same few later turns: it does not grow with t
    s = Settings(frames={"max": 4})
    grid = [float(t) for t in range(2, 26)]
    win, sw = _run(tiny_omni(), grid, s, session_reprefill_every=2)
    enc, _ = _run(tiny_omni(), grid, s, session_reprefill_every=2, session_cache=False)
    _same_answers(win, enc)  # the kept cache still equals re-encoding the trimmed conversation
    # the first prefill is the replay at q; the first re-prefill (t = 4 s) drops frames of the
    # replay turn only, so later turns are first dropped from the second one (t = 6 s) on
    spikes = _prefill_sizes(win)[2:]
    assert len(spikes) >= 8
    assert max(spikes) <= 1.1 * min(spikes)
    assert win[-1].extra["session_turns_dropped"] > 0
    # a user turn holds one new frame: at most the cap's frames' turns (+ the newest) are held
    assert len(sw.messages) <= 2 + 2 * (4 + 1) + 1
    # with every turn kept the same points' re-prefills grow with t
    old, _ = _run(tiny_omni(), grid, s, session_reprefill_every=2, session_history="all")
    grown = _prefill_sizes(old)[2:]
    assert grown[-1] > 1.5 * grown[0]
