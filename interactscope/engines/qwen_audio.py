"""Whisper log-mel features computed once per stream (Qwen Omni thinkers, ``transformers``).

Offline Probing asks for the audio of [0, t] at every decision point t; the Whisper feature
extractor inside the Qwen Omni processor recomputes the short-time Fourier transform of the whole
prefix each time. The STFT of [0, t] shares every frame with [0, t - 1] whose window lies inside
the common samples: with ``n_fft`` = 400 and ``hop`` = 160 (10 ms at 16 kHz), frame k covers
samples [k·hop − n_fft/2, k·hop + n_fft/2) (centred, reflect-padded at both ends), so it can be
reused when k·hop + n_fft/2 is at most the number of leading samples the two waveforms share.
Past the extractor's window (``n_samples``) the audio part is the newest window: the waveform of
one point is the previous one shifted, and when the shift is a whole number of hops its frame k
(k ≥ 2, clear of the left reflect padding) is the previous waveform's frame k + shift.
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
import hashlib
from collections import OrderedDict
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

    Besides the prefix reuse, a waveform seen before (same padded samples: prompt v3's complete
    audio segments, which every later point of the stream sends again) gets its mel power back
    whole, keyed by a digest of its bytes, up to ``exact_mb`` of mel power (least recently used
    first out): with 8 s segments a 60 s stream has 7 complete segments per point, more than
    the ``entries`` a prefix match scans. Only items of a call with several (a prompt's
    segments) are held for this: a one-item prompt's [0, t] grows at every point.

    Args:
        entries: waveforms kept for prefix reuse (one per stream in flight is enough; default 4).
        exact_mb: MiB of waveforms and their mel power kept for exact repeats (default 160: ~170
            segments of 8 s, more than the 128 a shipped config sends, so a stream's segments,
            asked for in the same order at every point, never evict each other; a waveform
            over 1/16 of it, ~90 s, is not kept).

    Attributes:
        frames_reused / frames_computed: STFT frames taken from the cache / computed, over all
            calls (a benchmark's measure of the saving).
    """

    def __init__(self, entries: int = 4, exact_mb: float = 160):
        self.entries = max(1, int(entries))
        self._held: list[tuple[np.ndarray, Any]] = []  # (waveform, mel power (n_mels, F))
        # digest -> (waveform, mel power, the extractor's mel filters, bytes held)
        self._exact: OrderedDict[bytes, tuple[np.ndarray, Any, Any, int]] = OrderedDict()
        self._exact_bytes = 0
        self.exact_limit = int(exact_mb * (1 << 20))
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

        keep = len(waveform) > 1  # several audio items in one prompt: v3's segments
        rows = [self._repeat_or_new(fe, np.asarray(w, dtype=np.float32), keep) for w in waveform]
        mel = torch.stack(rows)[..., :-1]  # the library drops the last frame
        log_spec = torch.clamp(mel, min=1e-10).log10()
        peak = log_spec.amax(dim=(1, 2), keepdim=True)
        log_spec = torch.maximum(log_spec, peak - 8.0)
        return ((log_spec + 4.0) / 4.0).numpy()

    def _repeat_or_new(self, fe: Any, x: np.ndarray, keep: bool) -> Any:
        """The mel power of ``x``: a repeat's from :attr:`_exact`, else :meth:`_mel_power`'s. The
        key digests ~2048 evenly spaced samples (hashing every sample cost more than the STFT it
        saves); a hit is confirmed against the whole waveform kept with it. ``keep``: hold a new
        one for later calls."""
        step = max(1, x.shape[0] // 2048)
        key = hashlib.blake2b(np.ascontiguousarray(x[::step]).view(np.uint8), digest_size=16)
        key = key.digest() + str((x.shape[0], fe.n_fft, fe.hop_length)).encode()
        held = self._exact.get(key)
        if held is not None and held[2] is fe.mel_filters and np.array_equal(held[0], x):
            self._exact.move_to_end(key)
            self.frames_reused += int(held[1].shape[1])
            return held[1]
        mel = self._mel_power(fe, x)
        size = int(mel.numel()) * mel.element_size() + x.nbytes
        if keep and size * 16 <= self.exact_limit:  # segments, not a growing [0, t] per point
            if key in self._exact:
                self._exact_bytes -= self._exact.pop(key)[3]
            self._exact[key] = (x.copy(), mel, fe.mel_filters, size)
            self._exact_bytes += size
            while self._exact_bytes > self.exact_limit:
                self._exact_bytes -= self._exact.popitem(last=False)[1][3]
        return mel

    def _mel_power(self, fe: Any, x: np.ndarray) -> Any:
        import torch  # optional dependency ([transformers])

        n_fft, hop = int(fe.n_fft), int(fe.hop_length)
        half = n_fft // 2
        n_frames = 1 + x.shape[0] // hop
        filters = torch.from_numpy(np.asarray(fe.mel_filters)).to(torch.float32)
        window = torch.hann_window(n_fft)

        def mel_of(seg: np.ndarray, center: bool) -> Any:
            stft = torch.stft(
                torch.from_numpy(seg), n_fft, hop, window=window, center=center, return_complex=True
            )
            return filters.T @ (stft.abs() ** 2).contiguous()

        reuse = self._reusable(x, half, hop, n_frames)
        if reuse is None:
            mel = mel_of(x, True)
            self.frames_computed += int(mel.shape[1])
            self._remember(x, mel)
            return mel
        shift, k_lo, k1, held = reuse
        parts = []
        if k_lo:  # the first frames see the left reflect padding of this waveform's own start
            parts.append(mel_of(x[: k_lo * hop + half], True)[:, :k_lo])
        parts.append(held[:, shift + k_lo : shift + k1])
        # the samples frame k1 on needs, with the reflect padding of the signal's right end
        tail = x[-2 : -half - 2 : -1] if x.shape[0] > half + 1 else x[::-1][1:]
        parts.append(mel_of(np.concatenate([x[k1 * hop - half :], tail]), False))
        mel = torch.cat(parts, dim=1)
        self.frames_reused += k1 - k_lo
        self.frames_computed += int(mel.shape[1]) - (k1 - k_lo)
        self._remember(x, mel)
        return mel

    def _reusable(
        self, x: np.ndarray, half: int, hop: int, n_frames: int
    ) -> tuple[int, int, int, Any] | None:
        """(shift, k_lo, k1, held mel): frames [k_lo, k1) of ``x`` are the held waveform's frames
        [shift + k_lo, shift + k1), for the held waveform and shift (in hops) that reuse the
        most; None when no frame can be reused.

        A held waveform ``old`` qualifies where ``x`` starts with ``old[shift·hop:]`` (the same
        stream, shift 0 for a longer prefix; the audio window sliding by whole hops past the
        extractor's ``n_samples``, shift > 0). Frame k of ``x`` covers samples
        [k·hop − half, k·hop + half): it is reused when that lies inside the shared samples, and
        with shift > 0 only from the first frame that needs no left reflect padding."""
        best: tuple[int, int, int, Any] | None = None
        for old, mel in self._held:
            for d in _shifts(old, x, hop, half):
                m = min(old.shape[0] - d, x.shape[0])
                diff = np.flatnonzero(old[d : d + m] != x[:m])
                common = int(diff[0]) if diff.size else m
                if common <= half:
                    continue
                k_lo = 0 if d == 0 else -(-half // hop)
                k1 = min((common - half) // hop + 1, n_frames - 1, int(mel.shape[1]) - d // hop)
                if k1 * hop < half or k1 <= k_lo:  # nothing past the left reflect padding
                    continue
                if best is None or k1 - k_lo > best[2] - best[1]:
                    best = (d // hop, k_lo, k1, mel)
        return best

    def _remember(self, x: np.ndarray, mel: Any) -> None:
        self._held = [(o, m) for o, m in self._held if o is not x][: self.entries - 1]
        self._held.insert(0, (x, mel))


def _shifts(old: np.ndarray, x: np.ndarray, hop: int, half: int, probe: int = 512) -> list[int]:
    """Sample offsets d (multiples of ``hop``) where ``old[d:]`` may start ``x``: 0 when the two
    start alike, else the offsets whose first ``probe`` samples match (at most 8 checked in full,
    so a silent start, which matches everywhere, stays cheap)."""
    if old.shape[0] <= half or x.shape[0] <= half:
        return []
    n = min(probe, x.shape[0])
    starts = np.flatnonzero(old[: old.shape[0] - half : hop] == x[0]) * hop
    out = []
    for d in starts[:64].tolist():
        k = min(n, old.shape[0] - d)
        if np.array_equal(old[d : d + k], x[:k]):
            out.append(d)
            if len(out) == 8:
                break
    return out
