"""Whisper log-mel features computed once per stream (Qwen Omni thinkers, ``transformers``).

Offline Probing asks for the audio of [0, t] at every decision point t; the Whisper feature
extractor inside the Qwen Omni processor recomputes the short-time Fourier transform of the whole
prefix each time. The STFT of [0, t] shares every frame with [0, t - 1] whose window lies inside
the common samples: with ``n_fft`` = 400 and ``hop`` = 160 (10 ms at 16 kHz), frame k covers
samples [k·hop − n_fft/2, k·hop + n_fft/2) (centred, reflect-padded at both ends), so it can be
reused when k·hop + n_fft/2 is at most the number of leading samples the two waveforms share.
Only the tail is new, plus the parts that depend on the whole signal: ``log10`` of the mel power,
the clamp at (max − 8) and the (x + 4) / 4 scaling (WhisperFeatureExtractor's
``_torch_extract_fbank_features``; Radford et al., 2022, Whisper).

:class:`LogMelCache` keeps the mel power (before the log) of the last few waveforms and replaces the
feature extractor's fbank method while it is installed; the padding, truncation and attention
mask stay the library's own. Results equal the processor's own within float tolerance
(tests/test_audio_features.py); a dithering extractor, a non-CPU device or a 1-D call go to the
library unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["LogMelCache", "tight_audio_length"]


def tight_audio_length(n: int, n_fft: int, hop: int, window: int | None) -> int:
    """Samples an ``n``-sample part is zero-padded to under ``audio_padding: tight``: at least
    ``n_fft // 2 + 1`` zeros after it (so no valid STFT frame, centred with reflect padding,
    sees past the zeros), rounded up to a multiple of ``hop``, at most ``window`` (the feature
    extractor's ``n_samples``; a part that long is not padded at all)."""
    p = -(-(n + n_fft // 2 + 1) // hop) * hop
    return min(p, window) if window else p


class LogMelCache:
    """Mel power spectrogram columns of the last ``entries`` waveforms, reused across calls.

    Args:
        entries: waveforms kept (one per stream in flight is enough; default 4).

    Attributes:
        frames_reused / frames_computed: STFT frames taken from the cache / computed, over all
            calls (a benchmark's measure of the saving).
    """

    def __init__(self, entries: int = 4):
        self.entries = max(1, int(entries))
        self._held: list[tuple[np.ndarray, Any]] = []  # (waveform, mel power (n_mels, F))
        self.frames_reused = 0
        self.frames_computed = 0

    @contextlib.contextmanager
    def installed(self, processor: Any) -> Iterator[None]:
        """Route ``processor.feature_extractor``'s fbank method through this cache while inside."""
        fe = getattr(processor, "feature_extractor", None)
        if fe is None or not hasattr(fe, "_torch_extract_fbank_features"):
            yield
            return
        original = fe._torch_extract_fbank_features

        def fbank(waveform: np.ndarray, device: str = "cpu") -> np.ndarray:
            if getattr(fe, "dither", 0.0) or device != "cpu" or np.ndim(waveform) != 2:
                return original(waveform, device)
            return self.features(fe, waveform)

        fe._torch_extract_fbank_features = fbank  # instance attribute: wins over the method
        try:
            yield
        finally:
            del fe._torch_extract_fbank_features

    def features(self, fe: Any, waveform: np.ndarray) -> np.ndarray:
        """Log-mel features of a (B, L) batch of padded waveforms: (B, n_mels, L // hop), float32,
        as ``WhisperFeatureExtractor._torch_extract_fbank_features`` gives them."""
        import torch  # engines import torch lazily: the module loads without it

        rows = [self._mel_power(fe, np.asarray(w, dtype=np.float32)) for w in waveform]
        mel = torch.stack(rows)[..., :-1]  # the library drops the last frame
        log_spec = torch.clamp(mel, min=1e-10).log10()
        peak = log_spec.amax(dim=(1, 2), keepdim=True)
        log_spec = torch.maximum(log_spec, peak - 8.0)
        return ((log_spec + 4.0) / 4.0).numpy()

    def _mel_power(self, fe: Any, x: np.ndarray) -> Any:
        import torch

        n_fft, hop = int(fe.n_fft), int(fe.hop_length)
        half = n_fft // 2
        n_frames = 1 + x.shape[0] // hop
        k0, held = self._reusable(x, half, hop, n_frames)
        filters = torch.from_numpy(np.asarray(fe.mel_filters)).to(torch.float32)
        window = torch.hann_window(n_fft)
        if k0 == 0:
            seg, center = torch.from_numpy(x), True
        else:
            # the samples frame k0 on needs, with the reflect padding of the signal's right end
            tail = x[-2 : -half - 2 : -1] if x.shape[0] > half + 1 else x[::-1][1:]
            seg, center = torch.from_numpy(np.concatenate([x[k0 * hop - half :], tail])), False
        stft = torch.stft(seg, n_fft, hop, window=window, center=center, return_complex=True)
        new = filters.T @ (stft.abs() ** 2).contiguous()
        mel = new if held is None else torch.cat([held[:, :k0], new], dim=1)
        self.frames_reused += k0
        self.frames_computed += int(new.shape[1])
        self._remember(x, mel)
        return mel

    def _reusable(self, x: np.ndarray, half: int, hop: int, n_frames: int) -> tuple[int, Any]:
        """(k0, held mel) of the held waveform sharing the most reusable frames with ``x``."""
        best, best_mel = 0, None
        for old, mel in self._held:
            m = min(old.shape[0], x.shape[0])
            if m <= half or old[0] != x[0]:
                continue
            diff = np.flatnonzero(old[:m] != x[:m])
            common = int(diff[0]) if diff.size else m
            if common <= half:
                continue
            k = min((common - half) // hop + 1, n_frames - 1, int(mel.shape[1]))
            if k * hop >= half and k > best:  # frames before that need the left reflect padding
                best, best_mel = k, mel
        return best, best_mel

    def _remember(self, x: np.ndarray, mel: Any) -> None:
        self._held = [(o, m) for o, m in self._held if o is not x][: self.entries - 1]
        self._held.insert(0, (x, mel))
