"""Causal frames and audio (docs/protocol.md#frames, docs/protocol.md#audio). Media synthesized with PyAV at test time."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

import interactscope.media.causal as causal_mod
from interactscope.media import CausalMedia, MediaError, load_audio, probe, select_indices
from tests.helpers.media_fixtures import (
    DATA,
    read_code,
    vfr_ticks,
    write_av_clip,
    write_coded_video,
    write_flash_beep,
    write_m4a_tone,
    write_silent_video,
)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="module")
def vfr(tmp):
    """10 s, 30 fps for 0-5 s then 10 fps; each frame shows its own pts (ticks of 1/300 s)."""
    return write_coded_video(tmp / "vfr.mp4", vfr_ticks(), end_tick=3000)


@pytest.fixture(scope="module")
def flash(tmp):
    return write_flash_beep(tmp / "flash_beep.mp4")


# ----------------------------------------------------------------------------- frames
def test_vfr_prefix_at_7_holds_8_frames_newest_shown_at_7(vfr):
    frames = CausalMedia(vfr).frames_until(7)
    assert [f.second for f in frames] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert frames[-1].pts_s == pytest.approx(7.0, abs=1e-9)
    # each sample is the frame whose pts is exactly k (both frame rates land on whole seconds)
    assert [read_code(f.image) for f in frames] == [300 * k for k in range(8)]
    assert all(f.image.dtype == np.uint8 and f.image.shape == (64, 192, 3) for f in frames)


def test_vfr_non_integer_t_and_duration(vfr):
    cm = CausalMedia(vfr)
    assert cm.duration_s == pytest.approx(10.0)
    assert [f.second for f in cm.frames_until(7.99)] == list(range(8))
    # at t = D = 10 the last frame (pts 9.9, shown until 10.0) is the one shown at second 10
    last = cm.frames_until(10)[-1]
    assert (last.second, read_code(last.image)) == (10, 2970)
    assert last.pts_s == pytest.approx(9.9)
    assert [f.second for f in cm.frames_until(25)] == list(range(11))  # nothing past D


def test_last_frame_with_pts_at_or_before_k(tmp):
    """3 fps starting at 0.1 s: frames at 0.1 + i/3. Second 1 shows 0.7667, second 2 shows
    1.7667; second 0 has no frame yet (the video starts late)."""
    p = write_coded_video(tmp / "late.mp4", [30 + 100 * i for i in range(30)], end_tick=3030)
    cm = CausalMedia(p)
    assert cm.frames_until(0.5) == []
    frames = cm.frames_until(2)
    assert [f.second for f in frames] == [1, 2]
    assert [read_code(f.image) for f in frames] == [230, 530]
    assert frames[0].pts_s == pytest.approx(0.1 + 2 / 3)
    assert probe(p).video_start_s == pytest.approx(0.1)


def test_cap_policies_hand_worked(vfr):
    cm = CausalMedia(vfr)
    # 11 samples (0..10), cap 4. uniform: floor(i*10/3 + 0.5) = 0, 3, 7, 10
    assert [f.second for f in cm.frames_until(10, max_frames=4)] == [0, 3, 7, 10]
    assert [f.second for f in cm.frames_until(10, max_frames=4, policy="recent")] == [7, 8, 9, 10]
    assert [f.second for f in cm.frames_until(10, max_frames=1)] == [10]
    assert len(cm.frames_until(10)) == 11  # under the default cap of 32: all


def test_select_indices_uniform_keeps_newest_and_is_evenly_spaced():
    idx = select_indices(40, 32, "uniform")
    assert len(idx) == 32 and idx[0] == 0 and idx[-1] == 39
    assert len(set(idx)) == 32 and all(1 <= b - a <= 2 for a, b in zip(idx, idx[1:], strict=False))
    assert select_indices(40, 32, "recent") == list(range(8, 40))
    assert select_indices(5, 32) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        select_indices(5, 4, "random")
    with pytest.raises(ValueError):
        select_indices(5, 0)


def test_max_side_downscales_keeping_aspect(vfr):
    frames = CausalMedia(vfr).frames_until(3, max_side=96)
    assert frames[-1].image.shape == (32, 96, 3)
    assert read_code(frames[-1].image) == 900


def test_store_max_side_keeps_small_samples(vfr):
    cm = CausalMedia(vfr, store_max_side=96)
    frames = cm.frames_until(3)
    assert frames[-1].image.shape == (32, 96, 3) and read_code(frames[-1].image) == 900
    # all 11 samples (0..10 s) stored as 96x32 yuv420p + the 4 converted RGB frames
    assert cm.held_bytes == 11 * 96 * 32 * 3 // 2 + 4 * 96 * 32 * 3


def test_rotation_metadata_frames_come_out_upright(tmp):
    """Display matrix: 90 deg counter-clockwise. The coded 192x64 picture with its leftmost bar
    white (code >= 2048) is shown 64 wide x 192 tall with that bar along the bottom edge."""
    ticks = [2048 + 10 * i for i in range(30)]
    p = write_coded_video(tmp / "rot.mp4", ticks, end_tick=ticks[-1] + 10, rotation=90)
    info = probe(p)
    assert (info.rotation_deg, info.width, info.height) == (90, 64, 192)
    img = CausalMedia(p).frames_until(10)[-1].image
    assert img.shape == (192, 64, 3)
    # frames at 2048 + 10 i ticks (6.83 s on): second 7 (2100 ticks) shows the 2098-tick frame.
    # 2098 = 0b100000110010: MSB bar (coded left) -> bottom rows, LSB bar (coded right) -> top
    assert img[-14:].mean() > 200 and img[:14].mean() < 30
    assert read_code(np.rot90(img, -1)) == 2098  # undo: a clockwise quarter turn


def test_decode_once(vfr, monkeypatch):
    opened = []
    real = causal_mod.open_container

    def counting(path):
        opened.append(path)
        return real(path)

    monkeypatch.setattr(causal_mod, "open_container", counting)
    cm = CausalMedia(vfr)
    for t in range(11):
        cm.frames_until(t)
        cm.audio_until(t)
    assert len(opened) == 1 and cm.decode_count == 1


def test_memory_bound_stores_downscaled_frames(vfr):
    # 192x64 yuv420p = 18 KiB per frame; ~12 s estimated -> a 60 KB frame budget (total minus
    # the RGB cache) forces downscaling; the RGB cache holds at most 20 KB of converted frames
    cm = CausalMedia(vfr, max_memory_bytes=80_000, rgb_cache_bytes=20_000)
    frames = cm.frames_until(10)
    assert len(frames) == 11
    h, w = frames[-1].image.shape[:2]
    assert w * h * 1.5 * 12 <= 60_000 * 1.1 and w / h == pytest.approx(3, rel=0.1)
    assert cm.info.width == 192  # info still reports the real display size
    assert 0 < cm._rgb_bytes <= 20_000
    assert cm.held_bytes == sum(s.yuv.nbytes for s in cm._stored) + cm._rgb_bytes
    full = CausalMedia(vfr)
    full.frames_until(10)
    assert full._stored[0].width == 192  # default budget: stored at full size


# ----------------------------------------------------------------------------- audio
def test_late_audio_flash_and_beep_share_one_clock(flash):
    cm = CausalMedia(flash)
    frames = cm.frames_until(4)
    bright = [f.second for f in frames if f.image.mean() > 128]
    assert bright == [3]
    audio = cm.audio_until(4)
    assert audio.dtype == np.float32 and audio.shape == (64_000,)
    assert np.abs(audio[:8000]).max() == 0.0  # the audio stream starts at 0.5 s
    onset = int(np.argmax(np.abs(audio) > 0.05))
    assert abs(onset - 48_000) <= 320
    assert np.abs(audio[48_400:56_000]).max() > 0.3  # the beep itself is there


def test_audio_until_exact_length_and_rates(flash):
    cm = CausalMedia(flash)
    assert cm.audio_until(0).shape == (0,)
    assert cm.audio_until(2.5).shape == (40_000,)
    assert cm.audio_until(1 / 3).shape == (round(16000 / 3),)
    assert cm.audio_until(12).shape == (192_000,)  # past the end: zero-filled
    assert not cm.audio_until(12)[160_010:].any()
    a8 = cm.audio_until(4, sample_rate=8000)
    assert a8.shape == (32_000,) and abs(int(np.argmax(np.abs(a8) > 0.05)) - 24_000) <= 160
    with pytest.raises(ValueError):
        cm.audio_until(-1)


def test_no_audio_stream(tmp):
    p = write_silent_video(tmp / "silent.mp4", seconds=10.0)
    info = probe(p)
    assert info.has_audio is False and info.duration_s == pytest.approx(10.0)
    cm = CausalMedia(p)
    a = cm.audio_until(6)
    assert a.shape == (96_000,) and a.dtype == np.float32 and not a.any()
    tr = cm.transcript_until(6)  # no audio: empty, no model needed, nothing raises
    assert tr.words == () and tr.text == ""
    assert len(cm.frames_until(6)) == 7


def test_m4a_falls_back_to_pyav_and_keeps_the_tail(tmp):
    p = write_m4a_tone(tmp / "tone.m4a")
    with pytest.raises(RuntimeError):
        sf.read(str(p))  # libsndfile cannot read it (soundfile raises LibsndfileError)
    cm = CausalMedia(p)
    a = cm.audio_until(10)
    assert cm.audio_backend == "pyav"
    assert a.shape == (160_000,)
    tail = a[-1600:]  # last 100 ms
    assert np.sqrt((tail**2).mean()) > 0.3  # 0.5-amplitude tone: RMS 0.354
    assert cm.frames_until(10) == []
    x, start, backend = load_audio(p)
    assert backend == "pyav" and len(x) >= 160_000 and start == 0.0


def test_plain_wav_through_soundfile_is_sample_exact():
    wav = DATA / "librivox_0880.wav"
    ref, sr = sf.read(str(wav), dtype="float32")
    assert sr == 16000
    cm = CausalMedia(wav)
    a = cm.audio_until(len(ref) / sr)
    assert cm.audio_backend == "soundfile" and a.shape == ref.shape
    np.testing.assert_array_equal(a, ref)
    assert cm.info.duration_s == pytest.approx(2.99)
    x, _, backend = load_audio(wav)
    assert backend == "soundfile"
    np.testing.assert_array_equal(x, ref)


# ----------------------------------------------------------------------------- errors
def test_missing_and_empty_files_raise_media_error_naming_the_file(tmp):
    empty = tmp / "empty.mp4"
    empty.write_bytes(b"")
    for bad, why in ((empty, "0 bytes"), (tmp / "nope.mp4", "not found")):
        with pytest.raises(MediaError, match=why) as ei:
            probe(bad)
        assert str(bad) in str(ei.value)
        with pytest.raises(MediaError) as ei:
            CausalMedia(bad).frames_until(1)
        assert str(bad) in str(ei.value)


def test_garbage_bytes_raise_media_error(tmp):
    bad = tmp / "garbage.mp4"
    bad.write_bytes(b"this is not a video file at all\n" * 200)
    for call in (probe, lambda p: CausalMedia(p).audio_until(1)):
        with pytest.raises(MediaError) as ei:
            call(bad)
        assert str(bad) in str(ei.value)


def test_audio_only_file_is_not_a_video(tmp):
    with pytest.raises(MediaError, match="no video stream"):
        probe(write_m4a_tone(tmp / "tone2.m4a"))
    info = probe(tmp / "tone2.m4a", require_video=False)
    assert info.has_video is False and info.duration_s == pytest.approx(10.0, abs=0.01)


@pytest.mark.parametrize("faststart", [False, True], ids=["moov-at-end", "faststart"])
def test_file_cut_to_60_percent_never_crashes_mid_run(tmp, faststart):
    full = write_av_clip(tmp / f"full_{faststart}.mp4", seconds=10, faststart=faststart)
    assert probe(full).duration_s == pytest.approx(10.0, abs=0.1)
    data = full.read_bytes()
    cut = tmp / f"cut_{faststart}.mp4"
    cut.write_bytes(data[: int(len(data) * 0.6)])
    try:
        info = probe(cut)
        cm = CausalMedia(cut)
        d = cm.duration_s
    except MediaError as exc:  # allowed outcome: a typed error naming the file
        assert str(cut) in str(exc)
        assert not faststart  # with the index up front the prefix must be readable
        return
    # a decoded prefix with the real, shorter duration (noise frames: bytes ~ time)
    assert 4.0 < d < 7.5 and info.duration_s == pytest.approx(d, abs=0.1)
    frames = cm.frames_until(10)
    assert [f.second for f in frames] == list(range(int(d) + 1))
    assert all(f.pts_s <= d for f in frames)
    a = cm.audio_until(10)
    assert a.shape == (160_000,) and a[: int((d - 1) * 16000)].any()
    assert not a[int((d + 0.1) * 16000) :].any()  # zeros after the real end


# ----------------------------------------------------------------------------- observe / CLI
def test_observe_cli_json(flash):
    import json

    from typer.testing import CliRunner

    from interactscope.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["observe", str(flash), "--at", "4", "--json"])
    assert res.exit_code == 0, res.output
    obs = json.loads(res.stdout)
    assert obs["frames_pts_s"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert obs["frame_size"] == [64, 64] and obs["has_audio"] is True
    assert obs["audio_samples"] == 64_000 and obs["transcript"] is None
    res = runner.invoke(
        app,
        ["observe", str(flash), "--at", "9.5", "--audio", "none", "--max-frames", "3",
         "--policy", "recent", "--json"],
    )  # fmt: skip
    obs = json.loads(res.stdout)
    assert obs["frames_second"] == [7, 8, 9] and obs["audio_samples"] == 0
    res = runner.invoke(app, ["observe", str(flash) + ".missing", "--at", "1", "--json"])
    assert res.exit_code == 1 and "file not found" in res.output


# ----------------------------------------------------------------------------- decode pass cost
def test_observe_cli_model_frame_budget(vfr, tmp):
    """``observe --model``: frames at the model's frame budget (docs/protocol.md, frame budget
    per backend). cascade sees no pixels: 64 px, a 192x64 frame -> fit_size 64 x 22
    (21.3 rounded to even); gpt-4o (200,704 px): 12,288 px is within it -> as it is; no
    model: the source size, as before."""
    import json

    from typer.testing import CliRunner

    from interactscope.cli import app

    runner = CliRunner()
    sizes = {}
    for model in ("cascade", "gpt-4o", None):
        args = ["observe", str(vfr), "--at", "3", "--audio", "none", "--json"]
        res = runner.invoke(app, args + (["--model", model] if model else []))
        assert res.exit_code == 0, res.output
        obs = json.loads(res.stdout)
        sizes[model] = (obs["frame_size"], obs["frames_consumer"])
    assert sizes["cascade"] == ([64, 22], "sees no pixels (64 px), source size")
    assert sizes["gpt-4o"][0] == [192, 64] and "max_pixels=200704" in sizes["gpt-4o"][1]
    assert sizes[None] == ([192, 64], "source size")
    res = runner.invoke(app, ["observe", str(vfr), "--at", "3", "--model", "no-such-model"])
    assert res.exit_code == 1 and "no-such-model" in res.output


def test_audio_resampled_in_batches_same_samples_as_frame_by_frame(flash, monkeypatch):
    """The decode pass hands the resampler ~_AUDIO_BATCH samples at a time (not one call per
    decoded frame) and the track is sample-identical to resampling frame by frame."""
    import av

    real = av.AudioResampler
    calls = []

    class Counting:
        def __init__(self, *a, **k):
            self.r = real(*a, **k)

        def resample(self, fr):
            calls.append(fr.samples if fr is not None else 0)
            return self.r.resample(fr)

    monkeypatch.setattr(av, "AudioResampler", Counting)
    cm = CausalMedia(flash)
    track = cm.audio_track
    monkeypatch.setattr(av, "AudioResampler", real)
    with av.open(str(flash)) as c:
        frames = list(c.decode(c.streams.audio[0]))
    r = real(format="flt", layout="mono", rate=16000)
    ref = [o.to_ndarray().reshape(-1) for f in frames for o in r.resample(f)]
    ref += [o.to_ndarray().reshape(-1) for o in r.resample(None)]
    ref = np.concatenate(ref)
    off = round(frames[0].time * 16000)  # about 0.5 s (AAC priming shifts the first frame)
    assert abs(off - 8000) <= 400 and np.abs(ref).max() > 0.3
    assert np.array_equal(track[off : off + len(ref)], ref)
    n_in = sum(f.samples for f in frames)
    assert len(frames) > 100  # AAC: 1024 samples a frame
    assert len(calls) <= n_in // causal_mod._AUDIO_BATCH + 2  # batches + the flush


def test_stored_yuv_with_odd_half_height_converts_at_its_own_size():
    """A 600x338 stored sample (the Qwen budget's size for 720p; 338 / 2 is odd) comes back as
    a 600x338 frame with its own pixels (PyAV 18's zero-copy path would read 336 rows)."""
    import av

    rgb = np.zeros((338, 600, 3), np.uint8)
    rgb[::2] = 200  # rows alternate: a wrong row count or offset changes the picture
    src = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
    st = causal_mod._compact(src)
    fr = st.video_frame()
    assert (fr.width, fr.height) == (600, 338)
    assert np.array_equal(fr.to_ndarray(format="rgb24"), src.to_ndarray(format="rgb24"))
    st4 = causal_mod._compact(src.reformat(width=600, height=336))  # 336: the view path
    assert st4.video_frame().height == 336
    assert np.array_equal(st4.video_frame().to_ndarray(), st4.yuv)
