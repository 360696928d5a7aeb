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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interactscope.schema import Interaction
from interactscope.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["AttachmentView", "Observation", "Observer", "ObservationError"]


class ObservationError(RuntimeError):
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
            (H, W, 3) uint8 RGB), at most ``frames.max``; ``[]`` for ``scene = none``.
        n_frames_available: 1 fps frames that exist at t before the ``frames.max`` cap.
        audio: ``native`` mode: float32 mono waveform [0, t], shape ``(round(t * sample_rate),)``
            (audio attachments mixed in from q); ``None`` otherwise.
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


def _n_samples(t: float, sr: int) -> int:
    return int(round(float(t) * sr))


def _load_image(path: Path) -> np.ndarray:
    """(H, W, 3) uint8 RGB of an image file (Pillow, else PyAV)."""
    try:
        from PIL import Image

        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8).copy()
    except ImportError:  # pragma: no cover - Pillow is a transformers dependency
        import av

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
    ) -> None:
        from interactscope.media import AsrSettings, CausalMedia

        self.path = Path(media_path)
        self.settings = settings
        self.bench_root = Path(bench_root) if bench_root is not None else None
        self.sample_rate = int(settings.audio.sample_rate)
        self.media = media or CausalMedia(
            self.path,
            sample_rate=self.sample_rate,
            asr=AsrSettings(strict=settings.audio.asr_strict),
        )
        self._attachment_cache: dict[tuple[str, str], Any] = {}

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
            from interactscope.media import load_audio

            wav, _start, _backend = load_audio(path, self.sample_rate)
            self._attachment_cache[key] = np.asarray(wav, dtype=np.float32).reshape(-1)
        return self._attachment_cache[key]

    def _attachment_words(self, path: Path) -> tuple[Any, ...]:
        key = ("words", str(path))
        if key not in self._attachment_cache:
            from interactscope.media import AsrSettings, transcribe

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
            for att in interaction.query.attachments:
                path = self._resolve(att.path, interaction)
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
        return obs

    def close(self) -> None:
        """Drop cached attachments (the media decode is dropped with the object)."""
        self._attachment_cache.clear()
