"""Judges that look: ``openai:MODEL+frames`` and ``local:PATH+frames``.

The text judge reads only the request, the reference and the candidate; a candidate that sounds
right passes whether or not it matches what happened on screen. A looking judge also gets what
the stream showed around the target (reported beside the paper's text judge, never instead):

* ``visual`` targets: at most ``max_frames`` (K, default 3) frames of the target's window
  W = [lo, hi], taken at K evenly spaced times from lo to hi (K = 3: τ − δ, τ, τ + δ for a target
  with a time; start, middle, end for an interval). The frame at time x is the one the causal
  decoder shows at x (:meth:`interactscope.media.CausalMedia.frames_until`: the last frame with
  pts <= floor(x)); times below 0 are read at 0, and two times showing the same frame send it
  once. Frames are downscaled to ``max_side`` pixels (long side, default 512).
* ``auditory`` targets: the waveform of W (16 kHz mono, at most ``max_audio_s`` s around its
  middle) when the engine takes audio; otherwise nothing, and the judge's settings say so.
* ``other`` targets, and a window with no frame: the text alone (the prompt says why).

The unit the runner deduplicates and caches is a :class:`LookedTriple`: the text triple plus the
SHA-256 of what is attached (frame times and pixel bytes, audio samples), which goes into the
cache key; different frames give a different key, re-scoring the same run hits the cache.
Verdicts are parsed with the strict :func:`~interactscope.streaming.judges.base.parse_verdict`.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from interactscope.engines.base import AudioPart, EngineError, ImagePart, Message, Part, TextPart
from interactscope.media import CausalMedia
from interactscope.media.probe import MediaError
from interactscope.streaming.judges.base import (
    JUDGE_SYSTEM,
    Judge,
    JudgeError,
    JudgeItem,
    Verdict,
    parse_verdict,
)

__all__ = [
    "FRAMES_PROMPT_VERSION",
    "FramesJudge",
    "FramesSettings",
    "Look",
    "LookedTriple",
    "window_times",
]

FRAMES_PROMPT_VERSION = "judge-frames-v1"
"""Version of :data:`FRAMES_SYSTEM` and the user turn built by :meth:`FramesJudge.messages`; part
of every cache key of a looking judge. Bump it whenever either text changes."""

FRAMES_SYSTEM = JUDGE_SYSTEM.replace(
    " Answer with a single word first: yes or no.",
    " You also see what the stream showed or played around that moment: a candidate that "
    "sounds right but does not match what the frames or the audio show is wrong. Answer with a "
    "single word first: yes or no.",
)
AUDIO_RATE = 16_000


class FramesSettings(BaseModel):
    """What a looking judge attaches (recorded in ``summary.json`` under the judge's settings).

    Attributes:
        max_frames: K, frames per visual pair (1 = the window's middle only).
        max_side: long side of each frame sent, pixels.
        audio: auditory targets get their window's audio where the engine takes audio.
        max_audio_s: longest audio clip sent, seconds (a longer window keeps its middle).
    """

    model_config = ConfigDict(extra="forbid")

    max_frames: int = Field(3, ge=1, le=16)
    max_side: int = Field(512, ge=32)
    audio: bool = True
    max_audio_s: float = Field(30.0, gt=0)


@dataclass(frozen=True)
class Look:
    """What the judge sees for one pair besides the text.

    ``kind``: ``frames`` (``seconds``: grid seconds of the frames, ascending), ``audio``
    (``span_s``: [lo, hi] in s) or ``none`` (``note`` says why). ``path``: the media file."""

    kind: Literal["frames", "audio", "none"]
    path: str | None = None
    seconds: tuple[int, ...] = ()
    span_s: tuple[float, float] | None = None
    note: str = ""


class LookedTriple(tuple):
    """(request, reference, candidate) with the :class:`Look` and its content hash attached.

    A 3-tuple for everything that stores triples (cache rows, flip reports); ``media_sha256``
    extends the cache key (:meth:`interactscope.streaming.judges.base.Judge.unit_key`)."""

    look: Look
    media_sha256: str

    def __new__(cls, triple: tuple[str, str, str], look: Look, media_sha256: str) -> LookedTriple:
        obj = super().__new__(cls, triple)
        obj.look = look
        obj.media_sha256 = media_sha256
        return obj


def window_times(window: tuple[float, float], k: int) -> list[float]:
    """K evenly spaced times over the closed window [lo, hi] (s), each clamped at 0.

    K = 1 gives the middle; K = 3 gives lo, middle, hi (τ − δ, τ, τ + δ for W = τ ± δ)."""
    lo, hi = float(window[0]), float(window[1])
    if k == 1:
        return [max(0.0, (lo + hi) / 2)]
    return [max(0.0, lo + (hi - lo) * i / (k - 1)) for i in range(k)]


class _MediaSource:
    """Open media files (the two most recent kept decoded), answering frames and audio."""

    def __init__(self, max_side: int, keep: int = 2):
        self.max_side = max_side
        self.keep = keep
        self._open: OrderedDict[str, CausalMedia] = OrderedDict()

    def media(self, path: str) -> CausalMedia:
        m = self._open.get(path)
        if m is None:
            try:
                m = CausalMedia(path, store_max_side=self.max_side)
            except MediaError as exc:
                raise JudgeError(f"frames judge: {exc}") from None
            self._open[path] = m
            while len(self._open) > self.keep:
                self._open.popitem(last=False)
        self._open.move_to_end(path)
        return m

    def frames(self, path: str, times: list[float]) -> list[tuple[int, np.ndarray]]:
        """(grid second, (H, W, 3) uint8 RGB) of the frame shown at each time, duplicates once."""
        m = self.media(path)
        out: dict[int, np.ndarray] = {}
        try:
            for t in times:
                got = m.frames_until(t, max_frames=1, policy="recent", max_side=self.max_side)
                if got and got[-1].second not in out:
                    out[got[-1].second] = got[-1].image
        except MediaError as exc:
            raise JudgeError(f"frames judge: {exc}") from None
        return sorted(out.items())

    def audio(self, path: str, span: tuple[float, float]) -> np.ndarray:
        """(n,) float32 mono at 16 kHz of file time [lo, hi]."""
        lo, hi = span
        try:
            wav = self.media(path).audio_until(hi, sample_rate=AUDIO_RATE)
        except MediaError as exc:
            raise JudgeError(f"frames judge: {exc}") from None
        return wav[int(round(lo * AUDIO_RATE)) :]


def media_sha256(look: Look, frames: list[tuple[int, np.ndarray]], audio: np.ndarray | None) -> str:
    """Hex SHA-256 of what is attached: the look's description, then each frame's shape and
    pixel bytes in order, then the audio's float32 little-endian bytes."""
    h = hashlib.sha256()
    desc = [look.kind, list(look.seconds), list(look.span_s or ()), look.note]
    h.update(json.dumps(desc).encode("utf-8"))
    for _, img in frames:
        h.update(str(tuple(img.shape)).encode("ascii"))
        h.update(np.ascontiguousarray(img, dtype=np.uint8).tobytes())
    if audio is not None:
        h.update(np.ascontiguousarray(audio, dtype="<f4").tobytes())
    return h.hexdigest()


class FramesJudge(Judge):
    """A model judge that also sees the target's frames (or audio); see the module docstring.

    Args:
        engine: an engine taking :class:`ImagePart` (and :class:`AudioPart` if ``takes_audio``).
        name, backend, model: the ``--judge`` string, ``<text backend>+frames``, model name/path.
        settings: :class:`FramesSettings`; ``audio`` is honoured only if ``takes_audio``.
        extra_settings: the text judge's recorded settings (temperature, token cap, ...).
        concurrency: requests the engine keeps in flight (the runner sizes its chunks by it).
    """

    prompt_version = FRAMES_PROMPT_VERSION

    def __init__(
        self,
        engine: Any,
        *,
        name: str,
        backend: str,
        model: str,
        settings: FramesSettings | None = None,
        takes_audio: bool = False,
        extra_settings: Mapping[str, Any] | None = None,
        concurrency: int = 0,
    ):
        self.engine = engine
        self.name, self.backend, self.model = name, backend, model
        self.frames = settings or FramesSettings()
        self.takes_audio = bool(takes_audio)
        self.sends_audio = self.frames.audio and self.takes_audio
        self.concurrency = int(concurrency)
        self._extra = dict(extra_settings or {})
        self._paths: dict[str, str] | None = None
        self._source = _MediaSource(self.frames.max_side)

    @property
    def settings(self) -> dict[str, Any]:
        if self.sends_audio:
            audio = f"window audio, at most {self.frames.max_audio_s:g} s"
        elif self.frames.audio:
            audio = "none: the engine takes no audio (auditory targets judged on text)"
        else:
            audio = "none: turned off (auditory targets judged on text)"
        return {
            **self._extra,
            "frames": self.frames.max_frames,
            "max_side": self.frames.max_side,
            "audio": audio,
        }

    def bind_media(self, paths: Mapping[str, Path]) -> None:
        self._paths = {str(k): str(v) for k, v in paths.items()}

    # ------------------------------------------------------------------ what the judge sees
    def look(self, item: JudgeItem) -> Look:
        """What ``item``'s verdict will be based on besides the text.

        Raises:
            JudgeError: a visual/auditory item whose video is not bound (:meth:`bind_media`).
        """
        ev = item.evidence or "visual"
        if ev not in ("visual", "auditory"):
            return Look("none", note=f"evidence {ev}")
        if ev == "auditory" and not self.sends_audio:
            return Look("none", note="auditory target; audio not sent")
        if item.window_s is None or item.video_id is None:
            return Look("none", note="no target window")
        if self._paths is None or item.video_id not in self._paths:
            raise JudgeError(
                f"judge {self.name}: no media file for video {item.video_id!r}; score through "
                "`interactscope score` (or call bind_media with the benchmark's video paths)"
            )
        path = self._paths[item.video_id]
        if ev == "visual":
            times = window_times(item.window_s, self.frames.max_frames)
            secs = tuple(s for s, _ in self._source.frames(path, times))
            return Look("frames", path, seconds=secs) if secs else Look("none", note="no frame")
        if not self._source.media(path).has_audio:
            return Look("none", note="auditory target; the file has no audio")
        lo, hi = max(0.0, item.window_s[0]), max(0.0, item.window_s[1])
        if hi - lo > self.frames.max_audio_s:
            mid = (lo + hi) / 2
            lo, hi = mid - self.frames.max_audio_s / 2, mid + self.frames.max_audio_s / 2
        return Look("audio", path, span_s=(round(lo, 3), round(hi, 3)))

    def content(self, look: Look) -> tuple[list[tuple[int, np.ndarray]], np.ndarray | None]:
        """The frames ((second, RGB) pairs) and the audio of a look."""
        if look.kind == "frames" and look.path:
            return self._source.frames(look.path, [float(s) for s in look.seconds]), None
        if look.kind == "audio" and look.path and look.span_s:
            return [], self._source.audio(look.path, look.span_s)
        return [], None

    def unit(self, item: JudgeItem) -> LookedTriple:
        look = self.look(item)
        frames, audio = self.content(look)
        return LookedTriple(item.triple, look, media_sha256(look, frames, audio))

    # ------------------------------------------------------------------ asking
    def messages(self, unit: tuple[str, str, str]) -> list[Message]:
        """The chat of prompt :data:`FRAMES_PROMPT_VERSION` for one unit: text, then each frame
        under a "Frame at K s" line (or the audio, or why there is neither), then the question."""
        request, reference, candidate = unit[:3]
        look = getattr(unit, "look", None) or Look("none", note="no media attached")
        parts: list[Part] = [
            TextPart(
                text=f"User request:\n{request.strip() or '(no request: general assistance need)'}"
                f"\n\nReference reply:\n{reference.strip()}"
                f"\n\nCandidate reply:\n{candidate.strip()}\n\n"
            )
        ]
        frames, audio = self.content(look)
        if frames:
            parts.append(TextPart(text="What the stream showed around the reference moment:\n"))
            for sec, img in frames:
                parts.append(TextPart(text=f"Frame at {sec} s:\n"))
                parts.append(ImagePart(image=np.array(img), pts_s=float(sec), attachment=True))
        elif audio is not None and look.span_s:
            lo, hi = look.span_s
            parts.append(TextPart(text=f"What the stream played from {lo:g} s to {hi:g} s:\n"))
            parts.append(AudioPart(audio=audio, sample_rate=AUDIO_RATE))
        else:
            parts.append(TextPart(text=f"(No frames or audio attached: {look.note}.)\n"))
        parts.append(
            TextPart(
                text="\nDoes the candidate convey the reference, consistent with what the stream "
                "shows? Answer yes or no."
            )
        )
        return [Message(role="system", content=FRAMES_SYSTEM), Message(role="user", content=parts)]

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        """One verdict per unit; a transport error is a verdict with ``error`` set."""
        if not triples:
            return []
        answers = self.engine.chat_batch([self.messages(u) for u in triples])
        return [
            Verdict(None, "", error=str(a))
            if isinstance(a, EngineError)
            else Verdict(parse_verdict(a.text), a.text)
            for a in answers
        ]
