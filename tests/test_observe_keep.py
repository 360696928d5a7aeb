"""``CausalMedia(keep_only=)`` and ``observe()`` at source size (issue 29: one observation holds
only the <= max_frames samples it picks): the same output as a full decode, bounded memory."""

from __future__ import annotations

import importlib
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

import interactscope.media.causal as causal
from interactscope.media.causal import POLICIES, CausalMedia
from interactscope.media.observe import observe
from tests.helpers.foundation_fixtures import CITY  # 7.6 s, samples at 0..7 s
from tests.helpers.media_fixtures import (
    TICK,
    _encode_audio,
    code_image,
    vfr_ticks,
    write_coded_video,
)

observe_mod = importlib.import_module(
    "interactscope.media.observe"
)  # the package exports observe()
W, H = 192, 64
SAMPLE_BYTES = W * H * 3 // 2  # one stored yuv420p sample of the synthetic clips


def _write_late_long(path: Path) -> Path:
    """H.264 192x64 at 2 fps from 0.4 s (ticks 120, 270, ..., 13470 of 1/300 s: 90 frames, the
    last at 44.9 s, shown until 45.4 s) + AAC 16 kHz mono audio on [0, 47.3) s: the clip ends on
    the audio, so the samples are seconds 1..47 and 45..47 show the last frame (pts 44.9)."""
    out = av.open(str(path), "w")
    v = out.add_stream("libx264", rate=2)
    v.width, v.height, v.pix_fmt = W, H, "yuv420p"
    v.codec_context.time_base = v.time_base = TICK
    v.codec_context.options = {"bf": "2", "g": "8", "preset": "ultrafast"}
    a = out.add_stream("aac", rate=16000)
    a.layout = "mono"
    for i, tk in enumerate(range(120, 13500, 150)):
        fr = av.VideoFrame.from_ndarray(code_image(i), format="rgb24")
        fr.pts, fr.time_base = tk, TICK
        for p in v.encode(fr):
            p.duration = 150
            out.mux(p)
    for p in v.encode():
        p.duration = 150
        out.mux(p)
    t = np.arange(int(47.3 * 16000)) / 16000
    _encode_audio(out, a, (0.2 * np.sin(2 * np.pi * 330 * t))[None].astype(np.float32), 16000)
    out.close()
    return path


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("keep")
    vfr = [tk + 45 for tk in vfr_ticks()]  # VFR + B-frames, first frame at 0.15 s, rotated
    return {
        "demo": CITY,
        "late_long": _write_late_long(d / "late_long.mp4"),
        "rotated_vfr": write_coded_video(d / "rot.mp4", vfr, 3045, rotation=90),
    }


def _times(duration: float) -> list[float]:
    """Within the cap, past it, at and past the clip end."""
    return sorted({0.3, 6.99, 33.0, duration - 0.5, duration, duration + 20})


def _pixels(folder: Path) -> dict[str, np.ndarray]:
    return {p.name: np.asarray(Image.open(p)) for p in sorted(folder.glob("*.png"))}


CAPS = {"demo": 4, "late_long": 32, "rotated_vfr": 3}  # each below the clip's sample count


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CAPS))
def test_observe_output_equals_the_full_decode(clips, name, tmp_path, monkeypatch):
    """Every field of observe() and the frames' pixels (saved PNGs) and pts, for each policy,
    t within the cap, past it, at and past the clip end."""
    path = clips[name]
    full = CausalMedia(path)
    made = _captured(monkeypatch)
    for policy in POLICIES:
        for t in _times(full.duration_s):
            kw = dict(max_frames=CAPS[name], policy=policy)
            a = observe(path, t, save=tmp_path / "a", **kw)
            b = observe(path, t, media=full, save=tmp_path / "b", **kw)
            assert {**a, "saved": None} == {**b, "saved": None}, (policy, t)
            pa, pb = _pixels(tmp_path / "a"), _pixels(tmp_path / "b")
            assert pa.keys() == pb.keys() and len(pa) == len(a["frames_second"])
            for k, img in pa.items():
                np.testing.assert_array_equal(img, pb[k])
            for p in [*(tmp_path / "a").iterdir(), *(tmp_path / "b").iterdir()]:
                p.unlink()
            assert made[-1].keep_only == (t, CAPS[name], policy)
            assert made[-1].decode_count == 1  # the planned picks were confirmed


def test_clip_end_sample_and_rotation(clips):
    """Hand-worked: late_long's samples are seconds 1..47 (first frame 0.4 s, audio to 47.3 s),
    the first the frame of pts 0.9, the last the frame of pts 44.9; uniform over 47 with cap 32
    picks i*46/31 rounded."""
    obs = observe(clips["late_long"], 47.3)
    want = [1 + int(i * 46 / 31 + 0.5) for i in range(32)]
    assert obs["frames_second"] == want and want[-1] == 47
    assert obs["frames_pts_s"][-1] == 44.9 and obs["frames_pts_s"][0] == 0.9
    rot = observe(clips["rotated_vfr"], 10.0, max_frames=4)
    assert rot["frame_size"] == [H, W]  # 90 degrees: upright 64x192
    assert rot["frames_second"] == [1, 4, 7, 10]  # samples 1..10 (first frame 0.15 s)


def _captured(monkeypatch) -> list[CausalMedia]:
    made: list[CausalMedia] = []

    class Spy(CausalMedia):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(observe_mod, "CausalMedia", Spy)
    return made


# at t = 47.3 over the 47 samples (seconds 1..47; 45, 46, 47 show one frame, pts 44.9):
# uniform picks i*46/31 rounded (32 frames, 46 and 47 one frame: 31 distinct), recent seconds
# 16..47 (30 distinct), stride s = 2: seconds 1, 3, ..., 45 and 47 (24 frames, 23 distinct)
PICKED = {"uniform": (32, 31), "recent": (32, 30), "stride": (24, 23)}


@pytest.mark.parametrize("policy", POLICIES)
def test_observe_holds_at_most_max_frames_samples(clips, monkeypatch, policy):
    path = clips["late_long"]
    made = _captured(monkeypatch)
    obs = observe(path, 47.3, policy=policy)
    (cm,) = made
    frames, distinct = PICKED[policy]
    assert len(obs["frames_second"]) == frames
    audio = cm.audio_track.nbytes
    assert cm.held_bytes - audio - cm._rgb_bytes == distinct * SAMPLE_BYTES <= 32 * SAMPLE_BYTES
    full = CausalMedia(path)
    full.frames_until(47.3, policy=policy)
    assert full.held_bytes - audio - full._rgb_bytes == 45 * SAMPLE_BYTES  # seconds 1..45


def test_video_is_not_decoded_past_t(clips, monkeypatch):
    calls = [0]
    on_video = causal._Decoder.on_video

    def counting(self, fr):
        calls[0] += 1
        return on_video(self, fr)

    monkeypatch.setattr(causal._Decoder, "on_video", counting)
    cm = CausalMedia(clips["late_long"], keep_only=(3.0, 32, "uniform"))
    assert [f.second for f in cm.frames_until(3.0)] == [1, 2, 3]
    # second 3 shows the frame of pts 2.9 (the 6th), emitted when the 7th (3.4 s) arrives
    assert calls[0] <= 8
    assert cm.duration_s == pytest.approx(47.3, abs=0.07)  # measured as without the option
    calls[0] = 0
    CausalMedia(clips["late_long"], skip_unshown=False).frames_until(3.0)  # every frame
    assert calls[0] == 90


def test_other_requests_are_refused(clips):
    cm = CausalMedia(clips["late_long"], keep_only=(10.0, 4, "uniform"))
    assert [f.second for f in cm.frames_until(10.5, max_frames=4)] == [1, 4, 7, 10]
    for t, kw in ((20.0, {"max_frames": 4}), (10.0, {"max_frames": 5}), (10.0, {})):
        with pytest.raises(ValueError, match="keep_only"):
            cm.frames_until(t, **kw)
    with pytest.raises(ValueError, match="frames policy"):
        CausalMedia(clips["late_long"], keep_only=(1.0, 4, "newest"))


def test_a_header_that_misleads_the_plan_falls_back_to_a_full_decode(clips, monkeypatch):
    """The plan trusts a header duration >= 1 s past t; a decode that ends earlier is redone
    without the option (same output, two decodes)."""
    monkeypatch.setattr(causal, "declared_duration", lambda c, origin: 1e6)
    path = clips["late_long"]
    want = observe(path, 100.0, media=CausalMedia(path))
    made = _captured(monkeypatch)
    assert observe(path, 100.0) == want
    assert made[0].decode_count == 2
    assert want["frames_second"][-1] == 47
