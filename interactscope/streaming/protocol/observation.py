"""The causal observation a model gets at decision time t (docs/protocol.md, causal observation).

:class:`Observer` wraps one :class:`~interactscope.media.CausalMedia` per video: the file is
decoded once and every decision point of every interaction on that video is answered from
memory. :meth:`Observer.observe` honours the run's settings:

- frames: the 1 fps causal frames (``pts <= t``), at most ``frames.max``, picked by
  ``frames.cap_policy``, downscaled to ``frames.max_side``;
- audio (``audio.mode``): ``native`` — the waveform [0, t], exactly ``round(t * sample_rate)``
  float32 samples; ``asr`` — the words of the causal transcript whose end is ``<= t``; ``none``;
- the query and its attachments are visible from q on. An audio attachment is the user's spoken
  query placed on the stream clock at q: for ``native`` it is mixed (added, clipped to [-1, 1])
  into the waveform from sample ``round(q * sr)`` on, so at t the model has heard its first
  ``t - q`` seconds and the sample count stays ``round(t * sr)``; for ``asr`` its words are
  transcribed and shown once ``q + end <= t``. Image attachments are shown whole from q;
- ``scene = none``: no frames, no audio, no transcript (the request text only).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import numpy as np

from interactscope.core.errors import InteractScopeError
from interactscope.media import AsrSettings, CausalMedia, load_audio, transcribe
from interactscope.streaming.schema import Interaction
from interactscope.streaming.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["ArrayBytes", "AttachmentView", "Observation", "Observer", "ObservationError"]


class ObservationError(InteractScopeError, RuntimeError):
    """An attachment could not be read or resolved (message names the file and interaction)."""


@dataclass
class AttachmentView:
    """One query attachment as the model sees it at t (only present when ``t >= q``).

    Attributes:
        kind: ``"audio"`` or ``"image"``.
        path: the annotated path (relative to the benchmark root).
        image: (H, W, 3) uint8 RGB for image attachments, else ``None``.
        audio: the whole attachment waveform (float32 mono at the observation's sample rate) for
            audio attachments in ``native`` mode (already mixed into ``Observation.audio``; kept
            for backends that want it apart), else ``None``.
        heard_s: seconds of an audio attachment heard by t (``min(len, t - q)``).
        transcript: ``asr`` mode: the attachment's words heard by t (``q + end <= t``), joined.
    """

    kind: str
    path: str
    image: np.ndarray | None = None
    audio: np.ndarray | None = None
    heard_s: float | None = None
    transcript: str | None = None


@dataclass
class Observation:
    """What the model may use at decision time ``t`` (seconds, file clock).

    Attributes:
        t: decision time (s).
        frames: causal 1 fps frames in time order (``Frame.pts_s <= t``; ``Frame.image``
            (H, W, 3) uint8 RGB, read-only, shared with every other observation showing that
            frame), at most ``frames.max``; ``[]`` for ``scene = none``.
        n_frames_available: 1 fps frames that exist at t before the ``frames.max`` cap.
        audio: ``native`` mode: float32 mono waveform [0, t], shape ``(round(t * sample_rate),)``
            (audio attachments mixed in from q), read-only: a view of the media's one decoded
            track shared by every observation (a copy only where an attachment is mixed in);
            ``None`` otherwise.
        sample_rate: Hz of ``audio``.
        transcript: ``asr`` mode: the causal transcript text (``""`` when nothing was said yet);
            ``None`` otherwise.
        words: ``asr`` mode: the transcript's words (``media.Word``: text, start_s, end_s).
        query_visible: ``t >= q`` (always true on the decision grid).
        query_text: the request text when visible, else ``None``.
        attachments: the query attachments when visible.
        audio_mode, scene: the settings that produced this observation.
        has_audio: the media file has an audio stream.
    """

    t: float
    frames: list[Any] = field(default_factory=list)
    n_frames_available: int = 0
    audio: np.ndarray | None = None
    sample_rate: int = 16000
    transcript: str | None = None
    words: tuple[Any, ...] = ()
    query_visible: bool = True
    query_text: str | None = None
    attachments: list[AttachmentView] = field(default_factory=list)
    audio_mode: str = "native"
    scene: str = "full"
    has_audio: bool = False

    @property
    def n_frames(self) -> int:
        """Frames actually in ``frames`` (the true count a backend may pad)."""
        return len(self.frames)

    @property
    def audio_samples(self) -> int:
        return 0 if self.audio is None else int(self.audio.shape[0])

    def summary(self) -> dict[str, Any]:
        """JSON-ready facts (frame times, sample count, transcript) for logs and tests."""
        return {
            "t": self.t,
            "frames_pts_s": [round(float(f.pts_s), 6) for f in self.frames],
            "n_frames_available": self.n_frames_available,
            "audio_samples": self.audio_samples,
            "sample_rate": self.sample_rate,
            "transcript": self.transcript,
            "query_visible": self.query_visible,
            "attachments": [a.kind for a in self.attachments],
            "audio_mode": self.audio_mode,
            "scene": self.scene,
        }


RGB_CACHE_BYTES = 64 << 20
"""LRU cache of converted frames an Observer's media keeps (yuv store only): 64 MiB, about 110
frames at 600 x 338. Frames a batch still holds are found again without it, and under the
``uniform`` cap the picks move every second anyway, so a larger cache mostly holds memory."""


def _root(a: np.ndarray) -> Any:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base if a.base is not None else a


class ArrayBytes:
    """Host bytes of the distinct arrays a group of observations holds (a batch's memory).

    Each buffer counts once, however many observations (or views) share it: an array is keyed
    by the root of its ``base`` chain and counts the most bytes any of its views spans (views
    of the audio track are prefixes ``[0, t]``; frames are whole arrays). So 10 requests that
    share one 1 MB frame count 1 MB; 10 requests with their own 1 MB audio copies count 10 MB.
    """

    def __init__(self) -> None:
        self.total = 0
        self._spans: dict[int, int] = {}
        self._roots: list[Any] = []  # kept alive so an id is never reused while counting

    def _arrays(self, obs: Observation) -> list[np.ndarray]:
        out = [f.image for f in obs.frames if isinstance(getattr(f, "image", None), np.ndarray)]
        if obs.audio is not None:
            out.append(obs.audio)
        for a in obs.attachments:
            out.extend(x for x in (a.image, a.audio) if x is not None)
        return out

    def cost(self, obs: Observation | None) -> int:
        """Bytes that adding ``obs`` would add to :attr:`total` (0 for ``None``)."""
        if obs is None:
            return 0
        extra: dict[int, int] = {}
        for arr in self._arrays(obs):
            key = id(_root(arr))
            have = max(self._spans.get(key, 0), extra.get(key, 0))
            extra[key] = max(have, int(arr.nbytes))
        return sum(v - self._spans.get(k, 0) for k, v in extra.items())

    def add(self, obs: Observation | None) -> int:
        """Count ``obs``'s arrays; returns the bytes it added."""
        if obs is None:
            return 0
        added = self.cost(obs)
        for arr in self._arrays(obs):
            root = _root(arr)
            key = id(root)
            if key not in self._spans:
                self._roots.append(root)
            self._spans[key] = max(self._spans.get(key, 0), int(arr.nbytes))
        self.total += added
        return added


def _n_samples(t: float, sr: int) -> int:
    return int(round(float(t) * sr))


def _load_image(path: Path) -> np.ndarray:
    """(H, W, 3) uint8 RGB of an image file (Pillow, else PyAV)."""
    try:
        from PIL import Image  # optional dependency ([openai])

        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8).copy()
    except ImportError:  # pragma: no cover - Pillow is a transformers dependency
        with av.open(str(path)) as c:
            for frame in c.decode(video=0):
                return frame.to_ndarray(format="rgb24")
    raise ObservationError(f"{path}: no image")  # pragma: no cover


class Observer:
    """Causal observations of one media file, decoded once and reused for every decision point.

    Args:
        media_path: the video (or audio) file.
        settings: the run's settings (frames, audio, scene).
        bench_root: folder that attachment paths are relative to (the benchmark root). When
            ``None``, an attachment is looked up relative to the media file's folder and each of
            its parents, then the working directory.
        media: an already-open ``CausalMedia`` of ``media_path`` (tests, sharing a decode).
        consumer_side: the model's frame size, ``(width, height) -> long side | None`` of the
            frames the observation would carry (``Adapter.consumer_max_side``); may also be
            set with :meth:`use_consumer` before the first ``observe``.

    Frames are stored at the largest size any consumer uses (docs/protocol.md, frames in
    memory): at ``frames.max_side`` as RGB converted once (the same pixels the frames would
    have had), lowered to ``consumer_side`` when the model's processor downscales further
    (yuv420p at that size; the processor's grid, hence its token count, unchanged).

    Raises:
        MediaError: (from the first ``observe``) the file cannot be decoded.
    """

    def __init__(
        self,
        media_path: str | Path,
        settings: Settings,
        *,
        bench_root: str | Path | None = None,
        media: Any | None = None,
        consumer_side: Callable[[int, int], int | None] | None = None,
    ) -> None:

        self.path = Path(media_path)
        self.settings = settings
        self.bench_root = Path(bench_root) if bench_root is not None else None
        self.sample_rate = int(settings.audio.sample_rate)
        self.consumer_side = consumer_side
        self.media = media or CausalMedia(
            self.path,
            sample_rate=self.sample_rate,
            asr=AsrSettings(strict=settings.audio.asr_strict),
            store_max_side=self._consumer,
            rgb_max_side=settings.frames.max_side,
            rgb_cache_bytes=RGB_CACHE_BYTES,
        )
        self._attachment_cache: dict[tuple[str, str], Any] = {}

    def _consumer(self, width: int, height: int) -> int | None:
        return self.consumer_side(width, height) if self.consumer_side is not None else None

    def use_consumer(self, consumer_side: Callable[[int, int], int | None] | None) -> bool:
        """Set the model's frame size rule (see the class docstring); returns False (and
        changes nothing) when the media is already decoded, its frames already stored."""
        if getattr(self.media, "_loaded", False):
            return False
        self.consumer_side = consumer_side
        return True

    def store_info(self) -> dict[str, Any]:
        """How the 1 fps frames are held (for run.json / logs): ``frames_stored_as``
        (``"rgb24"``, ``"yuv420p"`` or None before decoding / without video),
        ``frames_stored_side`` (long side in px; None: the source's), ``held_mb`` (MiB of
        media data held) and ``rgb_conversions`` (frames converted on request so far)."""
        m = self.media
        loaded = getattr(m, "_loaded", False)
        return {
            "frames_stored_as": getattr(m, "stored_as", None),
            "frames_stored_side": getattr(m, "stored_side", None),
            "held_mb": round(m.held_bytes / 2**20, 1) if loaded else 0.0,
            "rgb_conversions": getattr(m, "rgb_conversions", 0),
        }

    # ---------------------------------------------------------------- attachments
    def _resolve(self, rel: str, interaction: Interaction) -> Path:
        p = Path(rel)
        if p.is_absolute():
            cands = [p]
        elif self.bench_root is not None:
            cands = [self.bench_root / p]
        else:
            cands = [d / p for d in [self.path.parent, *self.path.parent.parents]]
            cands.append(Path.cwd() / p)
        for c in cands:
            if c.is_file():
                return c
        raise ObservationError(
            f"interaction {interaction.id}: attachment {rel!r} not found "
            f"(looked in {', '.join(str(c.parent) for c in cands[:3])}...)"
        )

    def _attachment_audio(self, path: Path) -> np.ndarray:
        key = ("audio", str(path))
        if key not in self._attachment_cache:
            wav, _start, _backend = load_audio(path, self.sample_rate)
            self._attachment_cache[key] = np.asarray(wav, dtype=np.float32).reshape(-1)
        return self._attachment_cache[key]

    def _attachment_words(self, path: Path) -> tuple[Any, ...]:
        key = ("words", str(path))
        if key not in self._attachment_cache:
            wav = self._attachment_audio(path)
            tr = transcribe(
                wav,
                self.media.asr or AsrSettings(),
                sample_rate=self.sample_rate,
                duration_s=len(wav) / self.sample_rate,
            )
            self._attachment_cache[key] = tr.words
        return self._attachment_cache[key]

    def _attachment_image(self, path: Path) -> np.ndarray:
        key = ("image", str(path))
        if key not in self._attachment_cache:
            img = _load_image(path)
            img.setflags(write=False)
            self._attachment_cache[key] = img
        return self._attachment_cache[key]

    # ---------------------------------------------------------------- observe
    def observe(self, t: float, interaction: Interaction) -> Observation:
        """The causal observation at decision time ``t`` for ``interaction``.

        Args:
            t: decision time (s, file clock), ``t >= 0``.
            interaction: supplies the query time q, text and attachments.

        Returns:
            An :class:`Observation` (see the module docstring for what each mode holds).

        Raises:
            ValueError: t < 0 or NaN.
            MediaError: the media file cannot be decoded.
            ObservationError: an attachment is missing or unreadable.
            AsrError: ``asr`` mode without a usable ASR model.
        """
        if not (t >= 0 and math.isfinite(t)):
            raise ValueError(f"t must be a finite number >= 0, got {t}")
        s = self.settings
        q = float(interaction.q)
        visible = round(t, 3) >= round(q, 3)
        obs = Observation(
            t=float(t),
            sample_rate=self.sample_rate,
            query_visible=visible,
            query_text=interaction.query.text if visible else None,
            audio_mode=s.audio.mode,
            scene=s.scene,
        )
        if s.scene == "none":
            obs.audio_mode = "none"
            if visible:  # image attachments are part of the request, not of the scene
                for att in interaction.query.attachments:
                    if att.kind == "image":
                        img = self._attachment_image(self._resolve(att.path, interaction))
                        obs.attachments.append(AttachmentView("image", att.path, image=img))
            return obs
        media = self.media
        obs.has_audio = bool(media.has_audio)
        tk = math.floor(round(float(t), 9))
        obs.n_frames_available = sum(1 for k in media.seconds_available() if k <= tk)
        obs.frames = media.frames_until(
            t, max_frames=s.frames.max, policy=s.frames.cap_policy, max_side=s.frames.max_side
        )
        if s.audio.mode == "native":
            obs.audio = media.audio_until(t, sample_rate=self.sample_rate)
        elif s.audio.mode == "asr":
            tr = media.transcript_until(t)
            obs.transcript = tr.text
            obs.words = tuple(tr.words)
        if visible:
            self._add_attachments(obs, t, q, interaction)
        if obs.audio is not None and obs.audio.flags.writeable:
            obs.audio.setflags(write=False)  # the same contract with or without attachments
        return obs

    def _add_attachments(self, obs: Observation, t: float, q: float, it: Interaction) -> None:
        """The visible query attachments of ``it`` at t; an audio one is mixed into
        ``obs.audio`` (``native``: the stream's shared read-only waveform is copied first, only
        then) or its heard words given (``asr``)."""
        s = self.settings
        for att in it.query.attachments:
            path = self._resolve(att.path, it)
            if att.kind == "image":
                img = self._attachment_image(path)
                obs.attachments.append(AttachmentView("image", att.path, image=img))
                continue
            view = AttachmentView("audio", att.path)
            if s.audio.mode == "native":
                wav = self._attachment_audio(path)
                view.audio = wav
                start = _n_samples(q, self.sample_rate)
                n = max(0, min(len(wav), obs.audio_samples - start))
                view.heard_s = n / self.sample_rate
                if n:
                    if not obs.audio.flags.writeable:
                        obs.audio = obs.audio.copy()
                    seg = obs.audio[start : start + n] + wav[:n]
                    obs.audio[start : start + n] = np.clip(seg, -1.0, 1.0)
            elif s.audio.mode == "asr":
                tm = int(round(t * 1000))
                heard = [
                    w
                    for w in self._attachment_words(path)
                    if int(round((q + w.end_s) * 1000)) <= tm
                ]
                view.transcript = "".join(w.text for w in heard).strip()
                wav_len = len(self._attachment_audio(path)) / self.sample_rate
                view.heard_s = max(0.0, min(wav_len, t - q))
            obs.attachments.append(view)

    def close(self) -> None:
        """Drop cached attachments (the media decode is dropped with the object)."""
        self._attachment_cache.clear()
