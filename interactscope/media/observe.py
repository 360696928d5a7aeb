"""What a model would receive at decision time t (docs/protocol.md#decision-grid), as a JSON-ready dict.

Backs ``interactscope observe VIDEO --at T --json``: a tool for checking causality by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import soundfile

from interactscope.media.asr import AsrSettings
from interactscope.media.causal import CausalMedia

AUDIO_MODES = ("native", "asr", "none")


def observe(
    path: str | Path,
    t: float,
    *,
    audio: str = "native",
    max_frames: int = 32,
    policy: str = "uniform",
    max_side: int | None = None,
    sample_rate: int = 16000,
    asr: AsrSettings | None = None,
    media: CausalMedia | None = None,
    save: str | Path | None = None,
    store_max_side: int | Callable[[int, int], int | None] | None = None,
) -> dict[str, Any]:
    """Summarise the causal observation of ``path`` at ``t`` (docs/protocol.md#causal-observation).

    Args:
        path: media file.
        t: decision time (s, file clock), >= 0.
        audio: ``"native"`` (waveform), ``"asr"`` (transcript) or ``"none"``.
        max_frames, policy, max_side: as :meth:`CausalMedia.frames_until`.
        sample_rate: audio rate (Hz) for ``native``.
        asr: ASR settings for ``asr`` (default :class:`AsrSettings`).
        media: an already-open :class:`CausalMedia` of ``path`` (reuses its decode). Without
            it, ``path`` is opened with ``keep_only=(t, max_frames, policy)``: only the frames
            this observation picks are held, and video is not decoded past ``t``.
        store_max_side: frame budget (``CausalMedia(store_max_side=)``: px, or a model's
            ``consumer_max_side``, ``observe --model``); None: the source size.
        save: a folder (created) to write what the model would get: each frame as
            ``frame_SSSS.png`` (SSSS: its grid second) and, in ``native`` mode, the waveform
            [0, t] as ``audio.wav`` (mono float32 at ``sample_rate``).

    Returns:
        ``{"path", "t", "duration_s", "has_audio", "frames_pts_s" (list of s),
        "frames_second" (grid seconds), "frame_size" ([w, h] of the returned frames, or None),
        "audio_mode", "sample_rate", "audio_samples" (int; 0 unless native),
        "audio_rms" (float or None), "transcript" (str or None unless asr),
        "words" ([{text, start_s, end_s, probability}] or None), "warnings" (list of str: t past
        the clip end), "saved" (paths written with ``save``, else [])}``.

    Raises:
        MediaError: unreadable file. AsrError: ``asr`` without a usable ASR model.
        ValueError: bad mode, policy, max_frames, or t.
    """
    if audio not in AUDIO_MODES:
        raise ValueError(f"audio must be one of {AUDIO_MODES}, got {audio!r}")
    # one observation: hold only the frames it picks (docs/protocol.md#frames-and-audio-in-memory)
    keep = (t, max_frames, policy)
    cm = media or CausalMedia(
        path, sample_rate=sample_rate, asr=asr, store_max_side=store_max_side, keep_only=keep
    )
    if asr is not None:
        cm.asr = asr
    frames = cm.frames_until(t, max_frames=max_frames, policy=policy, max_side=max_side)
    out: dict[str, Any] = {
        "path": str(path),
        "t": float(t),
        "duration_s": cm.duration_s,
        "has_audio": cm.has_audio,
        "frames_pts_s": [round(f.pts_s, 6) for f in frames],
        "frames_second": [f.second for f in frames],
        "frame_size": [int(frames[-1].image.shape[1]), int(frames[-1].image.shape[0])]
        if frames
        else None,
        "audio_mode": audio,
        "sample_rate": sample_rate if audio == "native" else None,
        "audio_samples": 0,
        "audio_rms": None,
        "transcript": None,
        "words": None,
        "warnings": _past_end(t, cm.duration_s),
        "saved": [],
    }
    wav = _audio_fields(out, cm, t, audio, sample_rate)
    if save is not None:
        out["saved"] = _save(Path(save), frames, wav, sample_rate)
    return out


def _audio_fields(out: dict[str, Any], cm: CausalMedia, t: float, audio: str, sample_rate: int):
    """Fill ``out``'s audio fields for ``audio`` mode; the waveform [0, t] (``native``) or None."""
    if audio == "native":
        wav = cm.audio_until(t, sample_rate=sample_rate)
        out["audio_samples"] = int(wav.shape[0])
        out["audio_rms"] = float((wav.astype("float64") ** 2).mean() ** 0.5) if len(wav) else 0.0
        return wav
    if audio == "asr":
        tr = cm.transcript_until(t)
        out["transcript"] = tr.text
        out["words"] = tr.to_dict()["words"]
    return None


def _past_end(t: float, duration_s: float | None) -> list[str]:
    if duration_s is None or t <= duration_s:
        return []
    return [
        f"t = {t:g} s is past the clip end ({duration_s:g} s): the observation is the whole "
        "clip, and no decision point of an interaction is ever after the end"
    ]


def _save(folder: Path, frames: list[Any], wav: Any, sample_rate: int) -> list[str]:
    """Write the frames (PNG) and the waveform (WAV) into ``folder``; returns the paths.

    Raises:
        OSError: the folder cannot be written.
    """
    from PIL import Image  # optional dependency ([openai])

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in frames:
        p = folder / f"frame_{f.second:04d}.png"
        Image.fromarray(f.image).save(p)
        paths.append(str(p))
    if wav is not None:
        p = folder / "audio.wav"
        soundfile.write(p, wav, sample_rate, subtype="FLOAT")
        paths.append(str(p))
    return paths
