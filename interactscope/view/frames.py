"""The frames (and transcript) a model saw at each decision point, as embedded JPEG thumbnails.

Frames come from :meth:`interactscope.media.CausalMedia.frames_until` with the run's own
``frames.max`` and ``frames.cap_policy`` from ``run.json``: exactly the causal observation, same
decoder, same cap. A frame is encoded once per video and second and shared by every point and
run that shows it; :attr:`ViewSettings.max_thumbnails` caps the distinct thumbnails of a page.
"""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from interactscope.media import AsrSettings, CausalMedia, MediaError, select_indices
from interactscope.streaming.settings import Settings
from interactscope.view.model import FramesAt, ViewSettings

__all__ = ["FrameSource", "point_key"]

log = logging.getLogger(__name__)


def point_key(t: float) -> str:
    """JSON key of a decision point: t in milliseconds, as text."""
    return str(int(round(float(t) * 1000)))


def _jpeg(image, px: int, quality: int) -> str:
    img = Image.fromarray(image)
    img.thumbnail((px, px))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


class FrameSource:
    """Thumbnails for one page; one decoded :class:`CausalMedia` per (video, ASR mode).

    Args:
        view: the viewer settings (cap, thumbnail size, transcripts).
    """

    def __init__(self, view: ViewSettings) -> None:
        self.view = view
        self.thumbs: dict[str, str] = {}
        self.cap_reached = False
        self._media: dict[tuple[str, bool], CausalMedia | None] = {}
        self._broken: dict[str, str] = {}

    def _open(self, path: Path, strict: bool) -> CausalMedia | None:
        key = (str(path), strict)
        if key not in self._media:
            try:
                self._media[key] = CausalMedia(path, asr=AsrSettings(strict=strict))
            except MediaError as exc:
                self._broken[str(path)] = str(exc)
                self._media[key] = None
        return self._media[key]

    def _thumb(self, video_id: str, media: CausalMedia, frame) -> str | None:
        key = f"{video_id}@{frame.pts_s:.3f}"
        if key in self.thumbs:
            return key
        if len(self.thumbs) >= self.view.max_thumbnails:
            self.cap_reached = True
            return None
        self.thumbs[key] = _jpeg(frame.image, self.view.thumb_px, self.view.jpeg_quality)
        return key

    def _cap_note(self) -> str:
        n = self.view.max_thumbnails
        return f"frames not embedded: the page's thumbnail cap (max_thumbnails={n}) was reached"

    def _transcript(self, media: CausalMedia, t: float) -> str | None:
        try:
            return media.transcript_until(t).text
        except (MediaError, ValueError) as exc:  # AsrError is a MediaError
            return f"(no transcript: {exc})"

    def at_points(
        self, video_id: str, path: Path, settings: Settings, points: Sequence[float]
    ) -> dict[str, FramesAt]:
        """``point_key(t) -> FramesAt`` for each decision time in ``points`` (s).

        A ``scene = none`` run saw no frames; an unreadable file gives a note, never an error.
        """
        if settings.scene == "none":
            return {point_key(t): FramesAt(note="scene=none: request text only") for t in points}
        media = self._open(path, settings.audio.asr_strict)
        if media is None or str(path) in self._broken:
            note = f"media unreadable: {self._broken.get(str(path), path)}"
            return {point_key(t): FramesAt(note=note) for t in points}
        asr = settings.audio.mode == "asr" and self.view.transcripts
        out: dict[str, FramesAt] = {}
        for t in points:
            if self.cap_reached:  # past the cap: skip the decode work too
                out[point_key(t)] = FramesAt(note=self._cap_note())
                continue
            try:
                frames = media.frames_until(
                    t, max_frames=settings.frames.max, policy=settings.frames.cap_policy
                )
            except (MediaError, ValueError) as exc:
                self._broken[str(path)] = str(exc)
                out[point_key(t)] = FramesAt(note=f"media unreadable: {exc}")
                continue
            shown = set(select_indices(len(frames), self.view.thumbs_per_point, "uniform"))
            thumbs = [self._thumb(video_id, media, f) if i in shown else None
                      for i, f in enumerate(frames)]  # fmt: skip
            out[point_key(t)] = FramesAt(
                times=[round(f.pts_s, 3) for f in frames],
                thumbs=thumbs,
                transcript=self._transcript(media, t) if asr else None,
            )
        return out
