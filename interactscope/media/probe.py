"""Media probing: duration measured from the streams' packets, not trusted from headers.

(Placeholder written by the foundation; the media-layer issue owns and refines it.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import av


class MediaError(RuntimeError):
    """A media file cannot be read; the message names the file."""


@dataclass(frozen=True)
class MediaInfo:
    duration_s: float
    has_audio: bool
    width: int
    height: int
    rotation_deg: int = 0
    video_start_s: float = 0.0
    audio_start_s: float | None = None


def probe(path: str | Path) -> MediaInfo:
    """Measure a file: duration = the latest packet end over its video and audio streams (s).

    Raises:
        MediaError: missing, empty or undecodable file, or no video stream.
    """
    p = Path(path)
    if not p.exists():
        raise MediaError(f"{p}: file not found")
    if p.stat().st_size == 0:
        raise MediaError(f"{p}: file is empty (0 bytes)")
    try:
        with av.open(str(p)) as c:
            if not c.streams.video:
                raise MediaError(f"{p}: no video stream")
            v = c.streams.video[0]
            a = c.streams.audio[0] if c.streams.audio else None
            end = 0.0
            starts: dict[int, float] = {}
            streams = [v] + ([a] if a is not None else [])
            for pkt in c.demux(*streams):
                if pkt.pts is None:
                    continue
                tb = float(pkt.time_base)
                s = pkt.pts * tb
                starts[pkt.stream.index] = min(starts.get(pkt.stream.index, s), s)
                end = max(end, s + (pkt.duration or 0) * tb)
            return MediaInfo(
                duration_s=round(end, 3),
                has_audio=a is not None,
                width=v.codec_context.width,
                height=v.codec_context.height,
                video_start_s=starts.get(v.index, 0.0),
                audio_start_s=starts.get(a.index) if a is not None else None,
            )
    except MediaError:
        raise
    except Exception as exc:  # noqa: BLE001 - PyAV raises many types
        raise MediaError(f"{p}: cannot decode ({exc})") from exc
