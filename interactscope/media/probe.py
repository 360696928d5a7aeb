"""Media probing (docs/protocol.md#data-model, docs/protocol.md#causal-observation).

``probe(path)`` measures a file from its streams rather than trusting header fields: the
duration is the latest presentation end over every demuxed video/audio packet, and the first
video frame is decoded to prove the video is decodable and to read its rotation.

One clock: every time this package reports is in seconds on the *file clock*, measured from the
file's start (:func:`file_origin`). For MP4/MOV/MKV that origin is 0 (a stream that starts late,
e.g. audio at 0.5 s, keeps its offset); for formats whose timestamps do not start at zero
(MPEG-TS/PS, flagged ``AVFMT_TS_DISCONT`` by FFmpeg) it is the earliest stream start, taken
exactly in that stream's own time base (90 kHz ticks), never rounded to microseconds.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av

from interactscope.core.errors import InteractScopeError

log = logging.getLogger(__name__)

_AV_TIME_BASE = Fraction(1, 1_000_000)
_AVFMT_TS_DISCONT = 0x0200


class MediaError(InteractScopeError, RuntimeError):
    """A media file cannot be read or used; the message names the file (and the field)."""


@dataclass(frozen=True)
class MediaInfo:
    """What :func:`probe` measured. All times are seconds on the file clock.

    Attributes:
        duration_s: latest presentation end (pts + duration) over the video and audio packets,
            measured from the file start; rounded to milliseconds.
        has_audio: the file has an audio stream.
        width, height: display size in pixels *after* rotation (what a player shows).
        rotation_deg: counter-clockwise rotation, in degrees (0, 90, 180, 270), that the display
            matrix asks a player to apply to the coded picture (FFmpeg/PyAV convention, equal to
            ``VideoFrame.rotation``). Frames from :class:`~interactscope.media.CausalMedia`
            already have it applied.
        coded_width, coded_height: the coded picture size before rotation.
        video_start_s: presentation time of the first video packet.
        audio_start_s: presentation time of the first audio packet (None without audio); may be
            slightly negative (AAC encoder priming, removed by the decoder).
        video_end_s / audio_end_s: presentation end of each stream (None when absent).
        fps: average frame rate (frames / s) from the stream header, informative only.
        audio_sample_rate, audio_channels: of the first audio stream (None without audio).
        format_name: FFmpeg's demuxer name.
        declared_duration_s: the duration the container header declares (s, file clock), or
            None when it declares none; a measured ``duration_s`` far from it means a truncated
            or damaged file.
    """

    duration_s: float
    has_audio: bool
    width: int
    height: int
    rotation_deg: int = 0
    video_start_s: float = 0.0
    audio_start_s: float | None = None
    coded_width: int = 0
    coded_height: int = 0
    video_end_s: float | None = None
    audio_end_s: float | None = None
    fps: float | None = None
    audio_sample_rate: int | None = None
    audio_channels: int | None = None
    format_name: str = ""
    has_video: bool = True
    declared_duration_s: float | None = None


def _check_file(p: Path) -> None:
    if not p.exists():
        raise MediaError(f"{p}: file not found")
    if p.is_dir():
        raise MediaError(f"{p}: is a directory, not a media file")
    if p.stat().st_size == 0:
        raise MediaError(f"{p}: file is empty (0 bytes)")


def open_container(path: str | Path) -> av.container.InputContainer:
    """Open ``path`` for reading with PyAV.

    Raises:
        MediaError: missing, empty or unreadable file (the message names the file).
    """
    p = Path(path)
    _check_file(p)
    try:
        return av.open(str(p), mode="r")
    except Exception as exc:  # noqa: BLE001 - PyAV/FFmpeg raise many types
        raise MediaError(f"{p}: cannot open as media ({exc})") from exc


@contextlib.contextmanager
def decoding(
    path: str | Path, container: av.container.InputContainer
) -> Iterator[av.container.InputContainer]:
    """``container`` (``path`` open, :func:`open_container`) for the body of a ``with``, closed
    after it.

    Raises:
        MediaError: any exception of the body that is not one becomes ``<path>: cannot decode
            (<reason>)``.
    """
    try:
        yield container
    except MediaError:
        raise
    except Exception as exc:  # noqa: BLE001 - PyAV raises many types
        raise MediaError(f"{path}: cannot decode ({exc})") from exc
    finally:
        container.close()


def file_origin(container: av.container.InputContainer) -> Fraction:
    """The file-clock origin in seconds (exact): 0, or the start time of TS-like formats.

    For TS-like formats this is the earliest audio/video stream start in that stream's own time
    base (an exact fraction of 90 kHz ticks): the container's start time is rounded to whole
    microseconds, which would put every time a fraction of a microsecond early and lose the
    frame shown at the last grid second."""
    if not container.format.flags & _AVFMT_TS_DISCONT:
        return Fraction(0)
    starts = [
        s.start_time * s.time_base
        for s in container.streams
        if s.type in ("video", "audio") and s.start_time is not None and s.time_base
    ]
    if starts:
        return max(Fraction(0), min(starts))
    if container.start_time is not None:
        return max(Fraction(0), container.start_time * _AV_TIME_BASE)
    return Fraction(0)


def declared_duration(container: av.container.InputContainer, origin: Fraction) -> float | None:
    """The container header's duration on the file clock (s, ms-rounded), or None."""
    if not container.duration:
        return None
    end = Fraction(container.duration, 1_000_000)
    if container.start_time is not None and container.format.flags & _AVFMT_TS_DISCONT:
        end += Fraction(container.start_time, 1_000_000) - origin
    return round(float(end), 3)


def rotation_of(frame: av.VideoFrame) -> int:
    """Counter-clockwise display rotation of a decoded frame, snapped to 0/90/180/270."""
    try:
        r = float(frame.rotation or 0)
    except Exception:  # noqa: BLE001 - no display matrix
        return 0
    return int(round(r / 90.0)) * 90 % 360


def probe(path: str | Path, *, require_video: bool = True) -> MediaInfo:
    """Measure a media file (docs/protocol.md#data-model: duration from the streams, not from the header).

    Demuxes every packet of the first video and audio stream (no decode, so it is fast) and
    decodes only the first video frame (to prove the video decodes and to read its rotation).
    A truncated file reports the duration of what is actually there.

    Args:
        path: media file.
        require_video: when True (default) a file without a decodable video stream is an error;
            when False an audio-only file is accepted (width = height = 0, has_video False).

    Returns:
        MediaInfo (times in seconds on the file clock, sizes in pixels).

    Raises:
        MediaError: file missing, 0 bytes, unreadable, no video stream (when required), or no
            decodable video frame. The message names the file.
    """
    p = Path(path)
    with decoding(p, open_container(p)) as container:
        return _probe_open(p, container, require_video)


def _probe_open(p: Path, c: av.container.InputContainer, require_video: bool) -> MediaInfo:
    v = c.streams.video[0] if c.streams.video else None
    a = c.streams.audio[0] if c.streams.audio else None
    if v is None and (require_video or a is None):
        raise MediaError(f"{p}: no video stream" if a is not None else f"{p}: no media streams")
    origin = file_origin(c)
    starts: dict[int, Fraction] = {}
    ends: dict[int, Fraction] = {}
    rotation = 0
    first_frame: av.VideoFrame | None = None
    streams = [s for s in (v, a) if s is not None]
    try:
        for pkt in c.demux(*streams):
            if pkt.pts is None and pkt.dts is None:
                continue  # flush packet
            ts = pkt.pts if pkt.pts is not None else pkt.dts
            tb = pkt.time_base
            start = ts * tb - origin
            end = (ts + (pkt.duration or 0)) * tb - origin
            i = pkt.stream.index
            starts[i] = min(starts.get(i, start), start)
            ends[i] = max(ends.get(i, end), end)
            if v is not None and first_frame is None and i == v.index:
                try:
                    for fr in pkt.decode():
                        first_frame = fr
                        break
                except av.error.FFmpegError:
                    pass  # a damaged leading packet: keep trying later ones
    except av.error.FFmpegError as exc:
        # Truncated/damaged tail: keep what demuxed so far (the real, shorter duration).
        log.warning("%s: demux stopped early (%s); measuring the readable prefix", p, exc)
    if v is not None and first_frame is None:
        try:  # frames may sit in the decoder until it is flushed
            for fr in v.codec_context.decode(None):
                first_frame = fr
                break
        except av.error.FFmpegError:
            pass
    if v is not None and first_frame is None:
        if require_video:
            raise MediaError(f"{p}: no decodable video frame")
        v = None
    if first_frame is not None:
        rotation = rotation_of(first_frame)
    if not ends:
        raise MediaError(f"{p}: no readable packets")

    def _s(x: Fraction | None) -> float | None:
        return None if x is None else round(float(x), 6)

    duration = max(max(ends.values()), Fraction(0))
    cw = v.codec_context.width if v is not None else 0
    ch = v.codec_context.height if v is not None else 0
    if first_frame is not None:
        cw, ch = first_frame.width, first_frame.height
    w, h = (ch, cw) if rotation in (90, 270) else (cw, ch)
    fps = None
    if v is not None and v.average_rate:
        fps = float(v.average_rate)
    return MediaInfo(
        duration_s=round(float(duration), 3),
        has_audio=a is not None,
        width=w,
        height=h,
        rotation_deg=rotation,
        video_start_s=_s(starts.get(v.index)) or 0.0 if v is not None else 0.0,
        audio_start_s=_s(starts.get(a.index)) if a is not None else None,
        coded_width=cw,
        coded_height=ch,
        video_end_s=_s(ends.get(v.index)) if v is not None else None,
        audio_end_s=_s(ends.get(a.index)) if a is not None else None,
        fps=fps,
        audio_sample_rate=a.codec_context.sample_rate if a is not None else None,
        audio_channels=a.codec_context.layout.nb_channels if a is not None else None,
        format_name=c.format.name,
        has_video=v is not None,
        declared_duration_s=declared_duration(c, origin),
    )
