"""Engine ``vllm``: the offline ``vllm.LLM`` engine (GPU only, extra ``[vllm]``).

A whole batch of conversations goes into one ``llm.generate`` call with prefix caching on.
Messages are rendered by the model's chat template (the processor's ``apply_chat_template``, or
the engine's tokenizer): each image part becomes an ``{"type": "image"}`` placeholder, each video
part a ``{"type": "video"}`` and each audio part an ``{"type": "audio"}``; the arrays go, in prompt
order, into ``multi_modal_data`` (``{"image": [(H, W, 3) uint8], "video": [(T, H, W, 3)],
"audio": [(waveform, sr)]}``, the format of vLLM's
``examples/offline_inference/qwen2_5_omni/only_thinker.py``). A video is padded to an even frame
count by repeating the newest frame (Qwen's temporal patch is 2 frames); with
``video_metadata`` it goes as ``(frames, metadata)`` (Qwen2.5-VL and Qwen3-VL require it; Qwen3-VL
derives frame times from it).
File paths are never passed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interactscope.engines import base
from interactscope.engines.base import (
    ChatResult,
    EngineError,
    Message,
    as_messages,
)
from interactscope.engines.qwen_options import QwenOptions

log = logging.getLogger(__name__)

__all__ = [
    "VIDEO_METADATA_MODEL_TYPES",
    "Rendered",
    "VLLMEngine",
    "fps_of",
    "import_vllm",
    "video_metadata",
]


def import_vllm() -> Any:
    """The ``vllm`` module.

    Raises:
        EngineError: vLLM is not installed (it needs a CUDA GPU).
    """
    try:
        import vllm  # optional dependency ([vllm])
    except ImportError as exc:
        raise EngineError(
            "backend 'vllm' needs the vllm package and a CUDA GPU: "
            "pip install 'interactscope[vllm]' "
            "(on a CPU-only machine use the 'transformers' or 'cascade' backends instead)"
        ) from exc
    return vllm


def fps_of(pts: list[float]) -> float:
    """Frame rate (Hz) of frames at times ``pts`` (s): 1 for the 1 fps stream, the inverse of the
    mean spacing when a frame cap spread them out."""
    if len(pts) < 2:
        return 1.0
    span = pts[-1] - pts[0]
    return 1.0 if span <= 0 else max(1e-3, (len(pts) - 1) / span)


def video_metadata(pts: list[float], n_sent: int) -> dict[str, Any]:
    """vLLM video metadata for frames decoded at 1 fps and shown at stream times ``pts`` (s):
    frame indices on a 1 Hz grid, so the model's timestamps (index / fps) are the stream times;
    the padding frame repeats the newest index. Needed by Qwen2.5-VL and Qwen3-VL
    (``video_needs_metadata`` in vLLM)."""
    idx = [int(round(p)) for p in pts]
    idx += [idx[-1]] * (n_sent - len(idx))
    total = idx[-1] + 1
    return {
        "fps": 1.0,
        "duration": float(total),
        "total_num_frames": total,
        "frames_indices": idx,
        "video_backend": "opencv",
        "do_sample_frames": False,
    }


VIDEO_METADATA_MODEL_TYPES = frozenset({"qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe"})
"""``model_type`` of the checkpoints whose vLLM data parser requires video metadata
(``video_needs_metadata=True`` in vLLM 0.32's ``qwen2_5_vl.py`` and ``qwen3_vl.py``; the Omni
thinkers take bare frames and the rate as ``fps``)."""


def _model_type(llm: Any) -> str | None:
    """``model_type`` of a started ``vllm.LLM`` (``None`` if not started or not exposed)."""
    try:
        return str(llm.llm_engine.model_config.hf_config.model_type)
    except AttributeError:
        return None


def _even_video(frames: list[np.ndarray]) -> np.ndarray:
    """(T, H, W, 3) with T even (the newest frame repeated when odd); frames cropped to the
    smallest size among them."""
    frames = list(frames)
    if len(frames) % 2:
        frames.append(frames[-1])
    h = min(f.shape[0] for f in frames)
    w = min(f.shape[1] for f in frames)
    return np.stack([f[:h, :w] for f in frames])


@dataclass
class Rendered:
    """One conversation rendered for the engine: the chat-template prompt and the multimodal
    arrays in prompt order."""

    prompt: str
    images: list[np.ndarray] = field(default_factory=list)
    videos: list[list[np.ndarray]] = field(default_factory=list)
    video_pts: list[list[float]] = field(default_factory=list)
    audios: list[tuple[np.ndarray, int]] = field(default_factory=list)


class VLLMEngine:
    """Chat through ``vllm.LLM`` (see the module docstring). The engine and the chat-template
    renderer are created on first use.

    Raises:
        EngineError: (construction) vLLM missing, no ``checkpoint``.
    """

    backend = "vllm"
    Options = QwenOptions

    def __init__(
        self,
        options: QwenOptions,
        name: str = "vllm",
        *,
        frames_as: str = "image",
        max_frames: int = 32,
    ):
        self.vllm = import_vllm()
        if not options.checkpoint:
            raise EngineError(f"model {name!r}: backend 'vllm' needs 'checkpoint' in its config")
        self.options = options
        self.name = name
        self.checkpoint = str(options.checkpoint)
        self.frames_as = options.frames_as or frames_as
        self._video_metadata: bool | None = (
            None if options.video_metadata == "auto" else bool(options.video_metadata)
        )
        self.mm_processor_kwargs = options.processor_options()
        self.limit_mm_per_prompt = self._limits(options, self.frames_as, max_frames)
        self._llm: Any = None
        self._renderer: Any = None
        self.renderer_source: str | None = None

    @property
    def video_metadata(self) -> bool:
        """Whether videos go as ``(frames, metadata)``: the configured value, or for ``auto``
        whether the model is one whose vLLM processor requires metadata (its ``model_type`` in
        :data:`VIDEO_METADATA_MODEL_TYPES`, read from the started engine's config, else from the
        checkpoint name)."""
        if self._video_metadata is None:
            model_type = _model_type(self._llm)
            if model_type is not None:
                self._video_metadata = model_type in VIDEO_METADATA_MODEL_TYPES
            else:  # engine not started: decide from the name, and again once it is
                name = self.checkpoint.lower().replace(".", "_").replace("-", "_")
                return any(t in name for t in VIDEO_METADATA_MODEL_TYPES)
        return self._video_metadata

    @staticmethod
    def _limits(o: QwenOptions, frames_as: str, max_frames: int) -> dict[str, int]:
        """``limit_mm_per_prompt``, by default room for ``max_frames`` stream frames (as images,
        one video, or ``video_pairs``' ceil(max_frames / 2) two-frame videos) plus 4 image
        attachments and 2 audio items."""
        if o.limit_mm_per_prompt:
            return {str(k): int(v) for k, v in o.limit_mm_per_prompt.items()}
        if frames_as == "image":
            return {"image": int(max_frames) + 4, "audio": 2}
        if frames_as == "video_pairs":
            return {"image": 4, "video": (int(max_frames) + 1) // 2, "audio": 2}
        return {"image": 4, "video": 1, "audio": 2}

    @property
    def max_new_tokens(self) -> int:
        return int(self.options.generation.max_new_tokens or 256)

    def llm(self) -> Any:
        """The ``vllm.LLM`` instance (created once).

        Raises:
            EngineError: vLLM could not load the checkpoint.
        """
        if self._llm is None:
            o = self.options
            kwargs = dict(o.engine_args)
            kwargs.update(
                model=self.checkpoint,
                max_model_len=o.max_model_len,
                limit_mm_per_prompt=self.limit_mm_per_prompt,
                enable_prefix_caching=True,
            )
            if self.mm_processor_kwargs:
                kwargs.setdefault("mm_processor_kwargs", self.mm_processor_kwargs)
            if o.generation.seed is not None:
                kwargs.setdefault("seed", int(o.generation.seed))
            log.info("vllm engine: loading %s (max_model_len %d)", self.checkpoint, o.max_model_len)
            try:
                self._llm = self.vllm.LLM(**kwargs)
            except Exception as exc:
                raise EngineError(
                    f"model {self.name!r}: vllm could not load {self.checkpoint}: {exc}"
                ) from exc
        return self._llm

    def sampling_params(self, **generation: Any) -> Any:
        """``vllm.SamplingParams`` from the configured generation options and ``generation``."""
        g = self.options.generation.model_dump()
        g.update(generation)
        kwargs: dict[str, Any] = {
            "temperature": float(g["temperature"]),
            "max_tokens": int(g["max_new_tokens"] or 256),
        }
        if g["top_p"] is not None:
            kwargs["top_p"] = float(g["top_p"])
        if g["seed"] is not None:
            kwargs["seed"] = int(g["seed"])
        if g["stop"]:
            kwargs["stop"] = [g["stop"]] if isinstance(g["stop"], str) else list(g["stop"])
        return self.vllm.SamplingParams(**kwargs)

    def _processor(self) -> Any | None:
        from transformers import AutoProcessor  # optional dependency ([transformers])

        trust = bool(self.options.engine_args.get("trust_remote_code", False))
        trust = trust or self.options.trust_remote_code
        proc = AutoProcessor.from_pretrained(self.checkpoint, trust_remote_code=trust)
        return proc if getattr(proc, "chat_template", None) else None

    def renderer(self) -> Any:
        """The object whose ``apply_chat_template`` renders prompts: the checkpoint's processor
        (``template: auto|processor``) or the engine's tokenizer (``tokenizer``, or ``auto``
        without a processor template).

        Raises:
            EngineError: ``template: processor`` and the processor is missing or has no template.
        """
        if self._renderer is not None:
            return self._renderer
        mode = self.options.template
        if mode in ("auto", "processor"):
            try:
                proc = self._processor()
            except Exception as exc:  # noqa: BLE001 - auto falls back to the tokenizer
                if mode == "processor":
                    raise EngineError(
                        f"model {self.name!r}: cannot load the processor of "
                        f"{self.checkpoint}: {exc}"
                    ) from exc
                log.info("vllm engine: no processor chat template (%s); using the tokenizer", exc)
                proc = None
            if proc is not None:
                self._renderer, self.renderer_source = proc, "processor"
                return proc
            if mode == "processor":
                raise EngineError(f"{self.checkpoint}: the processor has no chat template")
        self._renderer, self.renderer_source = self.llm().get_tokenizer(), "tokenizer"
        return self._renderer

    def audio_window(self, sample_rate: int = 16000) -> int | None:
        """Most samples one audio item may carry: ``audio_window_s`` × ``sample_rate``, else the
        processor's feature-extractor window (``n_samples``) once a renderer is loaded, else
        unlimited (``None``)."""
        if self.options.audio_window_s:
            return int(float(self.options.audio_window_s) * sample_rate)
        fe = getattr(self._renderer, "feature_extractor", None) if self._renderer else None
        n = getattr(fe, "n_samples", None)
        return int(n) if n else None

    def count_tokens(self, prompt: str) -> int:
        """Text tokens of ``prompt`` by the renderer's tokenizer (a rough length/3 if it fails)."""
        tok = self.renderer()
        tok = getattr(tok, "tokenizer", tok)
        try:
            return len(tok.encode(prompt, add_special_tokens=False))
        except TypeError:
            return len(tok.encode(prompt))
        except Exception:  # noqa: BLE001 - a rough estimate is still useful
            return len(prompt) // 3 + 1

    def render(self, messages: Sequence[Any]) -> Rendered:
        """Chat messages as the template prompt plus the arrays in prompt order (an audio part
        without samples is left out).

        Raises:
            EngineError: a malformed part.
        """
        r = Rendered(prompt="")
        template: list[dict[str, Any]] = []
        for msg in as_messages(messages):
            template.append({"role": msg.role, "content": self._template_parts(msg, r)})
        prompt = self.renderer().apply_chat_template(
            template, tokenize=False, add_generation_prompt=True
        )
        r.prompt = str(prompt[0] if isinstance(prompt, list) else prompt)
        return r

    @staticmethod
    def _template_parts(msg: Message, r: Rendered) -> Any:
        if isinstance(msg.content, str):
            return msg.content
        parts: list[dict[str, Any]] = []
        for p in msg.content:
            if isinstance(p, base.TextPart):
                parts.append({"type": "text", "text": p.text})
            elif isinstance(p, base.ImagePart):
                r.images.append(p.image)
                parts.append({"type": "image"})
            elif isinstance(p, base.VideoPart):
                r.videos.append(list(p.frames))
                pts = list(p.pts_s) if len(p.pts_s) == len(p.frames) else []
                r.video_pts.append(pts or [float(i) for i in range(len(p.frames))])
                parts.append({"type": "video"})
            elif isinstance(p, base.AudioPart) and p.audio.shape[0]:
                r.audios.append((p.audio, p.sample_rate))
                parts.append({"type": "audio"})
        return parts

    def engine_input(self, r: Rendered) -> dict[str, Any]:
        """The ``llm.generate`` prompt dict: ``prompt``, ``multi_modal_data`` and
        ``mm_processor_kwargs`` (the configured ones; with videos also ``videos_kwargs``,
        ``do_sample_frames: false`` and the frames' ``fps``, or per-video metadata instead)."""
        mm: dict[str, Any] = {}
        if r.images:
            mm["image"] = list(r.images)
        if r.videos:
            if self._video_metadata is None:  # auto: decided by the started engine's model_type
                self.llm()
            arrays = [_even_video(v) for v in r.videos]
            if self.video_metadata:
                mm["video"] = [
                    (arr, video_metadata(pts, arr.shape[0]))
                    for arr, pts in zip(arrays, r.video_pts, strict=True)
                ]
            else:
                mm["video"] = arrays
        if r.audios:
            mm["audio"] = list(r.audios)
        out: dict[str, Any] = {"prompt": r.prompt}
        if mm:
            out["multi_modal_data"] = mm
        kwargs = dict(self.mm_processor_kwargs)
        if r.videos:
            kwargs.update(self.options.videos_kwargs)
            kwargs.setdefault("do_sample_frames", False)  # our frames are already the sample
            if not self.video_metadata:
                kwargs.setdefault("fps", fps_of(r.video_pts[0]))
        if kwargs:
            out["mm_processor_kwargs"] = kwargs
        return out

    def generate(self, inputs: list[dict[str, Any]], **generation: Any) -> list[Any]:
        """One ``llm.generate`` call over prompt dicts; vLLM's request outputs in order.

        Raises:
            EngineError: a count mismatch; engine exceptions propagate unchanged (callers
                isolate the failing request).
        """
        outs = list(
            self.llm().generate(
                inputs, sampling_params=self.sampling_params(**generation), use_tqdm=False
            )
        )
        if len(outs) != len(inputs):
            raise EngineError(f"vllm returned {len(outs)} outputs for {len(inputs)} prompts")
        return outs

    @staticmethod
    def to_result(o: Any, latency_s: float) -> ChatResult:
        """One vLLM request output as a :class:`ChatResult` (text, token counts, finish, and
        ``raw["cached_tokens"]``: the prompt tokens served by the prefix cache,
        ``RequestOutput.num_cached_tokens``, when vLLM reports it)."""
        comp = o.outputs[0]
        prompt_ids = getattr(o, "prompt_token_ids", None)
        comp_ids = getattr(comp, "token_ids", None)
        raw: dict[str, Any] = {"finish_reason": getattr(comp, "finish_reason", None)}
        cached = getattr(o, "num_cached_tokens", None)
        if isinstance(cached, int) and not isinstance(cached, bool):
            raw["cached_tokens"] = cached
        return ChatResult(
            # stripped as the transformers engines strip their decode: the local engines give
            # one text for one answer (a leading-space token is not part of the reply)
            text=str(comp.text or "").strip(),
            prompt_tokens=len(prompt_ids) if prompt_ids is not None else None,
            completion_tokens=len(comp_ids) if comp_ids is not None else None,
            latency_s=latency_s,
            raw=raw,
        )

    def chat(
        self, messages: Sequence[Any], tools: Sequence[Any] | None = None, **generation: Any
    ) -> ChatResult:
        """One conversation (see :meth:`chat_batch`)."""
        out = self.chat_batch([messages], tools, **generation)[0]
        if isinstance(out, EngineError):
            raise out
        return out

    def chat_batch(
        self,
        conversations: Sequence[Sequence[Any]],
        tools: Sequence[Any] | None = None,
        **generation: Any,
    ) -> list[ChatResult | EngineError]:
        """Every conversation in one ``llm.generate`` call; on an engine exception the batch is
        retried one by one so a failure fills only its own slot. ``tools`` are not sent (vLLM's
        offline engine has no native tool calling): describe them in the prompt."""
        inputs = [self.engine_input(self.render(c)) for c in conversations]
        t0 = time.perf_counter()
        try:
            outs = self.generate(inputs, **generation)
        except Exception:  # noqa: BLE001 - isolate the failing conversation(s)
            return [self._one(i, generation) for i in inputs]
        per = (time.perf_counter() - t0) / max(1, len(inputs))
        return [self.to_result(o, per) for o in outs]

    def _one(self, inp: dict[str, Any], generation: dict[str, Any]) -> ChatResult | EngineError:
        t0 = time.perf_counter()
        try:
            (o,) = self.generate([inp], **generation)
        except Exception as exc:  # noqa: BLE001
            err = EngineError(f"vllm engine error: {type(exc).__name__}: {exc}")
            err.__cause__ = exc
            return err
        return self.to_result(o, time.perf_counter() - t0)

    def describe(self) -> dict[str, Any]:
        """Facts for ``run.json``."""
        o = self.options
        return {
            "checkpoint": self.checkpoint,
            "max_model_len": o.max_model_len,
            "limit_mm_per_prompt": self.limit_mm_per_prompt,
            "video_metadata": self.video_metadata,
            "mm_processor_kwargs": self.mm_processor_kwargs,
            "max_new_tokens": self.max_new_tokens,
            "temperature": o.generation.temperature,
            "enable_prefix_caching": True,
            "engine_args": dict(o.engine_args),
            "chat_template_source": self.renderer_source,
            "vllm_version": getattr(self.vllm, "__version__", None),
        }

    def close(self) -> None:
        """Drop the engine (GPU memory is freed when the object is collected)."""
        self._llm = None
        self._renderer = None
