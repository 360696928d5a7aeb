"""Engine ``transformers``: Qwen Omni thinkers and Qwen VL models on CPU or GPU.

Families (from the checkpoint's ``model_type``, or ``family:`` in the model config):

- ``omni`` — Qwen2.5-Omni and Qwen3-Omni: text out from the thinker (the talker is not loaded or
  is disabled); images, videos and the audio waveform go to the processor as arrays.
- ``vl`` — Qwen2-VL, Qwen2.5-VL, Qwen3-VL: images and videos only (an audio part is refused).

Arrays only: parts are passed to the processor as ``videos=`` / ``images=`` / ``audio=`` arrays,
never as file paths (Qwen's helper utilities read a whole file's audio, past any clip end), and
``use_audio_in_video``/``load_audio_from_video`` are never set. An image part that is a stream
frame (not an attachment) goes as a 1-frame video when ``frames_as: video`` or ``video_pairs``
(whose prompts carry 2-frame video parts, each its own processor video). Qwen's temporal
patch is 2 frames, so an odd frame count is padded by repeating the newest frame. An audio part
longer than the feature extractor's window (``n_samples``) keeps its most recent window; one
shorter than ``min_audio_samples`` (fewer than 480 give no audio token) gets zeros in front.
:attr:`ChatResult.raw` records ``n_frames``, ``n_frames_sent``, ``audio_samples``, ``model_s``
and, when they happen, ``audio_dropped_s`` and ``audio_padded_samples``.

Speed: :meth:`QwenEngine.chat_batch` answers a batch with one left-padded ``generate`` (greedy
answers equal one-at-a-time ones; ``raw`` adds ``batch_size``, ``batch_wall_s``,
``batch_model_s``). The processed pixels of each frame are kept across calls
(``frame_cache_mb``, default 256; :mod:`interactscope.engines.qwen_frames`), so a decision point
processes only its new frames (``raw["frames_reused"]`` counts the others).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interactscope.engines import base
from interactscope.engines.base import (
    ChatResult,
    EngineError,
    Message,
    as_messages,
    chat_each,
    hf_generate_kwargs,
)
from interactscope.engines.qwen_audio import LogMelCache, tight_audio_length
from interactscope.engines.qwen_frames import FrameCache, TemporalPatch, join_pieces
from interactscope.engines.qwen_options import QwenOptions
from interactscope.engines.qwen_tokens import run_tokenizing
from interactscope.engines.vllm_engine import fps_of

__all__ = ["MODEL_TYPES", "QwenEngine", "Rendered", "collate_left"]

log = logging.getLogger(__name__)

MODEL_TYPES: dict[str, tuple[str, str]] = {
    # model_type: (transformers class name, family)
    "qwen2_5_omni": ("Qwen2_5OmniForConditionalGeneration", "omni"),
    "qwen2_5_omni_thinker": ("Qwen2_5OmniThinkerForConditionalGeneration", "omni"),
    "qwen3_omni_moe": ("Qwen3OmniMoeForConditionalGeneration", "omni"),
    "qwen3_omni_moe_thinker": ("Qwen3OmniMoeThinkerForConditionalGeneration", "omni"),
    "qwen2_vl": ("Qwen2VLForConditionalGeneration", "vl"),
    "qwen2_5_vl": ("Qwen2_5_VLForConditionalGeneration", "vl"),
    "qwen3_vl": ("Qwen3VLForConditionalGeneration", "vl"),
    "qwen3_vl_moe": ("Qwen3VLMoeForConditionalGeneration", "vl"),
}
"""Checkpoint ``model_type`` -> (model class, family). Omni checkpoints that hold a talker are
loaded whole and only their ``thinker`` generates."""


@dataclass
class Rendered:
    """One prompt ready for the processor.

    Attributes:
        text: the chat-template rendering (placeholders for each media item).
        images: (H, W, 3) uint8 arrays in prompt order (image parts).
        videos: one list of (H, W, 3) uint8 frames per video part, padded to an even count.
        video_fps: per video, the frame rate given to the processor (Hz).
        video_pts: per video, the stream time (s) of each sent frame (padding repeats the last).
        audios: float32 mono waveforms in prompt order.
        n_frames: stream frames before padding; n_frames_sent: after padding.
        audio_samples: samples per audio part before any window cut; audio_dropped_s: seconds cut.
        audio_padded_samples: zeros put in front of parts shorter than ``min_audio_samples``.
        frames_reused: frames whose processed pixels came from the frame cache (None: no cache).
    """

    text: str
    images: list[np.ndarray] = field(default_factory=list)
    videos: list[list[np.ndarray]] = field(default_factory=list)
    video_fps: list[float] = field(default_factory=list)
    video_pts: list[list[float]] = field(default_factory=list)
    audios: list[np.ndarray] = field(default_factory=list)
    n_frames: int = 0
    n_frames_sent: int = 0
    audio_samples: list[int] = field(default_factory=list)
    audio_dropped_s: float = 0.0
    audio_padded_samples: int = 0
    frames_reused: int | None = None


def _add_video(r: Rendered, frames: list[np.ndarray], pts: list[float], parts: list) -> None:
    n = len(frames)
    if n == 0:
        return
    sent = [np.ascontiguousarray(f) for f in frames]
    times = [float(p) for p in pts] if len(pts) == n else [float(i) for i in range(n)]
    if len(sent) % 2:
        sent.append(sent[-1])  # temporal patch 2: repeat the newest frame
        times.append(times[-1])
    r.videos.append(sent)
    r.video_pts.append(times)
    r.video_fps.append(fps_of(list(pts)) if pts else 1.0)
    r.n_frames += n
    r.n_frames_sent += len(sent)
    parts.append({"type": "video"})


def _raw(r: Rendered, model_s: float, process_s: float = 0.0) -> dict[str, Any]:
    """``ChatResult.raw`` of one answer: frame and audio counts, ``model_s`` (``generate``
    alone) and ``process_s`` (chat template + processor + copy to the device), seconds."""
    raw: dict[str, Any] = {
        "n_frames": r.n_frames,
        "n_frames_sent": r.n_frames_sent,
        "audio_samples": sum(r.audio_samples),
        "model_s": round(model_s, 4),
        "process_s": round(process_s, 4),
    }
    if r.audio_dropped_s:
        raw["audio_dropped_s"] = round(r.audio_dropped_s, 3)
    if r.audio_padded_samples:
        raw["audio_padded_samples"] = r.audio_padded_samples
    if r.frames_reused is not None:
        raw["frames_reused"] = r.frames_reused
    return raw


@contextlib.contextmanager
def host_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` while inside (None: unchanged), restored after.

    Host work between two ``generate`` calls is many small tensor operations (log-mel columns,
    per-frame normalisation, joining a batch); with OpenMP each parallel region makes the other
    threads spin until they join, which on a machine with busy cores costs more CPU than the work
    itself (measured: the log-mel of 42 decision points 2.9 CPU s with 2 threads vs 0.11 s with
    1 on a loaded 2-core machine; benchmarks/bench_overhead.py). The model keeps its threads.
    torch's thread count is process-wide: the engine runs one call at a time."""
    if not n:
        yield
        return
    import torch  # optional dependency ([transformers])

    prev = torch.get_num_threads()
    if prev == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


@contextlib.contextmanager
def counting_validation(processor: Any) -> Iterator[None]:
    """``processor.validate_inputs`` given one frame per video while inside.

    The library's check only counts the videos against the prompt's video placeholders, but to
    count them it converts every video (a list of (H, W, 3) frames) to one stacked array: two
    copies of every frame at every decision point (32 frames of 600x338: 39 MB). A list of each
    video's first frame gives the same count, types and errors."""
    inner = getattr(processor, "validate_inputs", None)
    own = getattr(processor, "__dict__", None)
    if inner is None or own is None or "validate_inputs" in own:
        yield
        return

    def validate(*a: Any, videos: Any = None, **kw: Any) -> Any:
        if isinstance(videos, list) and all(isinstance(v, list) for v in videos):
            videos = [v[:1] for v in videos]
        return inner(*a, videos=videos, **kw)

    processor.validate_inputs = validate  # instance attribute: wins over the method
    try:
        yield
    finally:
        del processor.validate_inputs


def collate_left(
    rows: Sequence[Any],
    pad_id: int,
    pieces_of: Callable[[Any], list[Any] | None] | None = None,
    device: str | None = None,
    buffers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Processor outputs of single prompts joined into one batch.

    Args:
        rows: mappings from the processor, each holding ``input_ids`` and ``attention_mask`` of
            shape (1, L_i) and any media tensors (first axis = items or patches, e.g.
            ``pixel_values_videos`` (P_i, D), ``video_grid_thw`` (V_i, 3), ``input_features``
            (A_i, mel, frames)) or lists (one entry per item).
        pad_id: token id put in front of shorter prompts.
        pieces_of: for a lazy pixel placeholder (:class:`~interactscope.engines.qwen_frames.FrameCache`
            ``installed(lazy=True)``), the cached pieces it stands for (image rows,
            :class:`~interactscope.engines.qwen_frames.TemporalPatch`); each is written straight
            into the batch tensor, each distinct tensor (a frame's patches, an image's rows)
            moved to ``device`` once.
        device: where the media tensors are joined (default: where they are).
        buffers: per key, a tensor the joined media tensor is written into when it is large
            enough (same dtype, device and trailing shape); the result is then a view of its
            first rows, and a new buffer is kept here otherwise. Reusing one saves the page
            faults and zeroing of a fresh allocation per batch (a 720p batch of 16 points joins
            about 0.5 GB of pixels); a buffer's earlier views must no longer be in use.

    Returns:
        ``input_ids`` / ``attention_mask`` of shape (B, max L_i), left-padded (mask 0 on pads);
        every other key concatenated along its first axis in row order (rows without it add
        nothing); audio features of different lengths zero-padded first (:data:`MASKED_AUDIO_KEYS`).

    Raises:
        ValueError: a media key whose tensors differ beyond the first axis (torch's message).
    """
    import torch  # optional dependency ([transformers])

    width = max(int(r["input_ids"].shape[1]) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=rows[0]["input_ids"].dtype)
    mask = torch.zeros((len(rows), width), dtype=rows[0]["attention_mask"].dtype)
    for b, r in enumerate(rows):
        n = int(r["input_ids"].shape[1])
        ids[b, width - n :] = r["input_ids"][0]
        mask[b, width - n :] = r["attention_mask"][0]
    out: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
    keys = [k for r in rows for k in r.keys() if k not in out]
    for key in dict.fromkeys(keys):
        vals = [r[key] for r in rows if key in r]
        if key in MASKED_AUDIO_KEYS and all(isinstance(v, torch.Tensor) for v in vals):
            vals = _right_pad(vals)
        if all(isinstance(v, torch.Tensor) for v in vals):
            try:
                out[key] = _join(_pieces(vals, pieces_of, device), key, buffers)
            except RuntimeError as exc:
                raise ValueError(f"cannot batch {key!r}: {exc}") from exc
        else:
            out[key] = [x for v in vals for x in v]
    return out


MASKED_AUDIO_KEYS = ("input_features", "feature_attention_mask")
"""Audio feature tensors (A_i, mel, frames) / (A_i, frames) whose padded frames are masked:
rows padded tightly to their own audio (``audio_padding: tight``) are joined by zero-padding the
frame axis to the longest; the audio encoder reads only the frames inside the mask."""


def _right_pad(vals: list[Any]) -> list[Any]:
    import torch  # optional dependency ([transformers])

    width = max(int(v.shape[-1]) for v in vals)
    return [
        v if v.shape[-1] == width else torch.nn.functional.pad(v, (0, width - int(v.shape[-1])))
        for v in vals
    ]


def _join(parts: list[Any], key: str, buffers: dict[str, Any] | None) -> Any:
    """``parts`` joined (:func:`~interactscope.engines.qwen_frames.join_pieces`), written into
    ``buffers[key]`` when it fits (see :func:`collate_left`)."""
    import torch  # optional dependency ([transformers])

    first = parts[0]
    if (
        buffers is None
        or len(parts) < 2
        or any(p.dtype != first.dtype or p.device != first.device for p in parts)
    ):
        return join_pieces(parts)
    rows = sum(int(p.shape[0]) for p in parts)
    buf = buffers.get(key)
    fits = (
        buf is not None
        and buf.dtype == first.dtype
        and buf.device == first.device
        and tuple(buf.shape[1:]) == tuple(first.shape[1:])
        and int(buf.shape[0]) >= rows
    )
    if not fits:
        buf = buffers[key] = torch.empty(
            (rows, *first.shape[1:]), dtype=first.dtype, device=first.device
        )
    return join_pieces(parts, out=buf[:rows])


def _pieces(vals: list[Any], pieces_of: Any, device: str | None) -> list[Any]:
    """Row tensors (or the pieces a placeholder stands for), each distinct tensor on ``device``
    once (a frame repeated across rows and temporal patches moves to the GPU once)."""
    out, moved = [], {}
    for v in vals:
        for p in (pieces_of(v) if pieces_of is not None else None) or [v]:
            if isinstance(p, TemporalPatch):
                out.append(p.to(device, moved) if device is not None else p)
                continue
            if p.ndim and 0 in p.stride():
                raise EngineError("internal: a lazy pixel placeholder without its pieces")
            if device is not None and id(p) not in moved:
                moved[id(p)] = p.to(device)
            out.append(moved.get(id(p), p))
    return out


class QwenEngine:
    """Qwen Omni thinkers / Qwen VL through ``transformers`` (see the module docstring).

    Args:
        options: parsed :class:`QwenOptions`.
        name: the model config's name (in messages).
        model, processor: an already-built model and processor (tests, notebooks); when given,
            ``checkpoint`` is not loaded.
    """

    backend = "transformers"
    Options = QwenOptions

    def __init__(
        self,
        options: QwenOptions,
        name: str = "transformers",
        *,
        model: Any | None = None,
        processor: Any | None = None,
    ):
        self.options = options
        self.name = name
        self.model = model
        self.processor = processor
        self.family: str | None = options.family
        self.frames_as: str = options.frames_as or "video"
        self.generator: Any = None
        self.device: str | None = None
        mb = int(options.frame_cache_mb)
        self.frame_cache: FrameCache | None = FrameCache(mb << 20) if mb > 0 else None
        self._join_buffers: dict[str, Any] = {}  # collate_left's reused batch tensors
        self.audio_cache: LogMelCache | None = (
            LogMelCache() if options.audio_feature_cache else None
        )
        pk = options.processor_options()
        self.video_size: dict[str, int] | None = None
        if "max_pixels" in pk:
            # the Qwen Omni processors pass their own class-level video ``size`` on every call,
            # overriding the video processor's: give the configured pixel budget per call
            lo = int(pk.get("min_pixels", min(3136, int(pk["max_pixels"]))))
            self.video_size = {"shortest_edge": lo, "longest_edge": int(pk["max_pixels"])}

    @property
    def max_new_tokens(self) -> int:
        return int(self.options.generation.max_new_tokens or 128)

    # ------------------------------------------------------------------ loading
    def model_type(self) -> str:
        """The loaded model's ``config.model_type`` ('' before loading)."""
        return str(getattr(getattr(self.model, "config", None), "model_type", "") or "")

    def _model_class(self, ckpt: str) -> tuple[Any, str, str]:
        """(model class, family, model_type) of ``ckpt`` from its config (read offline)."""
        import transformers  # optional dependency ([transformers])
        from transformers import AutoConfig  # optional dependency ([transformers])

        try:
            hf_cfg = AutoConfig.from_pretrained(
                ckpt, trust_remote_code=self.options.trust_remote_code
            )
        except OSError as exc:
            raise EngineError(
                f"model {self.name}: cannot load the config of {ckpt!r} ({exc}). Weights are "
                "read from the Hugging Face cache ($HF_HOME) or a local folder; download them "
                "first where a network is available (huggingface-cli download " + str(ckpt) + ")"
            ) from exc
        mt = hf_cfg.model_type
        if mt not in MODEL_TYPES:
            raise EngineError(
                f"model {self.name}: model_type {mt!r} of {ckpt!r} is not supported "
                f"(known: {sorted(MODEL_TYPES)})"
            )
        cls_name, family = MODEL_TYPES[mt]
        cls = getattr(transformers, cls_name, None)
        if cls is None:
            raise EngineError(
                f"model {self.name}: transformers {transformers.__version__} has no {cls_name}"
            )
        return cls, family, mt

    def load(self) -> None:
        """Load model and processor from ``checkpoint`` (unless given). Idempotent.

        Raises:
            EngineError: torch/transformers missing, no checkpoint, unknown ``model_type``,
                weights not found offline.
        """
        if self.model is not None and self.processor is not None:
            self._finish_load()
            return
        try:
            import torch  # optional dependency ([transformers])
            from transformers import AutoProcessor  # optional dependency ([transformers])
        except ImportError as exc:
            raise EngineError(
                f"model {self.name}: backend 'transformers' needs torch and transformers "
                "(pip install 'interactscope[transformers]')"
            ) from exc
        o = self.options
        if not o.checkpoint:
            raise EngineError(f"model {self.name}: config has no 'checkpoint'")
        cls, family, mt = self._model_class(o.checkpoint)
        device = o.device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype_name = o.dtype or ("bfloat16" if device != "cpu" else "float32")
        kwargs: dict[str, Any] = {
            "dtype": getattr(torch, dtype_name),
            "trust_remote_code": o.trust_remote_code,
        }
        if o.attn_implementation:
            kwargs["attn_implementation"] = o.attn_implementation
        if mt in ("qwen2_5_omni", "qwen3_omni_moe"):
            kwargs["enable_audio_output"] = False  # text out only: the talker is not needed
        try:
            model = cls.from_pretrained(o.checkpoint, **kwargs)
        except TypeError:
            kwargs.pop("enable_audio_output", None)
            model = cls.from_pretrained(o.checkpoint, **kwargs)
        self.processor = AutoProcessor.from_pretrained(
            o.checkpoint, trust_remote_code=o.trust_remote_code, **o.processor_options()
        )
        self.model = model.to(device).eval()
        self.family = self.family or family
        self._finish_load()

    def _finish_load(self) -> None:
        mt = self.model_type()
        if self.family is None:
            self.family = MODEL_TYPES.get(mt, ("", "omni" if "omni" in mt else "vl"))[1]
        if hasattr(self.model, "disable_talker"):
            try:
                self.model.disable_talker()
            except Exception:  # noqa: BLE001 - already without a talker
                pass
        thinker = getattr(self.model, "thinker", None)
        self.generator = thinker if thinker is not None else self.model
        try:
            self.device = str(next(self.generator.parameters()).device)
        except (StopIteration, AttributeError):
            self.device = "cpu"

    # ------------------------------------------------------------------ rendering
    def _audio_window(self) -> int | None:
        fe = getattr(self.processor, "feature_extractor", None)
        n = getattr(fe, "n_samples", None)
        return int(n) if n else None

    def _audio(self, p: base.AudioPart, r: Rendered, parts: list, window: int | None) -> None:
        if self.family != "omni":
            raise EngineError(f"model {self.name}: audio part given to a {self.family} model")
        wav = p.audio
        r.audio_samples.append(int(wav.shape[0]))
        if window and wav.shape[0] > window:
            r.audio_dropped_s += (wav.shape[0] - window) / float(p.sample_rate)
            wav = wav[-window:]
        if wav.shape[0] == 0:
            return  # nothing heard yet (t = 0): no audio item
        if wav.shape[0] < self.options.min_audio_samples:
            # too short for one audio token (e.g. the last 4 ms of a clip in Online Rolling):
            # zeros in front, never samples from after t
            pad = self.options.min_audio_samples - wav.shape[0]
            wav = np.concatenate([np.zeros(pad, np.float32), wav])
            r.audio_padded_samples += pad
        r.audios.append(wav)
        parts.append({"type": "audio"})

    def _parts(self, msg: Message, r: Rendered, window: int | None) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for p in msg.parts():
            if isinstance(p, base.TextPart):
                parts.append({"type": "text", "text": p.text})
            elif isinstance(p, base.ImagePart):
                img = np.ascontiguousarray(p.image)
                if self.frames_as in ("video", "video_pairs") and not p.attachment:
                    # a stream frame in image form (e.g. online replay): a 1-frame video
                    _add_video(r, [img], [float(p.pts_s or 0.0)], parts)
                else:
                    r.images.append(img)
                    parts.append({"type": "image"})
                    if not p.attachment:
                        r.n_frames += 1
                        r.n_frames_sent += 1
            elif isinstance(p, base.VideoPart):
                _add_video(r, list(p.frames), list(p.pts_s), parts)
            elif isinstance(p, base.AudioPart):
                self._audio(p, r, parts, window)
        return parts

    def render(self, messages: Sequence[Any]) -> Rendered:
        """Chat messages as a template rendering plus the media arrays in prompt order.

        Raises:
            EngineError: an audio part for a VL model, or a malformed part.
        """
        r = Rendered(text="")
        window = self._audio_window()
        tmpl = [
            {"role": m.role, "content": self._parts(m, r, window)} for m in as_messages(messages)
        ]
        text = self.processor.apply_chat_template(tmpl, tokenize=False, add_generation_prompt=True)
        r.text = text[0] if isinstance(text, list) else str(text)
        return r

    def _wants_metadata(self) -> bool:
        vp = getattr(self.processor, "video_processor", None)
        return type(vp).__name__.startswith("Qwen3VL")

    def _videos_kwargs(self, r: Rendered) -> dict[str, Any]:
        vk = {"do_sample_frames": False, **self.options.videos_kwargs}
        if self.video_size is not None:
            vk.setdefault("size", dict(self.video_size))
        one_patch = all(len(v) <= 2 for v in r.videos)  # e.g. frames_as: video_pairs
        if len(set(r.video_fps)) == 1 or one_patch:
            # the Omni processors take one fps; for one-temporal-patch items it does not enter
            # the positions (get_rope_index: t_index = [0] * second_per_grid)
            vk.setdefault("fps", r.video_fps[0])
        else:
            vk.setdefault("fps", r.video_fps)
        if self._wants_metadata():
            # Qwen3-VL writes each frame's timestamp into the prompt from this metadata;
            # without it it assumes 24 fps. Index k at 1 fps = stream second k.
            from transformers.video_utils import (
                VideoMetadata,  # optional dependency ([transformers])
            )

            vk["video_metadata"] = [
                VideoMetadata(
                    total_num_frames=len(v),
                    fps=1.0,
                    frames_indices=[int(round(p)) for p in pts],
                    duration=max(pts) + 1.0 if pts else None,
                )
                for v, pts in zip(r.videos, r.video_pts, strict=True)
            ]
        return vk

    def processor_inputs(self, r: Rendered, audio_padding: str | None = None) -> dict[str, Any]:
        """Keyword arguments of the processor call for one rendered prompt (arrays only).

        ``audio_padding`` (default ``options.audio_padding``): ``tight`` pads the audio to its
        own length plus one STFT half-window, rounded to the hop
        (:func:`interactscope.engines.qwen_session.tight_audio_length`), instead of the feature
        extractor's whole window (300 s for Qwen Omni): the valid features and so the model's
        inputs are the same (the padding is masked), at a fraction of the STFT work."""
        kw: dict[str, Any] = {"text": [r.text], "return_tensors": "pt", "padding": True}
        if r.images:
            kw["images"] = r.images
        if r.videos:
            kw["videos"] = r.videos
            kw["videos_kwargs"] = self._videos_kwargs(r)
        if r.audios:
            kw["audio"] = r.audios
            fe = getattr(self.processor, "feature_extractor", None)
            if (audio_padding or self.options.audio_padding) == "tight" and fe is not None:
                longest = max(int(a.shape[0]) for a in r.audios)
                n_fft = int(getattr(fe, "n_fft", 400))
                hop = int(getattr(fe, "hop_length", 160))
                window = getattr(fe, "n_samples", None)
                kw["audio_kwargs"] = {"max_length": tight_audio_length(longest, n_fft, hop, window)}
        return kw

    @contextlib.contextmanager
    def caches_installed(self, *, lazy: bool = False) -> Iterator[None]:
        """The frame cache (``lazy``: see :meth:`FrameCache.installed`), the log-mel cache and
        the placeholder-run tokenizer (:func:`~interactscope.engines.qwen_tokens.run_tokenizing`)
        hooked into the processor while inside, torch limited to ``host_threads``
        (:func:`host_threads`)."""
        with contextlib.ExitStack() as stack:
            stack.enter_context(host_threads(self.options.host_threads))
            stack.enter_context(counting_validation(self.processor))
            stack.enter_context(run_tokenizing(self.processor))
            if self.frame_cache is not None:
                stack.enter_context(self.frame_cache.installed(self.processor, lazy=lazy))
            if self.audio_cache is not None:
                stack.enter_context(self.audio_cache.installed(self.processor))
            yield

    # ------------------------------------------------------------------ generation
    def _inputs(self, r: Rendered) -> Any:
        return self._on_device(self.process(r))

    def process(self, r: Rendered, *, lazy: bool = False) -> Any:
        """The processor's outputs for one rendering (on the CPU), with each frame's pixels
        processed at most once across calls while ``frame_cache_mb > 0`` (same tensors as
        without: :mod:`interactscope.engines.qwen_frames`); sets ``r.frames_reused``. ``lazy``:
        pixel tensors may be placeholders that only :func:`collate_left` with the frame cache's
        ``pieces_of`` turns into pixels (:meth:`chat_batch`)."""
        kw = self.processor_inputs(r)
        before = self.frame_cache.hits if self.frame_cache is not None else 0
        with self.caches_installed(lazy=lazy):
            out = self.processor(**kw)
        if self.frame_cache is not None:
            r.frames_reused = self.frame_cache.hits - before
        return out

    def _on_device(self, inputs: Any) -> Any:
        """Processor outputs on the model's device, float inputs in the model's dtype."""
        import torch  # optional dependency ([transformers])

        if hasattr(inputs, "to"):
            inputs = inputs.to(self.device)
        else:  # a joined batch (a plain dict): tensors moved one by one (no-op where they are)
            inputs = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        fdt = getattr(self.generator, "dtype", None)
        if fdt is not None and fdt != torch.float32:
            for k in ("pixel_values", "pixel_values_videos", "input_features"):
                if k in inputs and torch.is_floating_point(inputs[k]):
                    inputs[k] = inputs[k].to(fdt)
        return inputs

    def _generate_kwargs(self, generation: dict[str, Any]) -> dict[str, Any]:
        return hf_generate_kwargs(self.options.generation, generation, 128, top_p=True)

    def _decode(self, new: Any) -> tuple[str, int]:
        """Text of the new tokens and how many count (up to and including the first stop)."""
        tok = getattr(self.processor, "tokenizer", self.processor)
        stop = {getattr(tok, "eos_token_id", None), getattr(tok, "pad_token_id", None)}
        n_out = 0
        for i in new.tolist():
            n_out += 1
            if i in stop:
                break
        return tok.decode(new, skip_special_tokens=True).strip(), n_out

    def chat(
        self, messages: Sequence[Any], tools: Sequence[Any] | None = None, **generation: Any
    ) -> ChatResult:
        """One greedy (temperature 0) generation; ``tools`` are not sent (describe them in the
        prompt). ``raw`` holds the frame and audio counts (see the module docstring).

        Raises:
            EngineError: see :meth:`load` and :meth:`render`.
        """
        import torch  # optional dependency ([transformers])

        if self.generator is None:
            self.load()
        start = time.perf_counter()
        r = self.render(messages)
        inputs = self._inputs(r)
        n_in = int(inputs["input_ids"].shape[1])
        gen_kw = self._generate_kwargs(generation)
        t_model = time.perf_counter()
        with torch.inference_mode():
            out = self.generator.generate(**inputs, **gen_kw)
        model_s = time.perf_counter() - t_model
        seq = out.sequences if hasattr(out, "sequences") else out
        text, n_out = self._decode(seq[0, n_in:])
        raw = _raw(r, model_s, t_model - start)
        return ChatResult(
            text=text,
            prompt_tokens=n_in,
            completion_tokens=n_out,
            latency_s=round(time.perf_counter() - start, 4),
            raw=raw,
        )

    def chat_batch(
        self,
        conversations: Sequence[Sequence[Any]],
        tools: Sequence[Any] | None = None,
        **generation: Any,
    ) -> list[ChatResult | EngineError]:
        """Answers in order from one left-padded ``generate`` over all conversations.

        Each conversation is rendered and processed alone (the same tensors as :meth:`chat`),
        then the rows are joined: ``input_ids`` / ``attention_mask`` left-padded to the longest
        (pad id of the tokenizer), media tensors concatenated in conversation order. Greedy
        answers equal :meth:`chat`'s. A conversation that cannot be rendered or processed gets
        its :class:`EngineError` and the others are batched; when the batched ``generate`` fails
        (e.g. out of memory) the batch is halved and retried, down to one :meth:`chat` each. ``latency_s`` and
        ``raw["model_s"]`` are the batch's times divided by its size; ``raw["process_s"]`` is the
        conversation's own rendering and processing plus its share of joining the rows;
        ``raw`` also has ``batch_size``, ``batch_wall_s`` and ``batch_model_s`` (s).
        """
        if len(conversations) < 2:
            return chat_each(self, conversations, tools, **generation)
        if self.generator is None:
            self.load()
        start = time.perf_counter()
        try:
            gen_kw = self._generate_kwargs(generation)
        except EngineError as exc:
            return [exc] * len(conversations)
        results: list[ChatResult | EngineError | None] = [None] * len(conversations)
        rows: list[tuple[int, Rendered, Any]] = []
        process_s: dict[int, float] = {}
        for i, conv in enumerate(conversations):
            t_row = time.perf_counter()
            try:
                r = self.render(conv)
                rows.append((i, r, self.process(r, lazy=True)))
                process_s[i] = time.perf_counter() - t_row
            except EngineError as exc:
                results[i] = exc
            except Exception as exc:  # noqa: BLE001 - one bad conversation fails its slot only
                results[i] = EngineError(f"{type(exc).__name__}: {exc}")
                results[i].__cause__ = exc
        pending = [rows] if rows else []
        try:
            self._answer_all(
                pending, conversations, results, gen_kw, start, process_s, tools, generation
            )
        finally:
            if self.frame_cache is not None:
                self.frame_cache.release()
        return [r if r is not None else EngineError("no result") for r in results]

    def _answer_all(
        self,
        pending: list[list[tuple[int, Rendered, Any]]],
        conversations: Sequence[Sequence[Any]],
        results: list[ChatResult | EngineError | None],
        gen_kw: dict[str, Any],
        start: float,
        process_s: dict[int, float],
        tools: Sequence[Any] | None,
        generation: dict[str, Any],
    ) -> None:
        """Batched ``generate`` over each part of ``pending``; a failing part is halved, down to
        one :meth:`chat` each."""
        while pending:
            part = pending.pop(0)
            try:
                self._answer_rows(part, results, gen_kw, start, process_s)
            except Exception as exc:  # noqa: BLE001 - halve the batch, then one at a time
                log.warning("batched generate of %d failed (%s); splitting", len(part), exc)
                if len(part) > 1:
                    pending[:0] = [part[: len(part) // 2], part[len(part) // 2 :]]
                else:
                    i = part[0][0]
                    results[i] = chat_each(self, [conversations[i]], tools, **generation)[0]

    def _pad_id(self) -> int:
        tok = getattr(self.processor, "tokenizer", self.processor)
        pad = getattr(tok, "pad_token_id", None)
        return int(pad if pad is not None else tok.eos_token_id)

    def _answer_rows(
        self,
        rows: list[tuple[int, Rendered, Any]],
        results: list[ChatResult | EngineError | None],
        gen_kw: dict[str, Any],
        start: float,
        process_s: dict[int, float] | None = None,
    ) -> None:
        """One batched ``generate`` over processed ``rows`` (index, rendering, processor output);
        fills ``results`` at each row's index. ``process_s``: each row's own processing seconds
        (by index); the joining of the rows is shared out equally on top."""
        import torch  # optional dependency ([transformers])

        pad = self._pad_id()
        t_join = time.perf_counter()
        pieces_of = self.frame_cache.pieces_of if self.frame_cache is not None else None
        # CPU: the pixel buffers of the last batch are reused (CUDA's allocator already caches)
        bufs = self._join_buffers if str(self.device) == "cpu" else None
        with host_threads(self.options.host_threads):
            joined = collate_left([row[2] for row in rows], pad, pieces_of, self.device, bufs)
        inputs = self._on_device(joined)
        width = int(inputs["input_ids"].shape[1])
        t_model = time.perf_counter()
        with torch.inference_mode():
            out = self.generator.generate(**inputs, **gen_kw, pad_token_id=pad)
        model_s = time.perf_counter() - t_model
        wall = time.perf_counter() - start
        seq = out.sequences if hasattr(out, "sequences") else out
        n = len(rows)
        join = (t_model - t_join) / n
        for b, (i, r, _) in enumerate(rows):
            text, n_out = self._decode(seq[b, width:])
            raw = _raw(r, model_s / n, (process_s or {}).get(i, 0.0) + join)
            raw.update(batch_size=n, batch_wall_s=round(wall, 4), batch_model_s=round(model_s, 4))
            results[i] = ChatResult(
                text=text,
                prompt_tokens=int(inputs["attention_mask"][b].sum()),
                completion_tokens=n_out,
                latency_s=round(wall / n, 4),
                raw=raw,
            )

    def describe(self) -> dict[str, Any]:
        """Facts for ``run.json``."""
        import transformers  # optional dependency ([transformers])

        return {
            "checkpoint": self.options.checkpoint,
            "family": self.family,
            "model_type": self.model_type() or None,
            "frames_as": self.frames_as,
            "device": self.device,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.options.generation.temperature,
            "transformers": transformers.__version__,
        }

    def close(self) -> None:
        """Drop the model."""
        self._join_buffers.clear()
        self.model = None
        self.generator = None
