"""Whisper log-mel features once per stream (engines/qwen_audio.py): the incremental STFT equals the
feature extractor's own output, and tight audio padding in Offline Probing gives the same model
inputs as the window padding."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")

from interactscope.engines.base import AudioPart, Message, TextPart, VideoPart  # noqa: E402
from interactscope.engines.qwen_audio import LogMelCache, tight_audio_length  # noqa: E402
from tests.helpers.tiny_qwen import tiny_omni  # noqa: E402

SR = 16000
# speech-like: noise under a 3 Hz envelope, and 0.3 s of exact silence from 2.5 s on
_RNG = np.random.default_rng(3)
AUDIO = (
    _RNG.normal(0, 0.1, 14 * SR) * (1 + np.sin(np.arange(14 * SR) * 2 * np.pi * 3 / SR))
).astype(np.float32)
AUDIO[int(2.5 * SR) : int(2.8 * SR)] = 0.0
KW = {"sampling_rate": SR, "return_attention_mask": True, "padding": "max_length"}


@pytest.fixture(scope="module")
def fe():
    return tiny_omni()[1].feature_extractor


def _both(fe, wav, cache, **kw):
    ref = fe([wav], **KW, **kw)
    with cache.installed(type("P", (), {"feature_extractor": fe})()):
        got = fe([wav], **KW, **kw)
    return ref, got


@pytest.mark.parametrize("padding", ["window", "tight"])
def test_incremental_log_mel_equals_the_extractor(fe, padding):
    cache = LogMelCache()
    for t in (1.0, 2.0, 2.5, 2.6, 3.0, 4.0, 4.0, 7.3, 9.0, 10.0):
        wav = AUDIO[: int(t * SR)]
        kw = (
            {}
            if padding == "window"
            else {"max_length": tight_audio_length(wav.shape[0], 400, 160, fe.n_samples)}
        )
        ref, got = _both(fe, wav, cache, **kw)
        assert got["input_features"].shape == ref["input_features"].shape
        np.testing.assert_array_equal(got["attention_mask"], ref["attention_mask"])
        np.testing.assert_allclose(got["input_features"], ref["input_features"], atol=2e-5)
    assert cache.frames_reused > 0


def test_frames_reused_worked_by_hand(fe):
    # 1 s then 2 s, tight padding: 16000 samples -> 16320 padded (1 + 16320 / 160 = 103 STFT
    # frames); 32000 -> 32320 (203 frames). The two share the first 16000 samples, so frames k
    # with 160 k + 200 <= 16000 (k = 0..98: 99 frames) are reused and 203 - 99 = 104 computed.
    cache = LogMelCache()
    for n in (16000, 32000):
        _both(fe, AUDIO[:n], cache, max_length=tight_audio_length(n, 400, 160, fe.n_samples))
    assert (cache.frames_reused, cache.frames_computed) == (99, 103 + 104)


def test_sliding_window_reuses_the_shifted_frames(fe):
    # past the extractor's window (the tiny config's n_samples = 160000, 10 s) the audio part is
    # the newest 10 s, so consecutive points' waveforms are the same stream shifted by 1 s =
    # 16000 samples = 100 hops. By hand for [0, 10 s) then [1 s, 11 s): the first is computed
    # whole (1 + 160000 / 160 = 1001 frames); the second shares 144000 samples with the first
    # from its sample 16000 on, so its frames 2 .. 898 (k ≥ 2: no left reflect padding; 160 k +
    # 200 <= 144000) are the first's frames 102 .. 998: 897 reused, 1001 - 897 = 104 computed.
    assert fe.n_samples == 10 * SR
    cache = LogMelCache()
    for start in (0, 1):
        ref, got = _both(fe, AUDIO[start * SR : (start + 10) * SR], cache)
        np.testing.assert_allclose(got["input_features"], ref["input_features"], atol=2e-5)
    assert (cache.frames_reused, cache.frames_computed) == (897, 1001 + 104)
    # a shift that is not a whole number of hops shares no STFT frame: computed whole, still equal
    ref, got = _both(fe, AUDIO[SR + 80 : 11 * SR + 80], cache)
    np.testing.assert_allclose(got["input_features"], ref["input_features"], atol=2e-5)
    assert cache.frames_reused == 897
    for start in (2, 3, 4):  # the window keeps sliding
        ref, got = _both(fe, AUDIO[start * SR : (start + 10) * SR], cache)
        np.testing.assert_allclose(got["input_features"], ref["input_features"], atol=2e-5)
    assert cache.frames_reused == 897 * 4


def test_a_complete_segment_sent_again_is_reused_whole(fe):
    # prompt v3: [0, 4 s) complete and the tail [4 s, 6 s), then the same segment and the tail
    # [4 s, 7 s). Both calls pad to the longest item, 64000 samples -> 64320 (tight: 64000 +
    # 201 rounded up to the hop): 1 + 64320 / 160 = 403 STFT frames per item. Call 1 computes
    # both whole (the tail starts where the segment ends: no prefix shared), 806 frames. Call 2:
    # the segment is the same 64320 samples: its 403 frames come back whole; the tail shares its
    # first 32000 samples with the last tail, frames k with 160 k + 200 <= 32000 (k = 0..198,
    # 199) reused, 403 - 199 = 204 computed. More segments than the prefix entries (4) still hit: the repeat is by content.
    n = tight_audio_length(4 * SR, 400, 160, fe.n_samples)
    assert n == 64320
    cache = LogMelCache()
    fake = type("P", (), {"feature_extractor": fe})()
    for end in (6, 7):
        wavs = [AUDIO[: 4 * SR], AUDIO[4 * SR : end * SR]]
        ref = fe(wavs, **{**KW, "max_length": n})
        with cache.installed(fake):
            got = fe(wavs, **{**KW, "max_length": n})
        np.testing.assert_allclose(got["input_features"], ref["input_features"], atol=2e-5)
    assert (cache.frames_reused, cache.frames_computed) == (403 + 199, 806 + 204)
    cache = LogMelCache(entries=1)
    segments = [AUDIO[k * SR : (k + 1) * SR] for k in range(6)]  # 6 one-second items, twice
    for _ in range(2):
        with cache.installed(fake):
            fe(segments, **{**KW, "max_length": tight_audio_length(SR, 400, 160, fe.n_samples)})
    assert cache.frames_reused == 6 * 103  # every item of the 2nd call: 16000 -> 16320, 103 frames
    cache = LogMelCache()  # a one-item prompt (v2's [0, t]) is not held for repeats
    for _ in range(2):
        _both(fe, AUDIO[:SR], cache, max_length=16320)
    assert cache.frames_reused == 101  # the prefix path: frames k < (16320 - 200) // 160 + 1


def test_unrelated_audio_is_computed_whole(fe):
    cache = LogMelCache()
    _both(fe, AUDIO[:16000], cache)
    ref, got = _both(fe, AUDIO[SR : 3 * SR], cache)  # another start: nothing shared
    np.testing.assert_allclose(got["input_features"], ref["input_features"], atol=2e-5)
    assert cache.frames_reused == 0


def test_dither_goes_to_the_library(fe):
    cache = LogMelCache()
    fe.dither = 1e-3
    try:
        _both(fe, AUDIO[:16000], cache)
        _both(fe, AUDIO[:32000], cache)
    finally:
        fe.dither = 0.0
    assert cache.frames_computed == 0  # never routed through the cache


def _engine(**opts):
    from interactscope.engines.qwen_mm import QwenEngine
    from interactscope.engines.qwen_options import QwenOptions

    model, proc = tiny_omni()
    o = {
        "checkpoint": "tiny",
        "generation": {"max_new_tokens": 6, "temperature": 0.0},
        "processor_kwargs": {"min_pixels": 56 * 56, "max_pixels": 112 * 112},
        **opts,
    }
    eng = QwenEngine(QwenOptions.model_validate(o), "t", model=model, processor=proc)
    eng.load()
    return eng


@pytest.mark.slow
def test_tight_padding_and_the_cache_give_the_window_padding_answers():
    base = _engine(audio_padding="window", audio_feature_cache=False)
    new = _engine()  # defaults: tight padding, log-mel cache on
    assert new.options.audio_padding == "tight" and new.audio_cache is not None
    for t in (1.0, 2.0, 3.0, 4.0):
        msgs = [
            Message(
                role="user", content=[AudioPart(audio=AUDIO[: int(t * SR)]), TextPart(text="t")]
            )
        ]
        a, b = base.process(base.render(msgs)), new.process(new.render(msgs))
        valid = int(a["feature_attention_mask"].sum())
        assert int(b["feature_attention_mask"].sum()) == valid
        assert b["input_features"].shape[-1] < a["input_features"].shape[-1]
        np.testing.assert_allclose(
            b["input_features"][..., :valid].numpy(),
            a["input_features"][..., :valid].numpy(),
            atol=2e-5,
        )
        assert a["input_ids"].tolist() == b["input_ids"].tolist()
        assert base.chat(msgs).text == new.chat(msgs).text
    assert new.audio_cache.frames_reused > 0


# --------------------------------------------------------------------------- one pixel copy


def _video_conv(n: int, text: str = "t"):
    frames = [np.full((56, 56, 3), 30 * k, np.uint8) for k in range(n)]
    return [
        Message(
            role="user",
            content=[
                VideoPart(frames=frames, pts_s=[float(k) for k in range(n)]),
                TextPart(text=text),
            ],
        )
    ]


def test_a_batch_joins_each_distinct_frame_once_with_the_same_inputs():
    import torch

    from interactscope.engines.qwen_frames import TemporalPatch
    from interactscope.engines.qwen_mm import _pieces, collate_left

    eng = _engine(frames_as="video")
    convs = [_video_conv(n) for n in (2, 4, 6, 8)]
    pad = eng._pad_id()
    eager = collate_left([eng.process(eng.render(c)) for c in convs], pad)
    lazy_rows = [eng.process(eng.render(c), lazy=True) for c in convs]
    # each row's pixels are a zero-stride placeholder: no per-row pixel copy
    assert all(r["pixel_values_videos"].stride() == (0, 0) for r in lazy_rows)
    vals = [r["pixel_values_videos"] for r in lazy_rows]
    got = _pieces(vals, eng.frame_cache.pieces_of, "cpu")
    # rows of 1, 2, 3 and 4 frame pairs: 10 temporal patches joined, not built as tensors but
    # written from 8 distinct frames' cached patches (frames 0-7), each moved to the device once
    assert all(isinstance(p, TemporalPatch) for p in got)
    frames = [f for p in got for f in p.frames]
    assert (len(got), len(frames), len({id(f) for f in frames})) == (10, 20, 8)
    lazy = collate_left(lazy_rows, pad, eng.frame_cache.pieces_of, "cpu")
    assert sorted(lazy) == sorted(eager)
    for k, v in eager.items():
        assert torch.equal(lazy[k], v), k
    eng.frame_cache.release()
    with pytest.raises(Exception, match="placeholder without its pieces"):
        collate_left(lazy_rows, pad, eng.frame_cache.pieces_of, "cpu")


def test_batched_answers_equal_single_answers_with_lazy_pixels():
    eng = _engine(frames_as="video")
    convs = [_video_conv(n, f"q{n}") for n in (2, 4, 6)]
    single = [eng.chat(c).text for c in convs]
    batch = eng.chat_batch(convs)
    assert [b.text for b in batch] == single
    assert eng.frame_cache._placeholders == {}  # released after the batch
