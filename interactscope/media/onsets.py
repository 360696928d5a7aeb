"""Low-level stream signals on the causal prefix: visual change points (frame differences) and
audio onsets (speech by a VAD, or plain energy). Used by the ``change-detector`` control
(docs/protocol.md, controls); nothing here sees past the decision time it is given.

VAD: Silero VAD v6 as shipped inside the ``faster-whisper`` wheel (``[asr]`` extra; ONNX weights
in the package, run by onnxruntime, nothing downloaded). Without that extra the ``energy``
detector is used: 20 ms RMS frames, an onset where the level rises above ``energy_db`` after at
least ``min_gap_s`` below it."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

__all__ = ["AudioDetector", "audio_onsets", "frame_change", "resolve_detector", "visual_changes"]

AudioDetector = Literal["auto", "silero", "energy"]


def _gray_small(image: np.ndarray, side: int = 32) -> np.ndarray:
    """(H, W, 3) uint8 -> (side, side) float in [0, 1]: luma, block-averaged by index sampling."""
    h, w = image.shape[:2]
    ys = np.linspace(0, h - 1, side).astype(int)
    xs = np.linspace(0, w - 1, side).astype(int)
    img = image[np.ix_(ys, xs)].astype(np.float32) / 255.0
    return img @ np.array([0.299, 0.587, 0.114], dtype=np.float32)


def frame_change(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute luma difference of two RGB frames on a 32 x 32 grid, in [0, 1] (a hard cut
    from black to white is 1.0)."""
    return float(np.abs(_gray_small(a) - _gray_small(b)).mean())


def visual_changes(frames: Sequence[Any], threshold: float) -> list[int]:
    """Grid seconds ``k`` of the 1 fps ``frames`` (``media.Frame``, time order) whose frame
    differs from the previous one by more than ``threshold`` (:func:`frame_change`)."""
    out = []
    for prev, cur in zip(frames, frames[1:], strict=False):
        if frame_change(prev.image, cur.image) > threshold:
            out.append(int(cur.second))
    return out


def resolve_detector(name: AudioDetector) -> Literal["silero", "energy"]:
    """``auto`` -> ``silero`` where faster-whisper (the ``[asr]`` extra) is installed, else
    ``energy``. Raises ValueError for ``silero`` without the extra (naming it)."""
    have = importlib.util.find_spec("faster_whisper") is not None
    if name == "auto":
        return "silero" if have else "energy"
    if name == "silero" and not have:
        raise ValueError(
            "audio_detector silero needs faster-whisper: pip install 'interactscope[asr]'"
        )
    return name


def _silero_starts(audio: np.ndarray, sr: int) -> list[float]:
    from faster_whisper.vad import VadOptions, get_speech_timestamps  # optional dependency ([asr])

    if sr != 16000:  # Silero runs at 16 kHz; the observation's rate is a setting
        n = int(round(len(audio) * 16000 / sr))
        audio = np.interp(np.linspace(0, len(audio) - 1, n), np.arange(len(audio)), audio)
    opts = VadOptions(min_speech_duration_ms=250, min_silence_duration_ms=500, speech_pad_ms=0)
    segs = get_speech_timestamps(np.asarray(audio, dtype=np.float32), opts, sampling_rate=16000)
    return [s["start"] / 16000 for s in segs]


def _energy_starts(audio: np.ndarray, sr: int, energy_db: float, min_gap_s: float) -> list[float]:
    hop = max(1, int(sr * 0.02))
    n = len(audio) // hop
    if n == 0:
        return []
    frames = np.asarray(audio[: n * hop], dtype=np.float64).reshape(n, hop)
    db = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    loud = db > energy_db
    starts, quiet_run = [], int(min_gap_s / 0.02)  # the clip start counts as quiet
    for i, on in enumerate(loud):
        if on and quiet_run * 0.02 >= min_gap_s:
            starts.append(i * hop / sr)
        quiet_run = 0 if on else quiet_run + 1
    return starts


def audio_onsets(
    audio: np.ndarray | None,
    sr: int,
    detector: Literal["silero", "energy"],
    *,
    energy_db: float = -35.0,
    min_gap_s: float = 0.5,
) -> list[float]:
    """Onset times (s) of sound events in the causal waveform ``audio`` (float32 mono, shape
    ``(n,)`` at ``sr`` Hz, covering [0, t]): speech segment starts (``silero``) or energy rises
    (``energy``, level in dBFS of 20 ms frames). ``[]`` without audio."""
    if audio is None or len(audio) == 0:
        return []
    if detector == "silero":
        return _silero_starts(audio, sr)
    return _energy_starts(audio, sr, energy_db, min_gap_s)
