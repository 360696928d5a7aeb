"""Backend ``transformers``: Qwen Omni thinkers and Qwen VL models on CPU or GPU (SPEC §2, issue 5).

Families (from the checkpoint's ``model_type``, or ``family:`` in the model config):

- ``omni`` — Qwen2.5-Omni (``qwen2_5_omni``, ``qwen2_5_omni_thinker``) and Qwen3-Omni
  (``qwen3_omni_moe``, ``qwen3_omni_moe_thinker``): text out from the thinker (the talker is never
  loaded or is disabled); frames and the native audio waveform go to the processor as arrays.
- ``vl`` — Qwen2-VL, Qwen2.5-VL, Qwen3-VL: frames only; speech reaches them as the causal ASR
  transcript in the prompt text (``audio.mode: asr``; ``native`` is refused at ``prepare``).

Causality. The prompt comes from :mod:`interactscope.protocol.prompts`, whose parts carry our own
causal arrays (frames with ``pts <= t``; exactly ``round(t * sr)`` audio samples). They are passed
to the processor as ``videos=`` / ``images=`` / ``audio=`` arrays, never as file paths: Qwen's
helper utilities read a whole file's audio regardless of the clip end and would leak the future.
``use_audio_in_video``/``load_audio_from_video`` are never set.

Frames go as one video per prompt (``frames_as: video``, the default; ``fps`` = the stream's
1 fps, or the cap's spacing) or as one image each (``frames_as: image``). Qwen's temporal patch
is 2 frames, so an odd frame count is padded by repeating the newest frame;
``AdapterOutput.extra`` records ``n_frames`` (true) and ``n_frames_sent``. An audio part longer
than the feature extractor's window (``n_samples``: 30 s for Whisper's default, 300 s in the
Qwen2.5-Omni checkpoint) keeps its most recent window (``extra["audio_dropped_s"]``); a part
shorter than ``min_audio_samples`` (default 1600 = 0.1 s; fewer than 480 give no audio token) gets
zeros in front (``extra["audio_padded_samples"]``).

Protocols. Offline Probing: ``respond`` / ``respond_batch`` (one independent greedy generation
per decision point). Online Rolling: :meth:`TransformersAdapter.open_session` keeps one
conversation per interaction: at the first step the observation 0..q is replayed, then each step
appends only the new frames, the new audio samples and new transcript words, and the model's own
answer stays in the conversation as an assistant turn (the whole conversation is re-encoded at
each step; no KV-cache reuse across steps).

Config keys (``configs/models/NAME.yaml``: top level, or inside ``limits:`` / ``transformers:``;
``settings.adapter`` overrides any of them):
``checkpoint`` (hub id or local folder; found through ``HF_HOME``, never downloaded when
``HF_HUB_OFFLINE=1``), ``family`` (``omni`` | ``vl``, default from ``model_type``), ``device``
(default ``cuda`` if available else ``cpu``), ``dtype`` (default ``bfloat16`` on GPU, ``float32``
on CPU), ``attn_implementation``, ``frames_as`` (``video`` | ``image``), ``processor_kwargs``
(``{max_pixels: 200704, min_pixels: 3136}``: the per-frame pixel budget, also given as the video
``size`` on every call), ``videos_kwargs`` (passed per call), ``trust_remote_code``,
``min_audio_samples`` (1600), ``session_max_frames`` (Online Rolling; default ``frames.max``),
``generation: {max_new_tokens: 128, temperature: 0}``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from interactscope.adapters.base import (
    Adapter,
    AdapterError,
    AdapterOutput,
    DecisionRequest,
    Session,
)
from interactscope.schema import Interaction, VideoRecord
from interactscope.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["TransformersAdapter", "TransformersSession", "Rendered", "MODEL_TYPES"]

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


def _opt(adapter: TransformersAdapter, key: str, default: Any = None) -> Any:
    """``settings.adapter[key]``, else the config's top level, ``limits:`` or ``transformers:``
    group (the same file can serve the ``vllm`` backend, whose options live beside)."""
    over = adapter.settings.adapter or {}
    if key in over:
        return over[key]
    cfg = adapter.config
    for group in (cfg, cfg.get("limits") or {}, cfg.get("transformers") or {}):
        if key in group:
            return group[key]
    return default


def _fps_of(pts: list[float]) -> float:
    """Frame rate (Hz) of frames at times ``pts``: 1 for the 1 fps stream, the mean spacing's
    inverse when the ``uniform`` cap spread them out."""
    if len(pts) < 2:
        return 1.0
    span = pts[-1] - pts[0]
    return 1.0 if span <= 0 else max(1e-3, (len(pts) - 1) / span)


class TransformersAdapter(Adapter):
    """Qwen Omni thinkers / Qwen VL through ``transformers`` (see the module docstring).

    Args:
        name, config, settings: as :class:`~interactscope.adapters.base.Adapter`.
        model, processor: an already-built model and processor (tests, notebooks); when given,
            ``checkpoint`` is not loaded.

    Raises:
        AdapterError: (``prepare``) torch/transformers missing, unknown ``model_type``, weights
            not found offline, ``audio.mode: native`` for a VL model.
    """

    backend: ClassVar[str] = "transformers"
    needs_media: ClassVar[bool] = True
    supports_online: ClassVar[bool] = True

    def __init__(
        self,
        name: str,
        config: dict[str, Any],
        settings: Settings,
        *,
        model: Any | None = None,
        processor: Any | None = None,
    ):
        super().__init__(name, config, settings)
        self.model = model
        self.processor = processor
        self.family: str | None = _opt(self, "family")
        self.frames_as: str = _opt(self, "frames_as", "video")
        if self.frames_as not in ("video", "image"):
            raise AdapterError(f"model {name}: frames_as must be 'video' or 'image'")
        gen = dict(self.config.get("generation") or {})
        gen.update((self.settings.adapter or {}).get("generation") or {})
        self.max_new_tokens = int(gen.get("max_new_tokens", 128))
        self.temperature = float(gen.get("temperature", 0.0) or 0.0)
        self.videos_kwargs: dict[str, Any] = dict(_opt(self, "videos_kwargs", {}) or {})
        self.min_audio_samples = int(_opt(self, "min_audio_samples", 1600))
        pk = _opt(self, "processor_kwargs") or _opt(self, "mm_processor_kwargs") or {}
        self.video_size: dict[str, int] | None = None
        if "max_pixels" in pk:
            # the Qwen Omni processors pass their own class-level video ``size`` on every call,
            # overriding the video processor's: give the configured pixel budget per call
            lo = int(pk.get("min_pixels", min(3136, int(pk["max_pixels"]))))
            self.video_size = {"shortest_edge": lo, "longest_edge": int(pk["max_pixels"])}
        self._generator: Any = None
        self.device: str | None = None

    # ------------------------------------------------------------------ loading
    def _model_type(self) -> str:
        cfg = getattr(self.model, "config", None)
        return str(getattr(cfg, "model_type", "") or "")

    def load(self) -> None:
        """Load model and processor from ``checkpoint`` (unless given). Idempotent."""
        if self.model is not None and self.processor is not None:
            self._finish_load()
            return
        try:
            import torch
            import transformers
            from transformers import AutoConfig, AutoProcessor
        except ImportError as exc:
            raise AdapterError(
                f"model {self.name}: backend 'transformers' needs torch and transformers "
                "(pip install 'interactscope[transformers]')"
            ) from exc
        ckpt = self.config.get("checkpoint")
        if not ckpt:
            raise AdapterError(f"model {self.name}: config has no 'checkpoint'")
        trust = bool(_opt(self, "trust_remote_code", False))
        try:
            hf_cfg = AutoConfig.from_pretrained(ckpt, trust_remote_code=trust)
        except OSError as exc:
            raise AdapterError(
                f"model {self.name}: cannot load the config of {ckpt!r} ({exc}). Weights are "
                "read from the Hugging Face cache ($HF_HOME) or a local folder; download them "
                "first where a network is available (huggingface-cli download " + str(ckpt) + ")"
            ) from exc
        mt = hf_cfg.model_type
        if mt not in MODEL_TYPES:
            raise AdapterError(
                f"model {self.name}: model_type {mt!r} of {ckpt!r} is not supported "
                f"(known: {sorted(MODEL_TYPES)})"
            )
        cls_name, family = MODEL_TYPES[mt]
        cls = getattr(transformers, cls_name, None)
        if cls is None:
            raise AdapterError(
                f"model {self.name}: transformers {transformers.__version__} has no {cls_name}"
            )
        device = _opt(self, "device") or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype_name = _opt(self, "dtype") or ("bfloat16" if device != "cpu" else "float32")
        kwargs: dict[str, Any] = {"dtype": getattr(torch, dtype_name), "trust_remote_code": trust}
        if _opt(self, "attn_implementation"):
            kwargs["attn_implementation"] = _opt(self, "attn_implementation")
        if mt in ("qwen2_5_omni", "qwen3_omni_moe"):
            kwargs["enable_audio_output"] = False  # text out only: the talker is not needed
        try:
            model = cls.from_pretrained(ckpt, **kwargs)
        except TypeError:
            kwargs.pop("enable_audio_output", None)
            model = cls.from_pretrained(ckpt, **kwargs)
        pkw = _opt(self, "processor_kwargs") or _opt(self, "mm_processor_kwargs") or {}
        self.processor = AutoProcessor.from_pretrained(ckpt, trust_remote_code=trust, **pkw)
        self.model = model.to(device).eval()
        self.family = self.family or family
        self._finish_load()

    def _finish_load(self) -> None:
        mt = self._model_type()
        if self.family is None:
            self.family = MODEL_TYPES.get(mt, ("", "omni" if "omni" in mt else "vl"))[1]
        if hasattr(self.model, "disable_talker"):
            try:
                self.model.disable_talker()
            except Exception:  # noqa: BLE001 - already without a talker
                pass
        thinker = getattr(self.model, "thinker", None)
        self._generator = thinker if thinker is not None else self.model
        try:
            self.device = str(next(self._generator.parameters()).device)
        except (StopIteration, AttributeError):
            self.device = "cpu"

    def prepare(self, bench: Any) -> None:
        if self.family == "vl" and self.settings.audio.mode == "native":  # before loading
            raise AdapterError(
                f"model {self.name}: a VL model cannot take native audio; set "
                "settings.audio.mode: asr (transcript) or none"
            )
        self.load()
        if self.family == "vl" and self.settings.audio.mode == "native":
            raise AdapterError(
                f"model {self.name}: a VL model cannot take native audio; set "
                "settings.audio.mode: asr (transcript) or none"
            )

    def describe(self) -> dict[str, Any]:
        import transformers

        return {
            "checkpoint": self.config.get("checkpoint"),
            "family": self.family,
            "model_type": self._model_type() or None,
            "frames_as": self.frames_as,
            "device": self.device,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "transformers": transformers.__version__,
            "audio": "native waveform" if self.family == "omni" else "ASR transcript in text",
        }

    # ------------------------------------------------------------------ rendering
    def _audio_window(self) -> int | None:
        fe = getattr(self.processor, "feature_extractor", None)
        n = getattr(fe, "n_samples", None)
        return int(n) if n else None

    def render(self, messages: list[dict[str, Any]]) -> Rendered:
        """Turn :mod:`~interactscope.protocol.prompts` messages into a template rendering plus the
        media arrays in prompt order.

        Raises:
            AdapterError: an audio part for a VL model, or an unknown part type.
        """
        tmpl: list[dict[str, Any]] = []
        r = Rendered(text="")
        window = self._audio_window()
        for msg in messages:
            content = msg["content"]
            if isinstance(content, str):
                tmpl.append({"role": msg["role"], "content": [{"type": "text", "text": content}]})
                continue
            parts: list[dict[str, Any]] = []
            for p in content:
                kind = p["type"]
                if kind == "text":
                    parts.append({"type": "text", "text": p["text"]})
                elif kind == "image":
                    img = np.ascontiguousarray(p["image"])
                    if self.frames_as == "video" and not p.get("attachment"):
                        # a stream frame in image form (e.g. online replay): a 1-frame video
                        self._add_video(r, [img], [float(p.get("pts_s", 0.0))], parts)
                    else:
                        r.images.append(img)
                        parts.append({"type": "image"})
                        if not p.get("attachment"):
                            r.n_frames += 1
                            r.n_frames_sent += 1
                elif kind == "video":
                    frames = [np.ascontiguousarray(f) for f in p["video"]]
                    self._add_video(r, frames, list(p.get("pts_s") or []), parts)
                elif kind == "audio":
                    if self.family != "omni":
                        raise AdapterError(
                            f"model {self.name}: audio part given to a {self.family} model"
                        )
                    wav = np.asarray(p["audio"], dtype=np.float32).reshape(-1)
                    r.audio_samples.append(int(wav.shape[0]))
                    if window and wav.shape[0] > window:
                        r.audio_dropped_s += (wav.shape[0] - window) / float(p["sampling_rate"])
                        wav = wav[-window:]
                    if wav.shape[0] == 0:
                        continue  # nothing heard yet (t = 0): no audio item
                    if wav.shape[0] < self.min_audio_samples:
                        # too short for one audio token (e.g. the last 4 ms of a clip in Online
                        # Rolling): zeros in front, never samples from after t
                        pad = self.min_audio_samples - wav.shape[0]
                        wav = np.concatenate([np.zeros(pad, np.float32), wav])
                        r.audio_padded_samples += pad
                    r.audios.append(wav)
                    parts.append({"type": "audio"})
                else:
                    raise AdapterError(f"model {self.name}: prompt part {kind!r} not supported")
            tmpl.append({"role": msg["role"], "content": parts})
        text = self.processor.apply_chat_template(tmpl, tokenize=False, add_generation_prompt=True)
        r.text = text[0] if isinstance(text, list) else str(text)
        return r

    @staticmethod
    def _add_video(
        r: Rendered, frames: list[np.ndarray], pts: list[float], parts: list[dict[str, Any]]
    ) -> None:
        n = len(frames)
        if n == 0:
            return
        sent = list(frames)
        times = [float(p) for p in pts] if len(pts) == n else [float(i) for i in range(n)]
        if len(sent) % 2:
            sent.append(sent[-1])  # temporal patch 2: repeat the newest frame
            times.append(times[-1])
        r.videos.append(sent)
        r.video_pts.append(times)
        r.video_fps.append(_fps_of(pts) if pts else 1.0)
        r.n_frames += n
        r.n_frames_sent += len(sent)
        parts.append({"type": "video"})

    def processor_inputs(self, r: Rendered) -> dict[str, Any]:
        """Keyword arguments of the processor call for one rendered prompt (arrays only)."""
        kw: dict[str, Any] = {"text": [r.text], "return_tensors": "pt", "padding": True}
        if r.images:
            kw["images"] = r.images
        if r.videos:
            kw["videos"] = r.videos
            vk = {"do_sample_frames": False, **self.videos_kwargs}
            if self.video_size is not None:
                vk.setdefault("size", dict(self.video_size))
            fps = r.video_fps[0] if len(set(r.video_fps)) == 1 else r.video_fps
            vk.setdefault("fps", fps)
            if self._wants_metadata():
                # Qwen3-VL writes each frame's timestamp into the prompt from this metadata;
                # without it it assumes 24 fps. Index k at 1 fps = stream second k.
                from transformers.video_utils import VideoMetadata

                vk["video_metadata"] = [
                    VideoMetadata(
                        total_num_frames=len(v),
                        fps=1.0,
                        frames_indices=[int(round(p)) for p in pts],
                        duration=max(pts) + 1.0 if pts else None,
                    )  # fmt: skip
                    for v, pts in zip(r.videos, r.video_pts, strict=True)
                ]
            kw["videos_kwargs"] = vk
        if r.audios:
            kw["audio"] = r.audios
        return kw

    def _wants_metadata(self) -> bool:
        vp = getattr(self.processor, "video_processor", None)
        return type(vp).__name__.startswith("Qwen3VL")

    # ------------------------------------------------------------------ generation
    def generate(self, messages: list[dict[str, Any]]) -> AdapterOutput:
        """One greedy generation over ``messages``; text, token counts, latency, frame counts."""
        import torch

        if self._generator is None:
            self.load()
        start = time.perf_counter()
        r = self.render(messages)
        inputs = self.processor(**self.processor_inputs(r))
        inputs = inputs.to(self.device) if hasattr(inputs, "to") else inputs
        fdt = getattr(self._generator, "dtype", None)
        if fdt is not None and fdt != torch.float32:
            for k in ("pixel_values", "pixel_values_videos", "input_features"):
                if k in inputs and torch.is_floating_point(inputs[k]):
                    inputs[k] = inputs[k].to(fdt)
        n_in = int(inputs["input_ids"].shape[1])
        gen_kw: dict[str, Any] = {"max_new_tokens": self.max_new_tokens}
        if self.temperature > 0:
            gen_kw.update(do_sample=True, temperature=self.temperature)
        else:
            gen_kw.update(do_sample=False)
        t_model = time.perf_counter()
        with torch.inference_mode():
            out = self._generator.generate(**inputs, **gen_kw)
        model_s = time.perf_counter() - t_model
        seq = out.sequences if hasattr(out, "sequences") else out
        new = seq[0, n_in:]
        tok = getattr(self.processor, "tokenizer", self.processor)
        stop = {i for i in [getattr(tok, "eos_token_id", None), getattr(tok, "pad_token_id", None)]}
        n_out = 0
        for i in new.tolist():
            n_out += 1
            if i in stop:
                break
        text = tok.decode(new, skip_special_tokens=True).strip()
        extra: dict[str, Any] = {
            "n_frames": r.n_frames,
            "n_frames_sent": r.n_frames_sent,
            "audio_samples": sum(r.audio_samples),
            "model_s": round(model_s, 4),
        }
        if r.audio_dropped_s:
            extra["audio_dropped_s"] = round(r.audio_dropped_s, 3)
        if r.audio_padded_samples:
            extra["audio_padded_samples"] = r.audio_padded_samples
        return AdapterOutput(
            text=text,
            latency_s=round(time.perf_counter() - start, 4),
            prompt_tokens=n_in,
            completion_tokens=n_out,
            extra=extra,
        )

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        from interactscope.protocol.prompts import build_messages

        return self.generate(build_messages(request, frames_as=self.frames_as))

    def open_session(self, interaction: Interaction, video: VideoRecord) -> TransformersSession:
        if self._generator is None:
            self.load()
        return TransformersSession(self, interaction)

    def close(self) -> None:
        self.model = None
        self._generator = None


class TransformersSession(Session):
    """Online Rolling over one interaction (see the module docstring).

    ``messages`` is the conversation so far (prompt parts with arrays, and the model's own
    answers as assistant turns; a silent answer is kept as the silence token). The stream frames
    held in the conversation are capped at ``session_max_frames`` (config; default
    ``frames.max``): past it the oldest frames leave the conversation (their text labels stay;
    ``extra["session_frames_dropped"]`` counts them), so a long video cannot grow the prompt
    without bound. Audio parts are all kept."""

    def __init__(self, adapter: TransformersAdapter, interaction: Interaction):
        self.adapter = adapter
        self.interaction = interaction
        self.messages: list[dict[str, Any]] = []
        self.previous: Any | None = None
        self.last_t: float | None = None
        self.steps = 0
        cap = _opt(adapter, "session_max_frames")
        self.max_frames = int(cap) if cap else adapter.settings.frames.max
        self.frames_dropped = 0

    def step(self, request: DecisionRequest) -> AdapterOutput:
        from interactscope.protocol.prompts import online_turn

        if request.interaction.id != self.interaction.id:
            raise AdapterError(
                f"session of {self.interaction.id} stepped with {request.interaction.id}"
            )
        if self.last_t is not None and request.t < self.last_t:
            raise AdapterError(
                f"interaction {self.interaction.id}: Online Rolling steps must go forward in "
                f"time (t={request.t:g} after {self.last_t:g})"
            )
        turn = online_turn(
            request, self.previous, frames_as=self.adapter.frames_as, first=self.steps == 0
        )
        self.messages.extend(turn)
        self.frames_dropped += _drop_oldest_frames(self.messages, self.max_frames)
        out = self.adapter.generate(self.messages)
        answer = out.text.strip() or request.settings.silence_token
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
        self.previous = request.observation
        self.last_t = request.t
        self.steps += 1
        out.extra["session_step"] = self.steps
        out.extra["session_messages"] = len(self.messages)
        if self.frames_dropped:
            out.extra["session_frames_dropped"] = self.frames_dropped
        return out

    def close(self) -> None:
        self.messages.clear()
        self.previous = None


def _drop_oldest_frames(messages: list[dict[str, Any]], cap: int) -> int:
    """Remove the oldest stream frames (image parts that are not attachments, frames of video
    parts) from ``messages`` in place until at most ``cap`` remain; returns how many went."""
    slots: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    total = 0
    for msg in messages:
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "image" and not part.get("attachment"):
                slots.append((content, part))
                total += 1
            elif part.get("type") == "video":
                slots.append((content, part))
                total += len(part["video"])
    excess = total - cap
    dropped = 0
    for content, part in slots:
        if excess <= 0:
            break
        if part["type"] == "image":
            content.remove(part)
            excess -= 1
            dropped += 1
            continue
        n = len(part["video"])
        k = min(n, excess)
        if k == n:
            content.remove(part)
        else:
            part["video"] = part["video"][k:]
            part["pts_s"] = list(part.get("pts_s") or [])[k:]
        excess -= k
        dropped += k
    return dropped
