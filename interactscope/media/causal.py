"""Causal frames and audio at a decision time (SPEC §2 "Causal observation at t").

:class:`CausalMedia` decodes a file **once** (the first time anything is asked) and answers every
decision time from memory:

* video: only the 1 fps samples are kept -- the frame shown at grid second k is the last decoded
  frame with pts <= k (exact rational comparison in the stream's own time base), which is right
  for variable frame rate and B-frame reordering (the decoder hands frames out in presentation
  order); frames shown at no second that no other frame references are not decoded at all
  (H.264/HEVC non-reference B-frames, :class:`_Unshown`: same samples). Samples are stored at
  the largest size any consumer uses, never the source's when that is smaller: with
  ``rgb_max_side`` (the run's ``frames.max_side``) as upright RGB at that size, converted once
  while decoding (3 B/pixel; requests get views of that one store), else as yuv420p frames
  (1.5 bytes/pixel) at ``store_max_side`` (a number, or the model's processor budget:
  ``Adapter.consumer_max_side``), converted to upright RGB on request (LRU
  cache, 128 MiB by default, plus a weak registry so a frame a batch still holds is never converted
  twice). At the source size a 10-minute 720p clip holds about 0.83 GB of samples + the cache;
  at a 200,704-pixel budget (the Qwen configs: stored at 600x338) 0.18 GB. A clip whose estimate
  exceeds ``max_memory_bytes`` (1 GiB) is stored downscaled. ``keep_only`` (one observation,
  ``interactscope observe``) stores only the <= ``max_frames`` samples it picks.
* audio: the whole track resampled once to mono float32 at ``sample_rate`` (16 kHz: 3.8 MB per
  minute), placed on the file clock (zeros before a late stream start) in a buffer zero-padded
  to 1 s past the clip end; ``audio_until`` returns read-only views of it.

Audio-only files (wav, flac, m4a, ...) are accepted: soundfile reads what libsndfile can, PyAV
the rest; ``frames_until`` then returns ``[]``.
"""

from __future__ import annotations

import bisect
import ctypes
import logging
import math
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import soundfile as sf

from interactscope.media.asr import AsrSettings, Transcript, transcribe
from interactscope.media.probe import (
    MediaError,
    MediaInfo,
    _check_file,
    declared_duration,
    decoding,
    file_origin,
    open_container,
    rotation_of,
)

log = logging.getLogger(__name__)

POLICIES = ("uniform", "recent", "stride")
DEFAULT_SAMPLE_RATE = 16_000
_AUDIO_BATCH = 1 << 15  # decoded audio samples (per channel) per resampler call
# Codecs whose decoders read ``skip_frame`` per packet and skip only frames no other frame
# references (H.264/HEVC: nal_ref_idc 0 / non-reference NAL types). Others (e.g. dav1d, which
# reads it once at open) decode every frame.
_SKIP_CODECS = frozenset({"h264", "hevc"})
_LOOKAHEAD = 16  # video packets held back before decoding: longer than any B-frame reordering


@dataclass(frozen=True)
class Frame:
    """One causal 1 fps sample.

    Attributes:
        second: the grid second k (int, s) at which this frame is the one shown.
        pts_s: the frame's own presentation time (s, file clock); pts_s <= second.
        image: (H, W, 3) uint8 RGB, upright (display rotation applied), read-only (copy it
            before modifying).
    """

    second: int
    pts_s: float
    image: np.ndarray


@dataclass
class _Stored:
    """A 1 fps sample kept compact: yuv420p bytes (1.5 B/pixel) detached from the decoder's
    buffer pool, with the colour metadata needed to convert it exactly as the original frame.
    Odd-sized pictures (no packed yuv420p array) keep a detached VideoFrame instead."""

    width: int
    height: int
    yuv: np.ndarray | None
    frame: av.VideoFrame | None
    colorspace: int
    color_range: int
    rgb: np.ndarray | None = None  # RGB mode: the upright frame at the stored size, read-only

    @property
    def nbytes(self) -> int:
        if self.rgb is not None:
            return int(self.rgb.nbytes)
        return int(self.yuv.nbytes) if self.yuv is not None else self.width * self.height * 3

    def video_frame(self) -> av.VideoFrame:
        if self.frame is not None:
            return self.frame
        if self.height % 4 == 0:  # a view of the stored bytes (no copy), read by swscale
            fr = av.VideoFrame.from_numpy_buffer(self.yuv, format="yuv420p")
        else:  # PyAV 18's from_numpy_buffer takes the height as rows // 6 * 4: 338 -> 336
            fr = av.VideoFrame.from_ndarray(self.yuv, format="yuv420p")
        fr.colorspace = self.colorspace
        fr.color_range = self.color_range
        return fr


def _compact(frame: av.VideoFrame) -> _Stored:
    cs, cr = frame.colorspace, frame.color_range
    if frame.width % 2 == 0 and frame.height % 2 == 0:
        yuv = frame.to_ndarray(format="yuv420p")
        return _Stored(frame.width, frame.height, yuv, None, cs, cr)
    return _Stored(frame.width, frame.height, None, frame.reformat(format="rgb24"), cs, cr)


@dataclass
class _Sample:
    second: int
    pts_s: float
    store: int  # index into CausalMedia._stored; -1: not stored (``keep_only`` left it out)


class _Picks:
    """The samples one observation ``frames_until(t, max_frames, policy)`` picks, decided while
    decoding (``CausalMedia(keep_only=)``). The prefix at t is every grid second from the first
    sample's up to ``cap = min(floor(t), the clip's last second)`` (contiguous: each decoded
    frame is shown from its own second to the next frame's), so the picks are known at the first
    sample: ``select_indices(cap - first + 1, max_frames, policy)``, offset by ``first``."""

    def __init__(self, cap: int, max_frames: int, policy: str):
        self.cap = cap
        self.max_frames = max_frames
        self.policy = policy
        self.keep: set[int] | None = None  # grid seconds to store; None before the first sample
        self.done = False  # every second <= cap is emitted: later video is not needed

    def seconds(self, k0: int, k1: int) -> range:
        """The seconds of [k0, k1] in the prefix (an emit's range, k0 <= k1)."""
        if self.keep is None:
            n = self.cap - k0 + 1
            self.keep = {k0 + i for i in select_indices(max(0, n), self.max_frames, self.policy)}
        if k1 >= self.cap:
            self.done = True
        return range(k0, min(k1, self.cap) + 1)


class _Redo(MediaError):
    """A decode-pass plan the pass did not confirm: decode again without plans."""


class _Repick(_Redo):
    """``keep_only`` planned the picks for a prefix the decode pass did not confirm."""


class _Unshown:
    """Skips decoding the video frames no grid second shows (the frame shown at k is the last
    with pts <= k, SPEC §2: at 25 fps 24 of 25 frames are shown at no second).

    Packets pass through a look-ahead of :data:`_LOOKAHEAD` video packets, so at release the
    packets with the next larger pts are known (B-frame reordering is shorter; a next pts not
    yet seen only makes the interval look longer, so it never causes a skip): a packet whose
    pts interval [pts, next pts) holds no integer second is sent with ``skip_frame =
    "NONREF"``, which makes the decoder drop it only if no other frame references it (the
    kept frames' pixels are unchanged); every other packet with ``"DEFAULT"``. Dropping a frame
    shown at no second changes no sample (its predecessor then lasts until the next decoded
    frame, over no integer either). :meth:`not_decoded` checks that against the frames the pass
    decoded; a pass it does not confirm (a lost frame, odd timestamps) is redone without it.
    """

    def __init__(self, cc, tb: Fraction, origin: Fraction):
        self.cc, self.mode = cc, cc.skip_frame
        self._num = tb.numerator * origin.denominator
        self._off, self._scale = (
            origin.numerator * tb.denominator,
            tb.denominator * origin.denominator,
        )
        self.tb, self.origin = tb, origin
        self.pending: deque[av.Packet] = deque()
        self.seen: list[int] = []  # sorted pts (ticks) of the non-discarded video packets so far
        self.skipped: list[int] = []  # pts (ticks) of the packets sent with NONREF
        self.on = True

    def _ceil(self, tick: int) -> int:
        """ceil(tick * tb - origin) in integers (s, file clock)."""
        return -((self._off - tick * self._num) // self._scale)

    def push(self, pkt: av.Packet) -> None:
        """Queue a video packet (then decode what :meth:`ready` yields)."""
        ts = pkt.pts
        if ts is None:
            self.on = self.on and not pkt.size  # no pts (raw streams): cannot plan, decode all
        elif not pkt.is_discard:
            i = bisect.bisect_left(self.seen, ts)
            if i < len(self.seen) and self.seen[i] == ts:
                self.on = False  # a repeated pts: the decode pass drops one, decode all
            self.seen.insert(i, ts)
        self.pending.append(pkt)

    def ready(self, end: bool = False) -> Iterator[av.Packet]:
        """The packets to decode now (all of them at ``end``), each with the decoder's skip
        mode set just before it is yielded: decode each before asking for the next."""
        while self.pending and (end or len(self.pending) > _LOOKAHEAD):
            yield self._release(self.pending.popleft())

    def _release(self, pkt: av.Packet) -> av.Packet:
        skip = self.on and pkt.pts is not None and (pkt.is_discard or not self._shown(pkt.pts))
        mode = "NONREF" if skip else "DEFAULT"
        if skip and not pkt.is_discard:
            self.skipped.append(pkt.pts)
        if mode != self.mode:
            self.cc.skip_frame = self.mode = mode
        return pkt

    def _shown(self, ts: int) -> bool:
        i = bisect.bisect_right(self.seen, ts)  # seen[i - 1] == ts
        if i <= 1 or i >= len(self.seen):  # the first or (so far) last frame: decode it
            return True
        return max(0, self._ceil(ts)) <= self._ceil(self.seen[i]) - 1

    def not_decoded(self, decoded: list[Fraction], last: int) -> int | None:
        """How many frames the pass did not decode, or None if one of them would have been
        shown. ``decoded``: the pts (s, ascending) of the frames the pass placed; ``last``:
        the last second that matters (the clip's, or ``keep_only``'s). Confirmed when each
        skipped pts lies in an interval up to its next decoded frame (or past ``last``) that
        holds no grid second."""
        have, n = set(decoded), 0
        for tk in self.skipped:
            p = tk * self.tb - self.origin
            if p in have:  # a reference frame: decoded anyway
                continue
            j = bisect.bisect_right(decoded, p)
            hi = math.ceil(decoded[j]) - 1 if j < len(decoded) else last
            if max(0, math.ceil(p)) <= hi:
                return None
            n += 1
        return n


def _trim_heap() -> bool:
    """Give the heap pages freed by the decode pass back to the OS (glibc ``malloc_trim``; the
    decoder's 720p buffers and conversion temporaries leave holes that later, differently sized
    allocations -- converted RGB frames -- do not reuse: ~20 MB on a 10-minute clip). False
    when nothing was released or the C library has no ``malloc_trim`` (not glibc)."""
    try:
        return bool(ctypes.CDLL(None).malloc_trim(0))
    except (AttributeError, OSError):
        return False


def select_indices(n: int, max_frames: int, policy: str = "uniform") -> list[int]:
    """Indices (0..n-1, ascending) of the samples kept under the frame cap (SPEC §2).

    ``uniform``: ``floor(i*(n-1)/(m-1) + 0.5)`` for i = 0..m-1 (evenly spaced over the prefix,
    always the oldest and the newest); ``recent``: the newest m; ``stride``: the multiples of
    s among 0..n-2 plus the newest, s the smallest power of two that fits them in m (so a pick
    stays picked until s doubles: prompt prefixes survive). m = min(n, max_frames).

    Raises:
        ValueError: unknown policy or max_frames < 1.
    """
    if policy not in POLICIES:
        raise ValueError(f"frames policy must be one of {POLICIES}, got {policy!r}")
    if max_frames < 1:
        raise ValueError(f"max_frames must be >= 1, got {max_frames}")
    if n <= max_frames:
        return list(range(n))
    if policy == "recent":
        return list(range(n - max_frames, n))
    if max_frames == 1:
        return [n - 1]
    if policy == "stride":
        s = 1
        while (n - 2) // s + 1 > max_frames - 1:
            s *= 2
        return list(range(0, n - 1, s)) + [n - 1]
    m = max_frames
    return [int(math.floor(i * (n - 1) / (m - 1) + 0.5)) for i in range(m)]


def _n_samples(t: float, sample_rate: int) -> int:
    return int(round(t * sample_rate))


def fit_size(w: int, h: int, max_side: int | None) -> tuple[int, int]:
    """The (width, height) in px a (w, h) frame is downscaled to so that its longer side is at
    most ``max_side`` (aspect kept, both sides rounded to even numbers >= 2); unchanged when
    ``max_side`` is None or already met. The rule of ``frames_until(max_side=...)``."""
    if not max_side or max(w, h) <= max_side:
        return w, h
    s = max_side / max(w, h)
    return max(2, int(round(w * s / 2)) * 2), max(2, int(round(h * s / 2)) * 2)


def _to_rgb(fr: av.VideoFrame, rot: int, max_side: int | None) -> np.ndarray:
    """One stored sample as upright (H, W, 3) uint8 RGB fitted to ``max_side`` (one swscale
    call: colour conversion and AREA scaling together; then the display rotation), read-only.
    One swscale thread: the same pixels as more threads (checked), less CPU for these sizes."""
    dw, dh = (fr.height, fr.width) if rot in (90, 270) else (fr.width, fr.height)
    tw, th = fit_size(dw, dh, max_side)
    cw, chh = (th, tw) if rot in (90, 270) else (tw, th)
    if (cw, chh) == (fr.width, fr.height):
        img = fr.to_ndarray(format="rgb24", threads=1)
    else:
        img = fr.to_ndarray(format="rgb24", width=cw, height=chh, interpolation="AREA", threads=1)
    if rot:
        img = np.rot90(img, k=rot // 90)  # display matrix angle is counter-clockwise
    img = np.ascontiguousarray(img)
    img.setflags(write=False)
    return img


def _resample_array(x: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """(n, ch) float32 at sr_in -> mono float32 at sr_out, with PyAV's resampler (flushed)."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[:, None]
    ch = x.shape[1]
    if sr_in == sr_out and ch == 1:
        return x[:, 0].copy()
    layout = {1: "mono", 2: "stereo"}.get(ch)
    if layout is None:  # rare multichannel: downmix by mean, then resample mono
        x = x.mean(axis=1, keepdims=True)
        layout, ch = "mono", 1
        if sr_in == sr_out:
            return x[:, 0].copy()
    res = av.AudioResampler(format="flt", layout="mono", rate=sr_out)
    out: list[np.ndarray] = []
    step = 1 << 16
    for i in range(0, x.shape[0], step):
        chunk = np.ascontiguousarray(x[i : i + step]).reshape(1, -1)
        fr = av.AudioFrame.from_ndarray(chunk, format="flt", layout=layout)
        fr.sample_rate = sr_in
        fr.pts = i
        fr.time_base = Fraction(1, sr_in)
        for o in res.resample(fr):
            out.append(o.to_ndarray().reshape(-1))
    for o in res.resample(None):
        out.append(o.to_ndarray().reshape(-1))
    return np.concatenate(out).astype(np.float32) if out else np.zeros(0, np.float32)


def load_audio(
    path: str | Path, sample_rate: int = DEFAULT_SAMPLE_RATE
) -> tuple[np.ndarray, float, str]:
    """Read the first audio stream of any file as mono float32 at ``sample_rate`` Hz.

    soundfile (libsndfile) first, PyAV for what libsndfile cannot read (m4a/AAC, mp3 in old
    libsndfile, any video container). Used for audio attachments (SPEC §1 ``attachments``).

    Returns:
        (samples (n,) float32 in [-1, 1], start_s = file-clock time of samples[0] (s),
        backend: "soundfile" or "pyav").

    Raises:
        MediaError: missing/empty/unreadable file or no audio stream (message names the file).
    """
    p = Path(path)
    _check_file(p)
    try:
        data, sr = sf.read(str(p), dtype="float32", always_2d=True)
        return _resample_array(data, int(sr), sample_rate), 0.0, "soundfile"
    except MediaError:
        raise
    except Exception as exc:  # noqa: BLE001 - libsndfile refuses the format: fall back
        log.debug("%s: soundfile cannot read (%s); using PyAV", p, exc)
    cm = CausalMedia(p, sample_rate=sample_rate)
    cm._decode(video=False)
    if cm._audio is None:
        raise MediaError(f"{p}: no audio stream")
    return cm._audio, 0.0, "pyav"


class _Track:
    """The resampled mono track written in place as the resampler yields it: one zero-filled
    buffer sized from the header duration (calloc: pages never written cost no memory), grown
    only when the file is longer than its header says. A list of chunks joined at the end
    would hold the track twice at the decode pass's peak (a 10-minute clip: 2 x 38 MB)."""

    def __init__(self, capacity: int):
        self.buf = np.zeros(max(0, capacity), np.float32)
        self.pos: int | None = None  # next sample's index (None: nothing placed yet)
        self.skip = 0  # samples still to drop (a stream starting before the file clock)

    def place(self, x: np.ndarray, offset: int) -> None:
        """Append resampled samples ``x``; the first call puts sample 0 at ``offset`` (samples
        on the file clock; a negative offset drops the first ``-offset`` samples)."""
        if self.pos is None:
            self.pos, self.skip = max(0, offset), max(0, -offset)
        if self.skip:
            k = min(self.skip, len(x))
            x, self.skip = x[k:], self.skip - k
        self.reserve(self.pos + len(x))
        self.buf[self.pos : self.pos + len(x)] = x
        self.pos += len(x)

    def reserve(self, n: int) -> None:
        """At least ``n`` samples of buffer (grown by 1.5x: few copies when the header is
        short or missing)."""
        if n > len(self.buf):
            grown = np.zeros(max(n, len(self.buf) * 3 // 2), np.float32)
            grown[: len(self.buf)] = self.buf
            self.buf = grown


class _Decoder:
    """State of the single decode pass of one file: 1 fps samples (into the owning
    :class:`CausalMedia`), resampled audio chunks and per-stream start/end times, all on the
    file clock (exact fractions of each stream's own time base)."""

    def __init__(
        self,
        media: CausalMedia,
        origin: Fraction,
        store_side: int | None,
        audio: bool,
        rgb_side: int | None = None,
        picks: _Picks | None = None,
    ):
        self.media = media
        self.picks = picks
        self.unshown: _Unshown | None = None  # set by the caller: skip frames shown at no second
        self.placed: list[Fraction] = []  # pts (s) of every video frame placed, ascending
        self.dropped = 0  # video frames dropped for a non-increasing pts
        self.origin = origin
        self.store_side = store_side
        self.rgb_side = rgb_side
        # the consumer's side (a callable store_max_side): AREA, the anti-aliased downscale
        self.interpolation = "AREA" if callable(media.store_max_side) else None
        sr = media.sample_rate
        self.resampler = av.AudioResampler(format="flt", layout="mono", rate=sr) if audio else None
        self.track = _Track(0)  # the caller sizes it from the header (``audio_capacity``)
        self._fifo: av.AudioFifo | None = None  # decoded audio not yet resampled (one format)
        self._fifo_key: tuple[str, str, int] | None = None
        self.audio_start: Fraction | None = None
        self.prev: av.VideoFrame | None = None
        self.prev_pts: Fraction | None = None
        self.rotation: int | None = None
        self.n_video_frames = 0
        self.n_audio_frames = 0
        self.starts: dict[int, Fraction] = {}
        self.ends: dict[int, Fraction] = {}
        self._tick_start: dict[int, int] = {}
        self._tick_end: dict[int, int] = {}
        self._tbs: dict[int, Fraction] = {}

    def store(self, frame: av.VideoFrame) -> int:
        if self.rgb_side is not None:  # RGB mode: converted once, as frames_until would
            # through the compact copy, as frames_until converts (the decoder's own frame can
            # carry more colour metadata, e.g. chroma location: other pixels)
            st = _compact(frame)
            img = _to_rgb(st.video_frame(), self.rotation or 0, self.rgb_side)
            rgb = _Stored(
                img.shape[1], img.shape[0], None, None, st.colorspace, st.color_range, img
            )
            self.media._stored.append(rgb)
            return len(self.media._stored) - 1
        if self.store_side is not None:
            w, h = fit_size(frame.width, frame.height, self.store_side)
            frame = frame.reformat(
                width=w, height=h, format="yuv420p", interpolation=self.interpolation, threads=1
            )
        self.media._stored.append(_compact(frame))
        return len(self.media._stored) - 1

    def emit(self, frame: av.VideoFrame, pts: Fraction, until: Fraction | None, last_k: int):
        """Record ``frame`` as shown at every integer k with pts <= k < until (or <= last_k)."""
        k0 = max(0, math.ceil(pts))
        k1 = (math.ceil(until) - 1) if until is not None else last_k
        if k1 < k0:
            return
        if self.picks is not None:
            self._emit_picked(frame, float(pts), self.picks.seconds(k0, k1))
            return
        idx = self.store(frame)
        for k in range(k0, k1 + 1):
            self.media._samples.append(_Sample(k, float(pts), idx))

    def _emit_picked(self, frame: av.VideoFrame, pts: float, seconds: range) -> None:
        """``keep_only``: every second of the prefix gets a sample; only picked ones a store."""
        keep = self.picks.keep
        idx = self.store(frame) if any(k in keep for k in seconds) else -1
        for k in seconds:
            self.media._samples.append(_Sample(k, pts, idx if k in keep else -1))

    def on_video(self, fr: av.VideoFrame) -> None:
        ts = fr.pts if fr.pts is not None else fr.dts
        if ts is None:  # no timestamp at all (raw elementary stream): cannot place it
            return
        pts = ts * fr.time_base - self.origin
        if self.prev_pts is not None and pts <= self.prev_pts:
            log.debug("%s: non-increasing video pts %s dropped", self.media.path, pts)
            self.dropped += 1
            return
        self.n_video_frames += 1
        self.placed.append(pts)
        if self.rotation is None:
            self.rotation = rotation_of(fr)
        if self.prev is not None:
            self.emit(self.prev, self.prev_pts, pts, 0)
        self.prev, self.prev_pts = fr, pts

    def on_audio(self, fr: av.AudioFrame) -> None:
        """Queue a decoded audio frame in a FIFO; the resampler gets batches of about
        :data:`_AUDIO_BATCH` samples (one filter-graph call per batch instead of per frame: the
        same output samples, a fraction of the per-call cost)."""
        if self.audio_start is None:
            self.audio_start = (fr.pts * fr.time_base - self.origin) if fr.pts is not None else 0
        self.n_audio_frames += 1
        key = (fr.format.name, fr.layout.name, fr.sample_rate)
        if key != self._fifo_key:
            self._push_audio()  # a format change: the resampler refuses it, as before
            self._fifo, self._fifo_key = av.AudioFifo(), key
        fr.pts = None  # samples are placed by count, as the resampler placed them (no pts check)
        self._fifo.write(fr)
        if self._fifo.samples >= _AUDIO_BATCH:
            self._push_audio()

    def _push_audio(self) -> None:
        """Resample what the FIFO holds as one frame."""
        if self._fifo is None or not self._fifo.samples:
            return
        for o in self.resampler.resample(self._fifo.read()):
            self._place(o)

    def _place(self, o: av.AudioFrame) -> None:
        off = _n_samples(float(self.audio_start or 0), self.media.sample_rate)
        self.track.place(o.to_ndarray().reshape(-1), off)

    def on_frame(self, fr) -> None:
        self.on_video(fr) if isinstance(fr, av.VideoFrame) else self.on_audio(fr)

    def _track_times(self, pkt: av.Packet) -> None:
        ts = pkt.pts if pkt.pts is not None else pkt.dts
        if ts is None:
            return
        i = pkt.stream.index  # integer ticks of the stream's time base (fast path)
        en = ts + (pkt.duration or 0)
        if i not in self._tick_start:
            self._tick_start[i], self._tick_end[i], self._tbs[i] = ts, en, pkt.time_base
        else:
            self._tick_start[i] = min(self._tick_start[i], ts)
            self._tick_end[i] = max(self._tick_end[i], en)

    def demux_all(self, c: av.container.InputContainer, streams: list) -> Exception | None:
        """Demux and decode every packet; a damaged tail keeps the decoded prefix. Returns the
        error that stopped demuxing early, or None."""
        p = self.media.path
        error: Exception | None = None
        ahead = self.unshown
        try:
            for pkt in c.demux(*streams):
                self._track_times(pkt)
                if self.picks is not None and self.picks.done and pkt.stream.type == "video":
                    continue  # keep_only: the prefix is complete, later frames are not shown
                if ahead is not None and pkt.stream.type == "video":
                    ahead.push(pkt)
                    for q in ahead.ready():
                        self._decode_packet(q)
                else:
                    self._decode_packet(pkt)
            for q in ahead.ready(end=True) if ahead is not None else ():
                self._decode_packet(q)
        except av.error.FFmpegError as exc:
            error = exc
            log.warning("%s: decoding stopped early (%s); keeping the decoded prefix", p, exc)
            for q in ahead.ready(end=True) if ahead is not None else ():  # held back
                self._decode_packet(q)
            for s in streams:  # flush whatever the decoders hold
                try:
                    for fr in s.codec_context.decode(None):
                        self.on_frame(fr)
                except av.error.FFmpegError:
                    pass
        for i, tk in self._tick_start.items():
            self.starts[i] = tk * self._tbs[i] - self.origin
            self.ends[i] = self._tick_end[i] * self._tbs[i] - self.origin
        return error

    def _decode_packet(self, pkt: av.Packet) -> None:
        if self.picks is not None and self.picks.done and pkt.stream.type == "video":
            return  # keep_only: the prefix is complete (also for packets held back)
        try:
            decoded = pkt.decode()
        except av.error.FFmpegError as exc:
            log.warning("%s: undecodable packet at %s skipped (%s)", self.media.path, pkt.pts, exc)
            return
        for fr in decoded:
            self.on_frame(fr)

    def audio_track(self, pad_to: int = 0) -> np.ndarray | None:
        """Flush the resampler; the mono track on the file clock from 0 (None if empty), in a
        buffer zero-padded to at least ``pad_to`` samples (the track is ``buf[:len]``; see
        :attr:`CausalMedia._audio_buf`)."""
        if self.resampler is not None and self.audio_start is not None:
            try:
                self._push_audio()
                for o in self.resampler.resample(None):
                    self._place(o)
            except av.error.FFmpegError:
                pass
        tr = self.track
        if tr.pos is None:
            return None
        tr.reserve(pad_to)
        n = tr.pos
        # a view of the calloc'ed buffer: capacity past max(n, pad_to) is never touched
        self.media._audio_buf = tr.buf[: max(n, pad_to)]
        self.track = _Track(0)
        return self.media._audio_buf[:n]


class CausalMedia:
    """Causal view of one media file (SPEC §2): frames, audio and transcript up to time t.

    Construction is cheap (checks the file exists); the file is decoded once, on the first
    ``frames_until``/``audio_until``/``transcript_until``/``info`` call, and every later call is
    answered from memory. Thread-safe for concurrent readers.

    Args:
        path: a video file (any container/codec FFmpeg reads) or a plain audio file.
        sample_rate: rate (Hz) the audio track is resampled to once; ``audio_until`` with another
            rate resamples the prefix on the fly.
        max_memory_bytes: bound on the media data held (:attr:`held_bytes`): the stored 1 fps
            samples (yuv420p, 1.5 B/pixel), the RGB cache and the audio track (4 B/sample).
            A clip whose header-estimated frames exceed ``max_memory_bytes - rgb_cache_bytes -
            audio`` is stored downscaled. Default 1 GiB (a 10-minute 720p clip fits at full
            size: 0.83 GB of samples + 38 MB of audio + the cache).
        asr: settings for ``transcript_until`` (default: :class:`AsrSettings` defaults).
        rgb_cache_bytes: bytes of converted RGB frames kept (LRU; default 128 MiB).
        store_max_side: store the samples (yuv420p) downscaled so their long side is <= this
            (pixels); saves memory and conversion time when every consumer asks for
            ``max_side`` <= it. Frames are then never larger than this. Either a number or a
            function ``(width, height) -> side | None`` of the display size the callers get
            (the source fitted to ``rgb_max_side``), asked once when decoding starts: the
            largest side the model's processor uses (``Adapter.consumer_max_side``); ``None``
            or a side >= that size stores at it.
        rgb_max_side: the ``max_side`` every caller passes to ``frames_until`` (SPEC
            ``frames.max_side``): when it downscales the video (and ``store_max_side`` does
            not go lower), each sample is converted once while decoding to upright RGB at that
            size, exactly as ``frames_until(max_side=rgb_max_side)`` converts a full-size
            sample (same pixels), and kept as such (3 B/pixel): every ``frames_until`` with
            ``max_side`` None or >= it returns read-only views of that one store, no
            conversion and no cache.
        keep_only: ``(t, max_frames, policy)`` of the one observation this object serves
            (``interactscope observe``): only the samples ``frames_until(t, max_frames,
            policy)`` picks are stored (:attr:`held_bytes` bounded by ``max_frames`` samples,
            not the clip length) and video is not decoded past t (packets are still demuxed:
            duration and stream ends are measured as without it). The picks are the same
            ones (pixels, pts): they are planned at the first sample from the prefix's last
            second, ``min(floor(t), the clip's last second)`` -- ``floor(t)`` when the header
            duration puts t at least 1 s before the end, else measured by a demux-only pass
            (no decode) -- and a decode that does not confirm it is redone without the option.
            Other frame requests raise ValueError; ``seconds_available`` stops at t; audio and
            transcripts are unchanged. Default None: every sample is stored.
        skip_unshown: H.264/HEVC frames shown at no grid second that no other frame
            references are not decoded (:class:`_Unshown`; :attr:`skipped_frames` counts
            them). Changes no sample, pixel or timing (a pass it cannot confirm is redone
            without it); ``False`` decodes every frame, for comparison.

    Raises (from the first decoding call):
        MediaError: missing, 0-byte, unreadable file, or a file with neither decodable video nor
            audio. A truncated file yields its decodable prefix (``info.duration_s`` shorter).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        sample_rate: int = DEFAULT_SAMPLE_RATE,
        max_memory_bytes: int = 1 << 30,
        asr: AsrSettings | None = None,
        rgb_cache_bytes: int = 128 << 20,
        store_max_side: int | Callable[[int, int], int | None] | None = None,
        rgb_max_side: int | None = None,
        keep_only: tuple[float, int, str] | None = None,
        skip_unshown: bool = True,
    ) -> None:
        self.path = Path(path)
        if keep_only is not None:
            t, m, policy = keep_only
            if t != t:
                raise ValueError("keep_only: t is NaN")
            select_indices(1, int(m), policy)  # validates max_frames and policy
            keep_only = (float(t), int(m), policy)
        self.keep_only = keep_only
        _check_file(self.path)
        self.sample_rate = int(sample_rate)
        self.max_memory_bytes = int(max_memory_bytes)
        self.asr = asr
        self._rgb_cache_bytes = int(rgb_cache_bytes)
        self.store_max_side = store_max_side
        self.rgb_max_side = rgb_max_side
        self.stored_side: int | None = None  # long side the samples were stored at (None: source)
        self.stored_as: str | None = None  # "rgb24" | "yuv420p" once decoded (None: no video)
        self.rgb_conversions = 0  # RGB conversions done on request (not in the decode pass)
        self._rgb_bytes = 0
        self._lock = threading.RLock()
        self._loaded = False
        self._info: MediaInfo | None = None
        self._samples: list[_Sample] = []
        self._prefix_end: int | None = None  # keep_only: samples end at this second (None: all)
        self._stored: list[_Stored] = []
        self._rotation = 0
        self._audio: np.ndarray | None = None  # mono float32 on the file clock from 0
        self.audio_backend: str | None = None  # "pyav" | "soundfile" | None (no audio)
        self._rgb: OrderedDict[tuple[int, int | None], np.ndarray] = OrderedDict()
        # every converted frame still referenced anywhere (e.g. by a batch of requests): found
        # again after the LRU cache evicted it, so it is never converted (nor held) twice
        self._handed: weakref.WeakValueDictionary[tuple[int, int | None], np.ndarray] = (
            weakref.WeakValueDictionary()
        )
        self._audio_buf: np.ndarray | None = None  # the track + zero padding to the clip end
        self._transcript: Transcript | None = None
        self._strict_cache: dict[int, Transcript] = {}
        self.decode_count = 0  # how many times the file was decoded (1 after loading)
        self.skip_unshown = bool(skip_unshown)
        self.skipped_frames = 0  # video frames the decode pass did not decode (shown at no second)

    # ------------------------------------------------------------------ loading
    @property
    def info(self) -> MediaInfo:
        """MediaInfo measured during the single decode pass (decodes on first access)."""
        self._ensure()
        assert self._info is not None
        return self._info

    @property
    def duration_s(self) -> float:
        """Measured duration (s): latest packet end over the video and audio streams."""
        return self.info.duration_s

    @property
    def has_audio(self) -> bool:
        return self.info.has_audio

    def _ensure(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if not self._loaded:
                self._load()
                self._loaded = True

    def _load(self) -> None:
        # Plain audio files first through libsndfile (it refuses video containers).
        try:
            sfi = sf.info(str(self.path))
        except Exception:  # noqa: BLE001 - not a libsndfile format
            sfi = None
        if sfi is not None:
            try:
                data, sr = sf.read(str(self.path), dtype="float32", always_2d=True)
            except Exception as exc:  # noqa: BLE001
                log.debug("%s: soundfile read failed (%s); using PyAV", self.path, exc)
            else:
                track = _resample_array(data, int(sr), self.sample_rate)
                self._audio_buf = np.zeros(len(track) + self.sample_rate, np.float32)
                self._audio_buf[: len(track)] = track
                self._audio = self._audio_buf[: len(track)]
                self.audio_backend = "soundfile"
                self.decode_count += 1
                self._info = MediaInfo(
                    duration_s=round(data.shape[0] / sr, 3),
                    has_audio=True,
                    width=0,
                    height=0,
                    audio_start_s=0.0,
                    audio_end_s=data.shape[0] / sr,
                    audio_sample_rate=int(sr),
                    audio_channels=int(data.shape[1]),
                    format_name=str(sfi.format).lower(),
                    has_video=False,
                )
                return
        self._decode(video=True)

    def _decode(self, video: bool = True) -> None:
        """The single PyAV pass: demux once, decode video (1 fps samples) and audio."""
        try:
            with decoding(self.path, open_container(self.path)) as c:
                self._decode_open(c, video, self.keep_only is not None, self.skip_unshown)
        except _Redo as why:
            log.debug("%s: %s; decoding every frame and sample", self.path, why)
            self._samples, self._stored, self._audio_buf = [], [], None
            self.skipped_frames = 0
            self.decode_count += 1
            with decoding(self.path, open_container(self.path)) as c:
                self._decode_open(c, video, False, False)
        self.decode_count += 1
        _trim_heap()

    def _plan_cap(self, c: av.container.InputContainer, streams: list, origin: Fraction) -> int:
        """``keep_only``: the prefix's last grid second, ``min(floor(t), last second)`` (the
        last second from the header when t is >= 1 s before its end, else from the packet
        ends of a demux-only pass, as the decode pass measures them)."""
        tk = math.floor(round(self.keep_only[0], 9))
        declared = declared_duration(c, origin)
        if declared is not None and tk < math.floor(declared) - 1:
            return tk
        probe_dec = _Decoder(self, origin, None, False)
        with decoding(self.path, open_container(self.path)) as c2:
            try:
                for pkt in c2.demux(*[c2.streams[s.index] for s in streams]):
                    probe_dec._track_times(pkt)
            except av.error.FFmpegError:
                pass  # a damaged tail: the decode pass stops there too
        ends = [e * probe_dec._tbs[i] - origin for i, e in probe_dec._tick_end.items()]
        return min(tk, math.floor(max(ends + [Fraction(0)]) + Fraction(1, 10**9)))

    def _decode_open(
        self, c: av.container.InputContainer, want_video: bool, plan: bool, skip: bool
    ) -> None:
        p = self.path
        v = c.streams.video[0] if (want_video and c.streams.video) else None
        a = c.streams.audio[0] if c.streams.audio else None
        if v is None and a is None:
            raise MediaError(f"{p}: no video or audio stream")
        origin = file_origin(c)
        if v is not None:
            v.thread_type = "AUTO"
        side, rgb_side = self._store_sides(c, v, a, origin)
        picks = None
        if plan and v is not None:
            cap = self._plan_cap(c, [s for s in (v, a) if s is not None], origin)
            picks = _Picks(cap, *self.keep_only[1:])
        dec = _Decoder(self, origin, side, a is not None, rgb_side, picks)
        if a is not None:  # the track's buffer from the header duration (+ the 1 s padding),
            # at most max_memory_bytes: a damaged header's absurd duration cannot ask for more
            est = min(max(0.0, (c.duration or 0) / 1e6 - float(origin)), 1e7)
            dec.track = _Track(
                min(_n_samples(est + 2, self.sample_rate), self.max_memory_bytes // 4)
            )
        if skip and v is not None and v.codec_context.name in _SKIP_CODECS:
            dec.unshown = _Unshown(v.codec_context, v.time_base, origin)
        error = dec.demux_all(c, [s for s in (v, a) if s is not None])
        if v is not None and dec.n_video_frames == 0:
            if a is None or dec.n_audio_frames == 0:
                raise MediaError(
                    f"{p}: no decodable video frame" + (f" ({error})" if error else "")
                )
            log.warning("%s: video stream has no decodable frame; using audio only", p)
            v = None
        if a is not None and dec.n_audio_frames == 0:
            a = None
        if not dec.ends or (v is None and a is None):
            raise MediaError(f"{p}: nothing decodable" + (f" ({error})" if error else ""))
        live = [s.index for s in (v, a) if s is not None]
        duration = max([dec.ends[i] for i in live if i in dec.ends] + [Fraction(0)])
        last = int(math.floor(duration + Fraction(1, 10**9)))
        if v is not None and dec.unshown is not None and dec.unshown.skipped:
            shown_to = last if picks is None else min(last, picks.cap)  # keep_only: to t
            n = None if dec.dropped else dec.unshown.not_decoded(dec.placed, shown_to)
            if n is None:
                raise _Redo("frames skipped as shown at no second are not confirmed")
            self.skipped_frames = n
        if v is not None and dec.prev is not None:
            dec.emit(dec.prev, dec.prev_pts, None, last)
        if picks is not None and v is not None:
            if picks.cap != min(math.floor(round(self.keep_only[0], 9)), last):
                raise _Repick("keep_only picks not confirmed")
            self._prefix_end = picks.cap if picks.cap < last else None
        self._rotation = dec.rotation or 0
        if a is not None:
            self._audio = dec.audio_track(_n_samples(float(duration) + 1, self.sample_rate))
            self.audio_backend = "pyav" if self._audio is not None else None
        self._info = self._make_info(c, v, a, dec, duration, origin)
        if v is not None:
            self.stored_as = "rgb24" if rgb_side is not None else "yuv420p"
            self.stored_side = rgb_side if rgb_side is not None else side

    def _store_sides(self, c, v, a, origin: Fraction) -> tuple[int | None, int | None]:
        """(yuv side, RGB side) in px to store the 1 fps samples at, one of them None.

        RGB mode (``rgb_max_side`` downscales the source and the consumer's side does not go
        lower) when its samples estimated from the header duration fit the memory budget;
        else yuv420p at ``store_max_side`` (a number, or the consumer's side for the display
        size fitted to ``rgb_max_side``), lowered to fit the budget."""
        if v is None:
            return (None if callable(self.store_max_side) else self.store_max_side), None
        cw, ch = v.codec_context.width or 0, v.codec_context.height or 0
        fw, fh = fit_size(cw, ch, self.rgb_max_side)
        side = self.store_max_side
        if callable(side):
            side = side(fw, fh) if cw and ch else None
        if side is not None and cw and ch and side >= max(fw, fh):
            side = None  # the consumer takes the frames at the callers' size
        est_s = (c.duration or 0) / 1e6 - float(origin)
        n_est = max(1.0, est_s + 2)
        audio_est = n_est * self.sample_rate * 4 if a is not None else 0
        budget = max(1, self.max_memory_bytes - self._rgb_cache_bytes - int(audio_est))
        rgb_mode = side is None and cw and ch and max(fw, fh) < max(cw, ch)
        if rgb_mode and n_est * fw * fh * 3 <= budget + self._rgb_cache_bytes:
            return None, int(self.rgb_max_side)
        store_side = max(fw, fh) if rgb_mode else side
        need = n_est * cw * ch * 1.5
        if cw and ch and need > budget:
            bound = max(16, int(max(cw, ch) * math.sqrt(budget / need)))
            store_side = bound if store_side is None else min(store_side, bound)
            log.info("%s: storing 1 fps frames downscaled to max side %d", self.path, store_side)
        return store_side, None

    def _make_info(self, c, v, a, dec: _Decoder, duration: Fraction, origin: Fraction):
        def _f(i: int | None, d: dict[int, Fraction]) -> float | None:
            return None if i is None or i not in d else round(float(d[i]), 6)

        cw = self._stored[0].width if self._stored else (v.codec_context.width if v else 0)
        ch = self._stored[0].height if self._stored else (v.codec_context.height if v else 0)
        if v is not None:
            cw, ch = v.codec_context.width, v.codec_context.height
        w, h = (ch, cw) if self._rotation in (90, 270) else (cw, ch)
        return MediaInfo(
            duration_s=round(float(duration), 3),
            has_audio=a is not None,
            width=w,
            height=h,
            rotation_deg=self._rotation,
            video_start_s=_f(v.index if v else None, dec.starts) or 0.0,
            audio_start_s=_f(a.index if a else None, dec.starts),
            coded_width=cw,
            coded_height=ch,
            video_end_s=_f(v.index if v else None, dec.ends),
            audio_end_s=_f(a.index if a else None, dec.ends),
            fps=float(v.average_rate) if v is not None and v.average_rate else None,
            audio_sample_rate=a.codec_context.sample_rate if a is not None else None,
            audio_channels=a.codec_context.layout.nb_channels if a is not None else None,
            format_name=c.format.name,
            has_video=v is not None,
            declared_duration_s=declared_duration(c, origin),
        )

    @property
    def held_bytes(self) -> int:
        """Bytes of media data this object holds now: stored 1 fps samples + RGB cache + audio
        track (bounded by ``max_memory_bytes`` up to the header-duration estimate)."""
        frames = sum(s.nbytes for s in self._stored)
        audio = self._audio.nbytes if self._audio is not None else 0
        return frames + self._rgb_bytes + audio

    # ------------------------------------------------------------------ frames
    def seconds_available(self) -> list[int]:
        """Grid seconds k (ascending) for which a frame is shown (k <= duration; with
        ``keep_only``, k <= its t)."""
        self._ensure()
        return [s.second for s in self._samples]

    def _rgb_of(self, store: int, max_side: int | None) -> np.ndarray:
        """Upright RGB of stored sample ``store`` at ``max_side``: the store itself in RGB mode
        (when ``max_side`` does not ask for smaller), else converted once and kept while the
        LRU cache or any caller (a batch of requests) still holds it."""
        st = self._stored[store]
        if st.rgb is not None and (
            max_side is None or fit_size(st.width, st.height, max_side) == (st.width, st.height)
        ):
            return st.rgb
        key = (store, max_side)
        with self._lock:
            img = self._rgb.get(key)
            if img is not None:
                self._rgb.move_to_end(key)
                return img
            img = self._handed.get(key)
        if img is None:
            if st.rgb is not None:  # a smaller size than stored: from the stored RGB
                fr = av.VideoFrame.from_numpy_buffer(st.rgb, format="rgb24")  # a view: no copy
                img = _to_rgb(fr, 0, max_side)
            else:
                img = _to_rgb(st.video_frame(), self._rotation, max_side)
            self.rgb_conversions += 1
        with self._lock:
            img = self._handed.setdefault(key, img)
            if key not in self._rgb:
                self._rgb[key] = img
                self._rgb_bytes += img.nbytes
            while self._rgb_bytes > self._rgb_cache_bytes and len(self._rgb) > 1:
                self._rgb_bytes -= self._rgb.popitem(last=False)[1].nbytes
        return img

    def frames_until(
        self,
        t: float,
        max_frames: int = 32,
        policy: str = "uniform",
        max_side: int | None = None,
    ) -> list[Frame]:
        """The causal 1 fps frames at decision time ``t`` (SPEC §2 "Frames").

        The frame shown at grid second k (integer, 0 <= k <= t, k <= duration) is the last
        frame with pts <= k; seconds before the video's first frame have none. When more than
        ``max_frames`` exist, ``policy`` picks them (:func:`select_indices`): ``uniform`` evenly
        spaced over the prefix, always keeping the newest; ``recent`` the newest ones.

        Args:
            t: decision time (s, file clock).
            max_frames: cap (SPEC ``frames.max``, default 32).
            policy: ``"uniform"``, ``"recent"`` or ``"stride"`` (``frames.cap_policy``).
            max_side: if set, downscale so the longer side is at most this many pixels.

        Returns:
            Frames in time order; each ``image`` is (H, W, 3) uint8 RGB, upright, read-only,
            never larger than the stored samples (``store_max_side``/``rgb_max_side``). The
            same sample at the same ``max_side`` is the same array object at every call while
            anything holds it (RGB mode: always; otherwise the LRU cache or any caller), so
            requests share frames instead of copying them.
            ``[]`` for audio-only files or t before the first frame.

        Raises:
            MediaError: the file cannot be decoded (first call only).
            ValueError: bad policy/max_frames, t is NaN, or (``keep_only``) a request whose
                frames were not kept.
        """
        if t != t:
            raise ValueError("t is NaN")
        select_indices(1, max_frames, policy)  # validate arguments early
        self._ensure()
        tk = math.floor(round(float(t), 9))
        prefix = [s for s in self._samples if s.second <= tk]
        picked = [prefix[i] for i in select_indices(len(prefix), max_frames, policy)]
        if any(s.store < 0 for s in picked) or (
            self._prefix_end is not None and tk > self._prefix_end
        ):
            t0, m, pol = self.keep_only
            raise ValueError(
                f"{self.path}: opened with keep_only for frames_until({t0:g}, max_frames={m}, "
                f"policy={pol!r}) only; open it without keep_only for other requests"
            )
        return [Frame(s.second, s.pts_s, self._rgb_of(s.store, max_side)) for s in picked]

    # ------------------------------------------------------------------ audio
    @property
    def audio_track(self) -> np.ndarray:
        """The whole decoded track, mono float32 at ``self.sample_rate`` Hz, sample 0 at file
        time 0 (zeros before a late start); empty without audio. Read-only view."""
        self._ensure()
        if self._audio is None:
            return np.zeros(0, np.float32)
        view = self._audio.view()
        view.setflags(write=False)
        return view

    def audio_until(self, t: float, sample_rate: int | None = None) -> np.ndarray:
        """The causal waveform [0, t] (SPEC §2 "Audio", mode ``native``).

        Args:
            t: decision time (s, file clock), t >= 0.
            sample_rate: output rate in Hz (default: ``self.sample_rate``, 16000).

        Returns:
            float32 mono array of exactly ``round(t * sample_rate)`` samples; sample i is file
            time i / sample_rate. Zero-filled where the audio starts late, ends early, or the
            file has no audio. **Read-only**: at the decoded rate and up to 1 s past the clip
            end it is a view of one buffer (the track, zero-padded once; for a file without
            audio a shared zero buffer), so requests share it instead of copying
            (``np.shares_memory`` between two calls is True); copy it before modifying. Past
            that, or at another rate, a fresh (read-only) array.

        Raises:
            MediaError: the file cannot be decoded (first call only).
            ValueError: t < 0 or NaN.
        """
        if not t >= 0:
            raise ValueError(f"t must be >= 0, got {t}")
        self._ensure()
        sr = self.sample_rate if sample_rate is None else int(sample_rate)
        n = _n_samples(t, sr)
        if sr == self.sample_rate:
            buf = self._shared_audio(n)
            if n <= len(buf):
                view = buf[:n]
                view.setflags(write=False)
                return view
        out = np.zeros(n, np.float32)
        if self._audio is not None and n > 0:
            if sr == self.sample_rate:
                src = self._audio
            else:
                m = min(len(self._audio), _n_samples(t, self.sample_rate) + self.sample_rate // 10)
                src = _resample_array(self._audio[:m], self.sample_rate, sr)
            k = min(n, len(src))
            out[:k] = src[:k]
        out.setflags(write=False)
        return out

    def _shared_audio(self, n: int) -> np.ndarray:
        """The buffer ``audio_until`` views at the decoded rate: the zero-padded track, or (no
        audio) a zero buffer grown to cover ``n`` samples (calloc'ed: costs no memory)."""
        if self._audio is not None:
            return self._audio_buf if self._audio_buf is not None else self._audio
        with self._lock:
            if self._audio_buf is None or len(self._audio_buf) < n:
                dur = self._info.duration_s if self._info is not None else 0.0
                size = max(n, _n_samples(dur + 1, self.sample_rate))
                self._audio_buf = np.zeros(size, np.float32)
            return self._audio_buf

    # ------------------------------------------------------------------ transcript
    def transcript(self) -> Transcript:
        """The transcript of the whole file (one ASR pass, cached); words on the file clock with
        ends clipped to the duration. Empty, without loading a model, when there is no audio.

        Raises:
            AsrError: the ASR backend or its model is unavailable.
        """

        self._ensure()
        with self._lock:
            if self._transcript is None:
                if self._audio is None or not np.any(self._audio):
                    self._transcript = Transcript((), self.duration_s)
                else:
                    settings = self.asr or AsrSettings()
                    self._transcript = transcribe(
                        self._audio, settings, sample_rate=self.sample_rate,
                        duration_s=self.duration_s,
                    )  # fmt: skip
            return self._transcript

    def transcript_until(self, t: float) -> Transcript:
        """The causal transcript at ``t`` (SPEC §2 "Audio", mode ``asr``).

        Default: words of the whole-file transcript whose end (clipped to the media duration)
        is <= t, compared in milliseconds. Caveat: the whole-file pass let the decoder hear
        audio after t (context can change earlier words); with ``AsrSettings(strict=True)``
        the causal prefix [0, t] is transcribed instead (one ASR call per distinct t, cached).

        Returns:
            Transcript (``.words``: Word(text, start_s, end_s, probability); ``.text``).

        Raises:
            AsrError: the ASR backend or its model is unavailable (never for a file without
                audio, whose transcript is empty).
            ValueError: t < 0 or NaN.
        """

        if not t >= 0:
            raise ValueError(f"t must be >= 0, got {t}")
        settings = self.asr or AsrSettings()
        if not settings.strict:
            return self.transcript().until(t)
        self._ensure()
        if self._audio is None or not np.any(self._audio[: _n_samples(t, self.sample_rate)]):
            return Transcript((), min(t, self.duration_s))
        key = int(round(t * 1000))
        with self._lock:
            got = self._strict_cache.get(key)
        if got is None:
            bound = min(float(t), self.duration_s)
            got = transcribe(
                self.audio_until(t), settings, sample_rate=self.sample_rate, duration_s=bound
            ).until(t)
            with self._lock:
                self._strict_cache[key] = got
        return got
