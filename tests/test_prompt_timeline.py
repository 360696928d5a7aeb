"""Prompt v3 (the ``timeline`` layout, issue 29): native audio [0, t] as consecutive segments of
``audio.segment_s`` on the frames' timeline, the partial last segment after the newest frame, so
consecutive Offline Probing prompts share every earlier frame and every complete segment; the
shipped Omni configs use it with segments their audio encoders window identically."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from interactscope.streaming.protocol.prompts import audio_segments, build_messages, layout_of
from interactscope.streaming.settings import Settings
from tests.test_prompt_layout import REQ, _obs, _user

REPO = Path(__file__).resolve().parents[1]

HEAD3 = "The stream so far, in time order (one frame per second, the audio in parts):"


@lru_cache(maxsize=1)
def _demo():
    from interactscope.streaming.bench import load_benchmark

    bench = load_benchmark(REPO / "annotations" / "demo", probe_media=False)
    return bench, next(i for i in bench.interactions if i.id == "t1-taxi")


def _request(t: float, **settings):
    """The demo's T1 taxi request at t over synthetic media (``tests/test_prompt_layout``), its
    frames picked by the settings' ``frames.max`` and ``frames.cap_policy``."""
    from dataclasses import replace

    from interactscope.media.causal import select_indices
    from interactscope.streaming.protocol.requests import request_at

    bench, it = _demo()
    s = Settings.model_validate({"prompt_version": "v3", **settings})
    obs = _obs(t, s.audio.mode, 10**6)
    keep = select_indices(len(obs.frames), s.frames.max, s.frames.cap_policy)
    obs = replace(obs, frames=[obs.frames[i] for i in keep])
    return request_at(bench, it, t, s, observation=obs)


def test_audio_segments_hand_worked_sample_counts():
    # 4.5 s at 16 kHz = 72000 samples in 2 s = 32000-sample segments: two full, 8000 left
    assert audio_segments(72000, 16000, 2.0) == [(0, 32000), (32000, 64000), (64000, 72000)]
    # exactly 16 s in 8 s segments: two full ones, no empty third
    assert audio_segments(256000, 16000, 8.0) == [(0, 128000), (128000, 256000)]
    # 0.5 s segments at 22050 Hz: round(11025) samples; 1.2 s = 26460 = 11025 * 2 + 4410
    assert audio_segments(26460, 22050, 0.5) == [(0, 11025), (11025, 22050), (22050, 26460)]
    assert audio_segments(72000, 16000, None) == [(0, 72000)]  # unset: one item [0, t]
    assert audio_segments(0, 16000, 8.0) == []  # t = 0: nothing heard
    with pytest.raises(ValueError, match="segment_s"):
        audio_segments(100, 16000, 1e-6)


def test_segments_are_exactly_the_waveform_no_sample_lost_or_repeated():
    for n in (1, 127999, 128000, 128001, 1_000_003):
        bounds = audio_segments(n, 16000, 8.0)
        assert bounds[0][0] == 0 and bounds[-1][1] == n
        assert all(a1 == b0 for (_, a1), (b0, _) in zip(bounds, bounds[1:], strict=False))
        assert all(b - a == 128000 for a, b in bounds[:-1]) and 0 < bounds[-1][1] - bounds[-1][0]


def test_timeline_layout_hand_worked_at_t_9_with_4_s_segments():
    """t = 9 s: frames 0..9; audio 144000 samples = [0, 4) + [4, 8) full, [8, 9] the tail. The
    segment ending at 4 s comes after the frame at 4 s, the tail after the newest frame."""
    msgs = build_messages(_request(9.0, audio={"segment_s": 4}))
    frames = [line for k in range(1, 10) for line in (f"[frame at {k}.0 s]", f"image@{k}")]
    want = [f"{REQ}\n{HEAD3}\n[frame at 0.0 s]", "image@0", *frames[:8]]
    want += ["[audio from 0.0 s to 4.0 s]", "audio:64000", *frames[8:16]]
    want += ["[audio from 4.0 s to 8.0 s]", "audio:64000", *frames[16:]]
    want += ["[audio from 8.0 s to 9.0 s]", "audio:16000"]
    got = _user(msgs)
    assert got[:-1] == want
    assert got[-1].startswith("Current stream time: t = 9.0 s.")
    audio = [p["audio"] for p in msgs[1]["content"] if p["type"] == "audio"]
    whole = _obs(9.0).audio
    assert np.array_equal(np.concatenate(audio), whole)  # the waveform [0, t], nothing else


def _media(msgs):
    """(kind, text or bytes) of every user part up to the last media part."""
    out = []
    for p in msgs[1]["content"]:
        if p["type"] == "text":
            out.append(("text", p["text"]))
        else:
            a = p.get("image", p.get("audio"))
            out.append((p["type"], np.ascontiguousarray(a).tobytes()))
    last = max(i for i, (k, _) in enumerate(out) if k != "text")
    return out[: last + 1]


@pytest.mark.parametrize("policy", ["stride", "uniform"])
def test_consecutive_prompts_share_every_frame_and_complete_segment(policy):
    """t -> t + 1 (4 s segments, cap 8): every media part of t but the newest frame and the tail
    is again at its place at t + 1, within the cap (there the newest frame too) and past it with
    ``stride``, but where its stride doubles, at t + 1 = 8 and 15 s (9 frames in 8 slots take
    stride 2; 16 frames, as 0, 2, .., 14 is 8 picks + the newest, stride 4); past the cap the
    newest frame at t leaves at t + 1 when it is not a multiple of the stride. ``uniform`` moves
    the picks past the cap."""
    kept = []
    for t in range(1, 24):
        s = {"audio": {"segment_s": 4}, "frames": {"max": 8, "cap_policy": policy}}
        a, b = (_media(build_messages(_request(float(x), **s))) for x in (t, t + 1))
        assert a[-1][0] == "audio" and a[-2][1].startswith("[audio from")  # the tail, last
        assert a[-3][0] == "image" and a[-4][1] == f"[frame at {t}.0 s]"  # the newest frame
        if t + 1 < 8:
            assert b[: len(a) - 2] == a[:-2]  # within the cap: all but the tail
        kept.append(b[: len(a) - 4] == a[:-4])
    if policy == "stride":
        assert [t for t, ok in zip(range(1, 24), kept, strict=True) if not ok] == [7, 14]
    else:
        assert all(kept[:6]) and not any(kept[6:])  # from t + 1 = 8 s (9 frames) on


def test_a_full_tail_is_the_next_prompts_complete_segment():
    """At t = 8 s the tail [4, 8] is full; at t = 9 s it is a complete segment at the same place,
    so the prompt at 9 s shares the one at 8 s up to its last part."""
    a, b = (_media(build_messages(_request(x, prompt_version="v3", audio={"segment_s": 4})))
            for x in (8.0, 9.0))  # fmt: skip
    assert a[-2] == ("text", "[audio from 4.0 s to 8.0 s]") and b[: len(a)] == a


def test_segments_need_the_timeline_layout_and_unset_is_one_item():
    with pytest.raises(ValueError, match=r"audio.segment_s = 8.0 needs a timeline .*'v2'"):
        build_messages(_request(3.0, prompt_version="v2", audio={"segment_s": 8}))
    got = _user(build_messages(_request(3.0, prompt_version="v3")))
    assert got[-3:-1] == ["[audio from 0.0 s to 3.0 s]", "audio:48000"]  # after frame 3
    assert got[-4] == "image@3"
    assert (layout_of("v2"), layout_of("v3")) == ("prefix", "timeline")


def test_segment_setting_recorded_only_when_set():
    """run.json of runs made before issue 29 (no ``audio.segment_s``) stays as it was."""
    assert "segment_s" not in Settings().model_dump()["audio"]
    assert Settings(audio={"segment_s": 8}).model_dump()["audio"]["segment_s"] == 8.0
    assert Settings.model_validate(Settings().model_dump()) == Settings()


@pytest.mark.parametrize("name", ["qwen2.5-omni-7b", "qwen3-omni"])
def test_shipped_omni_configs_default_to_the_timeline_and_fit_the_encoder_windows(name):
    """The segments are a multiple of the audio encoder's windows: Qwen2.5-Omni attends within
    chunks of ``2 * n_window`` = 200 mel frames (2 s at 100 frames/s); Qwen3-Omni convolves
    chunks of 100 frames (1 s) and attends within ``n_window_infer`` = 800 frames (8 s)
    (transformers ``chunk_and_pad_features`` / ``get_audio_cu_seqlens``)."""
    import yaml

    from interactscope.core.resources import bundled_models_dir
    from interactscope.streaming.collect import resolve_settings

    config = yaml.safe_load((bundled_models_dir() / f"{name}.yaml").read_text())
    s = resolve_settings(config, {})
    assert (s.prompt_version, s.audio.mode, s.audio.segment_s) == ("v3", "native", 8.0)
    assert s.frames.cap_policy == "stride"
    mel_frames = round(s.audio.segment_s * 100)
    assert mel_frames % 200 == 0 and mel_frames % 800 == 0
    # room for the segments of 1024 s of stream (max_model_len binds before: ~980 s)
    assert config["limits"]["limit_mm_per_prompt"]["audio"] * s.audio.segment_s >= 1024


@pytest.mark.slow
def test_qwen_omni_audio_encoders_give_aligned_segments_the_same_features():
    """A tiny random audio encoder of each family over the same log-mel frames: one item of
    650 (1650) frames equals items split at a window boundary, 200 (800) frames; a split inside
    a window, 100 (400) frames, changes the output."""
    import torch
    from transformers.models.qwen2_5_omni import modeling_qwen2_5_omni as q25
    from transformers.models.qwen3_omni_moe import modeling_qwen3_omni_moe as q3

    small = dict(num_mel_bins=128, encoder_layers=1, encoder_attention_heads=2,
                 encoder_ffn_dim=64, d_model=32, output_dim=64)  # fmt: skip
    cases = (
        (q25.Qwen2_5OmniAudioEncoder, q25.Qwen2_5OmniAudioEncoderConfig(**small), 650, 200, 100),
        (q3.Qwen3OmniMoeAudioEncoder,
         q3.Qwen3OmniMoeAudioEncoderConfig(**small, downsample_hidden_size=16), 1650, 800, 400),
    )  # fmt: skip
    torch.manual_seed(0)
    for cls, cfg, total, aligned, inside in cases:
        cfg._attn_implementation = "eager"
        enc = cls(cfg).eval()
        feats = torch.randn(128, total)
        with torch.no_grad():
            out = {n: enc(feats, feature_lens=torch.tensor(n)).last_hidden_state
                   for n in ((total,), (aligned, total - aligned), (inside, total - inside))}  # fmt: skip
        whole = out[(total,)]
        assert torch.allclose(out[(aligned, total - aligned)], whole, atol=1e-6), cls.__name__
        assert not torch.allclose(out[(inside, total - inside)], whole, atol=1e-6), cls.__name__


def test_a_run_made_before_v3_resumes_with_its_layout_named():
    """A run of the Omni config made before (v2, no ``audio.segment_s`` in run.json) differs from
    the bundled config on exactly the two settings; naming them gives its settings back."""
    import yaml

    from interactscope.core.resources import bundled_models_dir
    from interactscope.streaming.collect import resolve_settings
    from interactscope.streaming.settings import diff_settings

    config = yaml.safe_load((bundled_models_dir() / "qwen2.5-omni-7b.yaml").read_text())
    before = Settings(audio={"mode": "native"}, frames={"cap_policy": "stride"}).model_dump()
    now = resolve_settings(config, {}).model_dump()
    assert diff_settings(before, now) == [
        "audio.segment_s: '<unset>' != 8.0",
        "prompt_version: 'v2' != 'v3'",
    ]
    named = resolve_settings(config, {"prompt_version": "v2", "audio.segment_s": None})
    assert diff_settings(before, named.model_dump()) == []


@pytest.mark.slow
def test_the_transformers_engine_takes_the_segments_as_audio_items():
    """The tiny Qwen2.5-Omni thinker answers a v3 prompt at t = 9 s with 4 s segments: three
    audio items (64000, 64000, 16000 samples), and as many audio tokens as the one item [0, 9]
    gets: 900 mel frames -> (900 - 1) // 2 + 1 = 450 -> (450 - 2) // 2 + 1 = 225 (25 per second);
    per segment 100 + 100 + 25."""
    from interactscope.engines.qwen_mm import QwenEngine
    from interactscope.engines.qwen_options import QwenOptions
    from interactscope.streaming.protocol.prompts import build_prompt
    from tests.helpers.tiny_qwen import tiny_omni

    model, proc = tiny_omni()
    opts = QwenOptions.model_validate({"generation": {"max_new_tokens": 2}})
    eng = QwenEngine(opts, "t", model=model, processor=proc)
    eng.load()
    req = _request(9.0, audio={"segment_s": 4})
    rendered = eng.render(build_prompt(req))
    assert [a.shape[0] for a in rendered.audios] == [64000, 64000, 16000]
    ids = eng.processor(**eng.processor_inputs(rendered))["input_ids"][0]
    assert int((ids == proc.tokenizer.convert_tokens_to_ids(proc.audio_token)).sum()) == 225
    result = eng.chat(build_prompt(req))
    assert result.raw["audio_samples"] == 144000 and result.raw["n_frames"] == 10
