"""The ``change-detector`` control, hand-worked on a synthetic clip: 8 s, 64 x 64 at 25 fps,
black until 3.0 s then white (one hard cut), silent until 5.5 s then a loud noise burst.

Decision grid of q = 0.5 s (q, every integer second after it, the end): 0.5, 1, 2, ..., 8. The
1 fps frame of grid second k is the last frame with pts <= k, so seconds 0-2 are black and 3-8
white: the one visual change is at second 3, first visible at the decision point 3.0 (the first
one >= 3 s). The audio onset at 5.5 s is in audio[0, 6] and not in audio[0, 5]: it fires at
6.0. Nothing else fires."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.media.onsets import audio_onsets, frame_change, resolve_detector
from tests.helpers.media_fixtures import _encode_audio

CUT_S, BURST_S, SECONDS = 3.0, 5.5, 8


def _clip(path: Path) -> Path:
    out = av.open(str(path), "w")
    v = out.add_stream("libx264", rate=25)
    v.width = v.height = 64
    v.pix_fmt = "yuv420p"
    v.codec_context.options = {"preset": "ultrafast"}
    a = out.add_stream("aac", rate=16000)
    a.layout = "mono"
    for i in range(SECONDS * 25):
        img = np.full((64, 64, 3), 255 if i >= CUT_S * 25 else 0, dtype=np.uint8)
        fr = av.VideoFrame.from_ndarray(img, format="rgb24")
        fr.pts, fr.time_base = i, Fraction(1, 25)
        for p in v.encode(fr):
            out.mux(p)
    for p in v.encode():
        out.mux(p)
    wave = np.zeros(SECONDS * 16000, dtype=np.float32)
    burst = np.random.default_rng(0).uniform(-0.5, 0.5, int((SECONDS - BURST_S) * 16000))
    wave[int(BURST_S * 16000) :] = burst
    _encode_audio(out, a, wave[None], 16000)
    out.close()
    return path


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cd")
    (root / "media").mkdir()
    _clip(root / "media" / "cut.mp4")
    tool = {"name": "take_photo", "description": "Take a photo.", "parameters": {"type": "object"}}
    (root / "benchmark.json").write_text(json.dumps({
        "name": "cut", "version": "1", "tools": [tool],
        "videos": [{"id": "cut", "path": "media/cut.mp4"}],
    }))  # fmt: skip
    rows = [
        {"id": "t1-cut", "video_id": "cut", "task": "T1",
         "query": {"time_s": 0.5, "text": "Photo when the light changes.", "tools": ["take_photo"]},
         "targets": [{"id": "k1", "reference": "take_photo", "tools": ["take_photo"],
                      "time_s": 3.0, "evidence": "visual"}]},
        {"id": "t2-cut", "video_id": "cut", "task": "T2",
         "query": {"time_s": 0.5, "text": "Tell me when something happens."},
         "targets": [{"id": "k1", "reference": "The light turned on.", "time_s": 3.0,
                      "evidence": "visual"}]},
    ]  # fmt: skip
    (root / "interactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _fired(run: Path) -> dict[str, list[tuple[float, list[str]]]]:
    out: dict[str, list] = {}
    for line in (run / "responses.jsonl").read_text().splitlines():
        r = json.loads(line)
        if not r["silent"]:
            out.setdefault(r["interaction_id"], []).append(
                (r["t"], [c["name"] for c in r["tool_calls"]])
            )
    return out


def test_frame_change_of_a_hard_cut_is_one():
    black, white = np.zeros((8, 8, 3), np.uint8), np.full((8, 8, 3), 255, np.uint8)
    assert frame_change(black, white) == pytest.approx(1.0)
    assert frame_change(black, black) == 0.0


def test_energy_onset_of_a_burst_after_silence():
    sr = 16000
    x = np.zeros(4 * sr, np.float32)
    x[2 * sr :] = 0.5
    assert audio_onsets(x, sr, "energy") == [2.0]  # level 0.5 = -6 dBFS > -35 from 2.0 s
    assert audio_onsets(x[: 2 * sr], sr, "energy") == []  # the causal prefix before it: none


@pytest.mark.slow
def test_fires_at_the_cut_and_the_onset_never_before(bench, tmp_path):
    out = tmp_path / "run"
    args = ["collect", "--model", "change-detector", "--bench", str(bench), "--out", str(out),
            "--no-progress", "--set", "adapter.audio_detector=energy"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    fired = _fired(out)
    assert fired["t1-cut"] == [(3.0, ["take_photo"]), (6.0, ["take_photo"])]
    assert fired["t2-cut"] == [(3.0, []), (6.0, [])]
    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["audio"]["mode"] == "native"
    # visual only: the cut alone
    out2 = tmp_path / "visual"
    res = CliRunner().invoke(app, [*args[:6], str(out2), "--no-progress", "--set",
                                   "adapter.use_audio=false"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert _fired(out2)["t1-cut"] == [(3.0, ["take_photo"])]


def test_auto_detector_is_silero_with_the_asr_extra():
    pytest.importorskip("faster_whisper")
    assert resolve_detector("auto") == "silero"


def test_demo_panel_places_it_between_blind_fire_and_silent():
    from interactscope.streaming.demo import DemoSettings

    assert DemoSettings().models == ["oracle", "blind-fire", "change-detector", "silent"]
