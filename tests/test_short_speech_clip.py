"""The demo's speech clip (city_speech.mp4, 7.6 s) is shorter than the 8 s ``audio.segment_s``
of the shipped prompt-v3 configs: the stream audio [0, t] is then one partial segment, never an
empty or a padded one. Hand-worked: 7.6 s at 16 kHz = 121600 samples; the clip's audio stream
starts at 1.936 s (ffprobe), so the causal waveform is silent up to sample 1.936 * 16000 =
30976."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.adapters.registry import load_model_config
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.collect import resolve_settings
from interactscope.streaming.protocol.observation import Observer
from interactscope.streaming.protocol.prompts import audio_segments

DEMO = "annotations/demo"


def test_a_stream_shorter_than_one_segment_is_one_partial_segment() -> None:
    assert audio_segments(121600, 16000, 8.0) == [(0, 121600)]  # t = 7.6 s, the clip end
    assert audio_segments(80000, 16000, 8.0) == [(0, 80000)]  # t = 5 s
    assert audio_segments(16, 16000, 8.0) == [(0, 16)]  # 1 ms


def test_qwen3_omni_prompt_at_the_clip_end_holds_one_segment_of_the_whole_stream() -> None:
    name, config = load_model_config("qwen3-omni")
    settings = resolve_settings(config, {})
    assert (settings.prompt_version, settings.audio.segment_s) == ("v3", 8.0)
    r = CliRunner().invoke(
        app,
        ["prompt", "--model", name, "--bench", DEMO, "--id", "t1-speech", "--at", "7.6", "--json"],
    )
    assert r.exit_code == 0, r.output
    (pv,) = json.loads(r.stdout)  # a no-vLLM warning goes to stderr
    parts = next(m for m in pv["messages"] if m["role"] == "user")["parts"]
    (audio,) = [i for i, p in enumerate(parts) if p["kind"] == "audio"]
    assert (parts[audio]["n_samples"], parts[audio]["sample_rate"]) == (121600, 16000)
    assert parts[audio - 1]["text"] == "[audio from 0.0 s to 7.6 s]"
    frames = [p["pts_s"] for p in parts if p["kind"] in ("image", "video")]
    assert frames[-1][-1] == 7.0  # the newest 1 fps frame, before the segment


def test_the_causal_waveform_is_silent_before_the_audio_stream_starts() -> None:
    b = load_benchmark(DEMO)
    it = b.interaction("t1-speech")
    settings = resolve_settings(load_model_config("qwen3-omni")[1], {})
    obs = Observer(b.media_path(b.video_of(it)), settings, bench_root=b.root).observe(7.6, it)
    wave = np.asarray(obs.audio)
    assert wave.shape == (121600,) and obs.sample_rate == 16000
    assert np.flatnonzero(wave)[0] == 30976
