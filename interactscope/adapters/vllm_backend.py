"""Backend ``vllm``: the offline ``vllm.LLM`` engine (GPU only, extra ``[vllm]``; SPEC §2).

Offline Probing is embarrassingly parallel: :meth:`VLLMAdapter.respond_batch` sends every request
of a batch in one ``llm.generate`` call, with prefix caching on (the shared system prompt and the
frames common to neighbouring decision points are reused).

Prompt construction. :func:`interactscope.protocol.prompts.build_messages` gives chat messages
whose parts carry our own causal arrays. Each frame part becomes an ``{"type": "image"}``
placeholder and each audio part an ``{"type": "audio"}`` placeholder for the model's chat template
(the processor's ``apply_chat_template``, e.g. ``<|vision_bos|><|IMAGE|><|vision_eos|>`` and
``<|audio_bos|><|AUDIO|><|audio_eos|>`` for Qwen2.5-Omni); the arrays go, in prompt order, into
``multi_modal_data``: ``{"image": [(H, W, 3) uint8, ...], "audio": [(float32 waveform, sr), ...]}``
(the format of vLLM's ``examples/offline_inference/qwen2_5_omni/only_thinker.py``). With
``frames_as: video`` the stream frames become one ``{"video": [(T, H, W, 3)]}`` item instead,
padded to an even count by repeating the newest frame (Qwen's temporal patch is 2 frames; the true
and sent counts are recorded in ``AdapterOutput.extra``); image attachments stay images. File
paths are never passed, so the engine cannot read media past ``t``.

Config keys (``configs/models/NAME.yaml``; top level, or inside ``limits:`` / ``vllm:``; each may
also be given in ``settings.adapter``, which wins):

``checkpoint`` (required)
    Hub id or local folder (weights are found through ``HF_HOME`` / ``HF_HUB_OFFLINE`` as usual).
``max_model_len`` (default 32768)
    Context length in tokens: prompt + ``generation.max_new_tokens``.
``limit_mm_per_prompt`` (default ``{image: frames.max + 4, audio: 2}``; with ``frames_as: video``
``{image: 4, video: 1, audio: 2}``; the 4 images are room for query attachments)
    Per-prompt multimodal item limits given to the engine and checked by :meth:`preflight`.
``frames_as`` (``image`` | ``video``, default ``image``)
``mm_processor_kwargs`` (alias ``processor_kwargs``, the transformers backend's key)
    Passed to the engine (and per prompt), e.g. ``{max_pixels: 602112}``.
``videos_kwargs``
    ``frames_as: video`` only: added to the per-prompt processor kwargs (``fps`` defaults to the
    frames' rate: 1 Hz, or the spacing of the ``uniform`` cap).
``video_metadata`` (``auto`` | true | false; ``auto``: true for Qwen3-VL checkpoints)
    Send each video as ``(frames, metadata)`` (``fps`` 1, ``frames_indices`` = the frames' stream
    seconds, ``do_sample_frames`` false): vLLM's Qwen3-VL requires it and derives the frame
    timestamps from it.
``audio_window_s``
    Longest audio item in seconds; a longer causal waveform keeps its most recent window
    (``extra["audio_dropped_s"]``). Default: the processor's feature-extractor window
    (``n_samples``) when the template comes from the processor, else unlimited.
``template`` (``auto`` | ``processor`` | ``tokenizer``, default ``auto``)
    Where the chat template comes from: ``transformers.AutoProcessor`` of the checkpoint, or the
    engine's tokenizer (``llm.get_tokenizer()``); ``auto`` tries the processor first.
``generation.max_new_tokens`` (default 256), ``generation.temperature`` (default 0),
``generation.top_p``, ``generation.seed``, ``generation.stop``
``engine_args``
    Extra keyword arguments of ``vllm.LLM`` (``gpu_memory_utilization``, ``tensor_parallel_size``,
    ``max_num_seqs``, ``dtype``, ``trust_remote_code``, ...). ``enable_prefix_caching`` is on.
``token_estimate``
    Preflight's multimodal token model (Qwen defaults): ``patch_px`` 28 (a token per 28×28 pixels
    after the processor's resize), ``min_pixels`` 3136, ``max_pixels`` 12845056 (or
    ``mm_processor_kwargs.max_pixels``), ``audio_tokens_per_s`` 25, ``per_item_overhead`` 0
    (each placeholder token is also counted with the text, so the estimate errs high by about one
    token per item).
``preflight.reduce_pixels`` (default true), ``preflight.min_side`` (default 224 px)
    Whether preflight may lower the frames' long side (a run-wide ``max_side``, recorded in
    :meth:`describe` and on every output) to fit the context, and how far.
``preflight.on_prepare`` (``synthetic`` | ``decode`` | ``off``, default ``synthetic``)
    How :meth:`VLLMAdapter.prepare` builds the largest request of each interaction before the
    run (see there).

Errors: a missing ``vllm`` package raises :class:`AdapterError` at construction. An engine
exception fails only the requests it concerns: the batch is retried one request at a time and each
failing request gets an :class:`AdapterError` naming the interaction and ``t``.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from interactscope.adapters.base import Adapter, AdapterError, AdapterOutput, DecisionRequest
from interactscope.schema import ResponseRecord
from interactscope.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["PreflightReport", "VLLMAdapter", "estimate_image_tokens", "smart_resize"]

_MISSING = object()


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise AdapterError(
            "backend 'vllm' needs the vllm package and a CUDA GPU: "
            "pip install 'interactscope[vllm]' "
            "(on a CPU-only machine use the 'transformers' or 'cascade' backends instead)"
        ) from exc
    return vllm


def smart_resize(
    height: int, width: int, factor: int = 28, min_pixels: int = 3136, max_pixels: int = 12845056
) -> tuple[int, int]:
    """Qwen-VL's resize rule: both sides multiples of ``factor``, area within
    [``min_pixels``, ``max_pixels``], aspect ratio kept as far as possible. Returns (h, w) px."""
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def estimate_image_tokens(
    height: int, width: int, patch_px: int = 28, min_pixels: int = 3136, max_pixels: int = 12845056
) -> int:
    """Placeholder tokens of one image for a Qwen-style vision encoder (one per patch_px² area)."""
    h, w = smart_resize(height, width, patch_px, min_pixels, max_pixels)
    return (h // patch_px) * (w // patch_px)


def _fps_of(pts: list[float]) -> float:
    """Frame rate (Hz) of frames at times ``pts``: 1 for the 1 fps stream, the inverse of the mean
    spacing when the ``uniform`` cap spread them out."""
    if len(pts) < 2:
        return 1.0
    span = pts[-1] - pts[0]
    return 1.0 if span <= 0 else max(1e-3, (len(pts) - 1) / span)


def _video_metadata(pts: list[float], n_sent: int) -> dict[str, Any]:
    """vLLM video metadata for frames decoded at 1 fps and shown at stream times ``pts`` (s):
    frame indices on a 1 Hz grid, so the model's timestamps (index / fps) are the stream times;
    the padding frame repeats the newest index. Needed by Qwen3-VL (``video_needs_metadata``)."""
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


def _shapes_only(built: _Built) -> _Built:
    """The same request with its arrays replaced by zero-memory views of the same shapes
    (preflight keeps only what its estimate needs)."""
    built.images = [np.broadcast_to(np.uint8(0), im.shape) for im in built.images]
    built.videos = [[np.broadcast_to(np.uint8(0), f.shape) for f in v] for v in built.videos]
    built.audios = [(np.broadcast_to(np.float32(0), w.shape), sr) for w, sr in built.audios]
    return built


def _downscale(image: np.ndarray, max_side: int | None) -> np.ndarray:
    """Resize so the long side is <= ``max_side`` (aspect kept, bicubic); unchanged otherwise."""
    if not max_side:
        return image
    h, w = image.shape[:2]
    long_side = max(h, w)
    if long_side <= max_side:
        return image
    from PIL import Image

    scale = max_side / long_side
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(Image.fromarray(image).resize(size, Image.BICUBIC))


@dataclass
class _Built:
    """One engine prompt and what preflight needs to know about it."""

    request: DecisionRequest
    prompt: str
    images: list[np.ndarray] = field(default_factory=list)
    videos: list[list[np.ndarray]] = field(default_factory=list)
    video_pts: list[list[float]] = field(default_factory=list)
    audios: list[tuple[np.ndarray, int]] = field(default_factory=list)
    n_frames: int = 0
    audio_dropped_s: float = 0.0
    text_tokens: int | None = None

    @property
    def where(self) -> str:
        return f"interaction {self.request.interaction.id} t={self.request.t:g}s"


@dataclass
class PreflightReport:
    """Outcome of :meth:`VLLMAdapter.preflight`.

    ``max_side``: the run-wide frame long-side limit in px now in force (``None``: no limit);
    ``reduced``: preflight lowered it; ``worst_tokens``: the largest estimated prompt+generation
    length among the checked requests; ``checked``: requests checked."""

    max_side: int | None
    reduced: bool
    worst_tokens: int
    checked: int
    max_model_len: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class VLLMAdapter(Adapter):
    """Offline Probing with the ``vllm.LLM`` engine; see the module docstring for the config.

    The engine is created on first use (:meth:`preflight` or :meth:`respond_batch`).
    """

    backend: ClassVar[str] = "vllm"
    needs_media: ClassVar[bool] = True
    supports_online: ClassVar[bool] = False

    def __init__(self, name: str, config: dict[str, Any], settings: Settings):
        super().__init__(name, config, settings)
        self._vllm = _import_vllm()
        checkpoint = self._opt("checkpoint")
        if not checkpoint:
            raise AdapterError(f"model {name!r}: backend 'vllm' needs 'checkpoint' in its config")
        self.checkpoint = str(checkpoint)
        self.max_model_len = int(self._opt("max_model_len", 32768))
        self.frames_as = str(self._opt("frames_as", "image"))
        if self.frames_as not in ("image", "video"):
            raise AdapterError(f"model {name!r}: frames_as must be 'image' or 'video'")
        # room for up to 4 image attachments besides the stream frames
        default_limits = (
            {"image": int(settings.frames.max) + 4, "audio": 2}
            if self.frames_as == "image"
            else {"image": 4, "video": 1, "audio": 2}
        )
        self.limit_mm_per_prompt = {
            str(k): int(v) for k, v in (self._opt("limit_mm_per_prompt") or default_limits).items()
        }
        self.mm_processor_kwargs = dict(
            self._opt("mm_processor_kwargs") or self._opt("processor_kwargs") or {}
        )
        self.videos_kwargs = dict(self._opt("videos_kwargs") or {})
        meta = self._opt("video_metadata", "auto")
        if meta == "auto":
            meta = any(k in self.checkpoint.lower() for k in ("qwen3-vl", "qwen3_vl"))
        self.video_metadata = bool(meta)
        self.template = str(self._opt("template", "auto"))
        gen = dict(self.config.get("generation") or {})
        gen.update(self.settings.adapter.get("generation") or {})
        self.max_new_tokens = int(gen.get("max_new_tokens", 256))
        self.temperature = float(gen.get("temperature", 0.0))
        self.top_p = gen.get("top_p")
        self.seed = gen.get("seed")
        self.stop = gen.get("stop")
        self.engine_args = dict(self._opt("engine_args") or {})
        est = dict(self._opt("token_estimate") or {})
        self.patch_px = int(est.get("patch_px", 28))
        self.min_pixels = int(est.get("min_pixels", 3136))
        self.max_pixels = int(
            est.get("max_pixels", self.mm_processor_kwargs.get("max_pixels", 12845056))
        )
        self.audio_tokens_per_s = float(est.get("audio_tokens_per_s", 25.0))
        self.per_item_overhead = int(est.get("per_item_overhead", 0))
        pre = dict(self._opt("preflight") or {})
        self.reduce_pixels = bool(pre.get("reduce_pixels", True))
        self.min_side = int(pre.get("min_side", 224))
        self.preflight_mode = str(pre.get("on_prepare", "synthetic"))
        self._probe_cache: dict[Any, Any] = {}
        self.max_side: int | None = settings.frames.max_side
        self._preflight: PreflightReport | None = None
        self._llm: Any = None
        self._renderer: Any = None
        self._renderer_source: str | None = None

    # -- configuration -------------------------------------------------------------------------

    def _opt(self, key: str, default: Any = None) -> Any:
        if key in self.settings.adapter:
            return self.settings.adapter[key]
        for group in (self.config, self.config.get("limits") or {}, self.config.get("vllm") or {}):
            if isinstance(group, dict) and key in group:
                return group[key]
        return default

    def describe(self) -> dict[str, Any]:
        """Recorded into ``run.json``."""
        return {
            "checkpoint": self.checkpoint,
            "max_model_len": self.max_model_len,
            "limit_mm_per_prompt": self.limit_mm_per_prompt,
            "frames_as": self.frames_as,
            "video_metadata": self.video_metadata,
            "mm_processor_kwargs": self.mm_processor_kwargs,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "enable_prefix_caching": True,
            "engine_args": self.engine_args,
            "chat_template_source": self._renderer_source,
            "frames_max_side": self.max_side,
            "preflight": self._preflight.as_dict() if self._preflight else None,
            "vllm_version": getattr(self._vllm, "__version__", None),
        }

    # -- engine --------------------------------------------------------------------------------

    def engine(self) -> Any:
        """The ``vllm.LLM`` instance (created once)."""
        if self._llm is None:
            kwargs = dict(self.engine_args)
            kwargs.update(
                model=self.checkpoint,
                max_model_len=self.max_model_len,
                limit_mm_per_prompt=self.limit_mm_per_prompt,
                enable_prefix_caching=True,
            )
            if self.mm_processor_kwargs:
                kwargs.setdefault("mm_processor_kwargs", self.mm_processor_kwargs)
            if self.seed is not None:
                kwargs.setdefault("seed", int(self.seed))
            log.info(
                "vllm backend: loading %s (max_model_len %d)", self.checkpoint, self.max_model_len
            )
            try:
                self._llm = self._vllm.LLM(**kwargs)
            except Exception as exc:
                raise AdapterError(
                    f"model {self.name!r}: vllm could not load {self.checkpoint}: {exc}"
                ) from exc
        return self._llm

    def sampling_params(self) -> Any:
        kwargs: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_new_tokens,
        }
        if self.top_p is not None:
            kwargs["top_p"] = float(self.top_p)
        if self.seed is not None:
            kwargs["seed"] = int(self.seed)
        if self.stop:
            kwargs["stop"] = list(self.stop) if not isinstance(self.stop, str) else [self.stop]
        return self._vllm.SamplingParams(**kwargs)

    def renderer(self) -> Any:
        """The object whose ``apply_chat_template`` renders prompts (processor or tokenizer)."""
        if self._renderer is not None:
            return self._renderer
        if self.template in ("auto", "processor"):
            try:
                from transformers import AutoProcessor

                proc = AutoProcessor.from_pretrained(
                    self.checkpoint,
                    trust_remote_code=bool(self.engine_args.get("trust_remote_code", False)),
                )
                if getattr(proc, "chat_template", None):
                    self._renderer, self._renderer_source = proc, "processor"
                    return proc
                if self.template == "processor":
                    raise AdapterError(f"{self.checkpoint}: the processor has no chat template")
            except AdapterError:
                raise
            except Exception as exc:
                if self.template == "processor":
                    raise AdapterError(
                        f"model {self.name!r}: cannot load the processor of "
                        f"{self.checkpoint}: {exc}"
                    ) from exc
                log.info("vllm backend: no processor chat template (%s); using the tokenizer", exc)
        self._renderer = self.engine().get_tokenizer()
        self._renderer_source = "tokenizer"
        return self._renderer

    # -- request construction ------------------------------------------------------------------

    def _messages(self, request: DecisionRequest) -> list[dict[str, Any]]:
        from interactscope.protocol.prompts import build_messages

        return build_messages(request)

    def _audio_window(self) -> int | None:
        """Most samples one audio item may carry: ``audio_window_s`` × 16 kHz from the config,
        else the processor's feature-extractor window (``n_samples``), else unlimited."""
        if self._opt("audio_window_s"):
            return int(float(self._opt("audio_window_s")) * self.settings.audio.sample_rate)
        fe = getattr(self._renderer, "feature_extractor", None) if self._renderer else None
        n = getattr(fe, "n_samples", None)
        return int(n) if n else None

    def build(self, request: DecisionRequest) -> _Built:
        """Render one request: the prompt text and its multimodal arrays in prompt order.

        Stream frames become image items (``frames_as: image``) or one video item placed where
        the first frame was, the frame labels between them replaced by one line listing the
        frame times (``frames_as: video``); image attachments are always image items. An audio
        part with no samples (t = 0) is left out; one longer than the audio window keeps its
        most recent window (``extra["audio_dropped_s"]``).
        """
        built = _Built(request=request, prompt="")
        renderer = self.renderer()
        window = self._audio_window()
        template_msgs: list[dict[str, Any]] = []
        for msg in self._messages(request):
            content = msg.get("content", "")
            role = msg.get("role", "user")
            if isinstance(content, str):
                template_msgs.append({"role": role, "content": content})
                continue
            content = [p if isinstance(p, dict) else {"type": "text", "text": p} for p in content]
            stream = [
                i
                for i, p in enumerate(content)
                if p.get("type") == "image" and not p.get("attachment")
            ]
            if self.frames_as == "video" and stream:
                first, last = stream[0], stream[-1]
                frames = [content[i] for i in stream]
                times = ", ".join(f"{float(f.get('pts_s', 0.0)):g} s" for f in frames)
                content = (
                    content[:first]
                    + [
                        {"type": "text", "text": f"(video of {len(frames)} frames at {times})"},
                        {"type": "video", "frames": frames},
                    ]
                    + content[last + 1 :]
                )
            parts: list[dict[str, Any]] = []
            for p in content:
                kind = p.get("type")
                if kind == "text":
                    parts.append({"type": "text", "text": str(p.get("text", ""))})
                elif kind == "image":
                    built.images.append(_downscale(np.asarray(p["image"]), self.max_side))
                    if not p.get("attachment"):
                        built.n_frames += 1
                    parts.append({"type": "image"})
                elif kind == "video":
                    imgs = [_downscale(np.asarray(f["image"]), self.max_side) for f in p["frames"]]
                    built.videos.append(imgs)
                    built.video_pts.append([float(f.get("pts_s", 0.0)) for f in p["frames"]])
                    built.n_frames += len(imgs)
                    parts.append({"type": "video"})
                elif kind == "audio":
                    wave = np.asarray(p["audio"], dtype=np.float32).reshape(-1)
                    sr = int(p.get("sampling_rate") or self.settings.audio.sample_rate)
                    if window and wave.shape[0] > window:
                        built.audio_dropped_s += (wave.shape[0] - window) / sr
                        wave = wave[-window:]
                    if wave.shape[0] == 0:
                        continue  # nothing heard yet (t = 0): no audio item
                    built.audios.append((wave, sr))
                    parts.append({"type": "audio"})
                else:
                    raise AdapterError(
                        f"interaction {request.interaction.id} t={request.t:g}s: prompt part "
                        f"{kind!r} is not supported by the vllm backend"
                    )
            template_msgs.append({"role": role, "content": parts})
        prompt = renderer.apply_chat_template(
            template_msgs, tokenize=False, add_generation_prompt=True
        )
        if isinstance(prompt, list):  # processors may return a batch
            prompt = prompt[0]
        built.prompt = str(prompt)
        return built

    @staticmethod
    def _video(frames: list[np.ndarray]) -> np.ndarray:
        """(T, H, W, 3) with T even (the newest frame repeated when odd: Qwen's temporal patch is
        2 frames); frames cropped to the smallest size among them."""
        frames = list(frames)
        if len(frames) % 2:
            frames.append(frames[-1])
        h = min(f.shape[0] for f in frames)
        w = min(f.shape[1] for f in frames)
        return np.stack([f[:h, :w] for f in frames])

    def engine_input(self, built: _Built) -> dict[str, Any]:
        """The ``llm.generate`` prompt dict: ``prompt``, ``multi_modal_data`` and
        ``mm_processor_kwargs`` (the configured ones; in video mode also ``videos_kwargs`` and
        the frames' ``fps``, or, with ``video_metadata``, per-video metadata instead)."""
        mm: dict[str, Any] = {}
        if built.images:
            mm["image"] = list(built.images)
        if built.videos:
            arrays = [self._video(v) for v in built.videos]
            if self.video_metadata:
                mm["video"] = [
                    (arr, _video_metadata(pts, arr.shape[0]))
                    for arr, pts in zip(arrays, built.video_pts, strict=True)
                ]
            else:
                mm["video"] = arrays
        if built.audios:
            mm["audio"] = list(built.audios)
        out: dict[str, Any] = {"prompt": built.prompt}
        if mm:
            out["multi_modal_data"] = mm
        kwargs = dict(self.mm_processor_kwargs)
        if built.videos:
            kwargs.update(self.videos_kwargs)
            kwargs.setdefault("do_sample_frames", False)  # our frames are already the sample
            if not self.video_metadata:
                kwargs.setdefault("fps", _fps_of(built.video_pts[0]))
        if kwargs:
            out["mm_processor_kwargs"] = kwargs
        return out

    # -- preflight -----------------------------------------------------------------------------

    def prepare(self, bench: Any) -> None:
        """Run :meth:`preflight` before collection on the largest request of every interaction
        (its last decision point), built as ``preflight.on_prepare`` says:

        - ``synthetic`` (default): from the probed frame size and the settings, without decoding
          (``frames.max`` frames, round(t·16000) audio samples, ~2.5 words/s of transcript in
          ``asr`` mode, ``history.n`` 40-word responses, image attachments counted as 448 px);
        - ``decode``: the real causal observation (exact; decodes every video once more);
        - ``off``: no preflight.

        Raises:
            AdapterError: from :meth:`preflight`, naming the interaction and ``t``.
        """
        mode = str(self.preflight_mode)
        if mode == "off" or not bench.interactions:
            return
        if mode not in ("synthetic", "decode"):
            raise AdapterError("preflight.on_prepare must be synthetic, decode or off")
        from interactscope.protocol.driver import interaction_grid

        requests = []
        observer: Any = None
        for it in sorted(bench.interactions, key=lambda i: i.video_id):
            video = bench.video_of(it)
            if video.id in bench.media_errors:
                continue
            t = interaction_grid(bench, it, self.settings)[-1]
            obs = None
            if self.needs_media and self.settings.scene != "none":
                if mode == "decode":
                    from interactscope.protocol.observation import Observer

                    if observer is None or observer.path != bench.media_path(video):
                        if observer is not None:
                            observer.close()
                        observer = Observer(
                            bench.media_path(video), self.settings, bench_root=bench.root
                        )
                    obs = observer.observe(t, it)
                else:
                    obs = self._synthetic_observation(bench, it, t)
            history = [
                ResponseRecord(
                    interaction_id=it.id, t=t, text=" ".join(["word"] * 40), silent=False
                )
                for _ in range(self.settings.history.n)
            ]
            requests.append(
                DecisionRequest(
                    interaction=it,
                    video=video,
                    bench_root=bench.root,
                    t=t,
                    settings=self.settings,
                    tools=bench.offered_tools(it),
                    observation=obs,
                    history=history,
                )
            )
        if observer is not None:
            observer.close()
        report = self.preflight(requests)
        log.info("vllm preflight (%s): %s", mode, report.as_dict())

    def _synthetic_observation(self, bench: Any, it: Any, t: float) -> Any:
        """An Observation with the shapes the real one would have at ``t`` (zero-memory arrays)."""
        from interactscope.media import Frame, probe
        from interactscope.protocol.observation import AttachmentView, Observation

        s = self.settings
        video = bench.video_of(it)
        path = bench.media_path(video)
        if path not in self._probe_cache:
            self._probe_cache[path] = probe(path, require_video=False)
        info = self._probe_cache[path]
        w, h = int(info.width or 0), int(info.height or 0)
        frames = []
        n_avail = int(math.floor(t + 1e-9)) + 1
        if w and h:
            if s.frames.max_side and max(w, h) > s.frames.max_side:
                k = s.frames.max_side / max(w, h)
                w, h = max(2, round(w * k / 2) * 2), max(2, round(h * k / 2) * 2)
            img = np.broadcast_to(np.uint8(0), (h, w, 3))
            frames = [
                Frame(second=k, pts_s=float(k), image=img)
                for k in range(min(s.frames.max, n_avail))
            ]
        sr = int(s.audio.sample_rate)
        audio = (
            np.broadcast_to(np.float32(0), (round(t * sr),)) if s.audio.mode == "native" else None
        )
        transcript = " ".join(["word"] * int(t * 2.5)) if s.audio.mode == "asr" else None
        square = np.broadcast_to(np.uint8(0), (448, 448, 3))
        attachments = [
            AttachmentView(kind="image", path=a.path, image=square)
            for a in it.query.attachments
            if a.kind == "image"
        ]
        return Observation(
            t=t,
            frames=frames,
            n_frames_available=n_avail if frames else 0,
            audio=audio,
            sample_rate=sr,
            transcript=transcript,
            query_visible=True,
            query_text=it.query.text,
            attachments=attachments,
            audio_mode=s.audio.mode,
            scene=s.scene,
            has_audio=bool(video.has_audio),
        )

    # -- token estimate -----------------------------------------------------------------------------

    def _text_tokens(self, prompt: str) -> int:
        tok = self.renderer()
        tok = getattr(tok, "tokenizer", tok)
        try:
            return len(tok.encode(prompt, add_special_tokens=False))
        except TypeError:
            return len(tok.encode(prompt))
        except Exception:  # noqa: BLE001 - a rough estimate is still useful
            return len(prompt) // 3 + 1

    def _mm_counts(self, built: _Built) -> dict[str, int]:
        counts: dict[str, int] = {}
        if built.images:
            counts["image"] = len(built.images)
        if built.videos:
            counts["video"] = len(built.videos)
        if built.audios:
            counts["audio"] = len(built.audios)
        return counts

    def _image_tokens(self, image: np.ndarray, max_side: int | None) -> int:
        h, w = image.shape[:2]
        if max_side and max(h, w) > max_side:
            s = max_side / max(h, w)
            h, w = max(1, round(h * s)), max(1, round(w * s))
        return estimate_image_tokens(h, w, self.patch_px, self.min_pixels, self.max_pixels)

    def estimate_tokens(self, built: _Built, max_side: int | None) -> int:
        """Estimated prompt + generation tokens of one request at frame long side ``max_side``."""
        if built.text_tokens is None:
            built.text_tokens = self._text_tokens(built.prompt)
        n = built.text_tokens + self.max_new_tokens
        per = [self._image_tokens(im, max_side) for im in built.images]
        n += sum(per) + self.per_item_overhead * len(per)
        for video in built.videos:
            n_sent = len(video) + len(video) % 2
            size = max(self._image_tokens(im, max_side) for im in video)
            n += (n_sent // 2) * size + self.per_item_overhead
        for wave, sr in built.audios:
            n += math.ceil(len(wave) / sr * self.audio_tokens_per_s) + self.per_item_overhead
        return n

    def preflight(self, requests: list[DecisionRequest]) -> PreflightReport:
        """Check requests against the engine's limits before the run starts.

        Pass at least the largest request of each interaction (its last decision point carries
        the most audio and frames). Checks each request's multimodal item counts against
        ``limit_mm_per_prompt`` and its estimated length against ``max_model_len``. When some
        request is too long and ``preflight.reduce_pixels`` is on, lowers the run-wide frame long
        side (never below ``preflight.min_side``) to the largest value that fits every request;
        the value is applied to every later request and recorded in :meth:`describe`.

        Raises:
            AdapterError: naming the interaction and ``t`` of the offending requests, when an item
                limit is exceeded or the context cannot be met.
        """
        builts = [_shapes_only(self.build(r)) for r in requests]
        problems = []
        for b in builts:
            for kind, n in self._mm_counts(b).items():
                limit = self.limit_mm_per_prompt.get(kind, 0)
                if n > limit:
                    problems.append(
                        f"{b.where}: {n} {kind} item(s) > limit_mm_per_prompt[{kind!r}]={limit} "
                        f"(lower frames.max or raise the limit in the model config)"
                    )
        if problems:
            raise AdapterError("vllm preflight failed:\n  " + "\n  ".join(problems[:20]))

        def worst(max_side: int | None) -> tuple[int, _Built | None]:
            best, which = 0, None
            for b in builts:
                n = self.estimate_tokens(b, max_side)
                if n > best:
                    best, which = n, b
            return best, which

        tokens, which = worst(self.max_side)
        reduced = False
        if tokens > self.max_model_len and which is not None:
            longest = max(
                (max(im.shape[:2]) for b in builts for im in b.images + sum(b.videos, [])),
                default=0,
            )
            start = min(longest, self.max_side or longest)
            side = start
            fitted = None
            can_reduce = self.reduce_pixels and longest > self.min_side
            if can_reduce:
                while side > self.min_side:
                    side = max(self.min_side, int(side * 0.85))
                    if worst(side)[0] <= self.max_model_len:
                        fitted = side
                        break
            if fitted is None:
                hint = (
                    f"even at frames.max_side={self.min_side} px"
                    if can_reduce
                    else "(pixel reduction not allowed or no frames)"
                )
                raise AdapterError(
                    f"vllm preflight failed: {which.where}: about {tokens} tokens (prompt + "
                    f"{self.max_new_tokens} new) exceed max_model_len={self.max_model_len} {hint}; "
                    "lower frames.max, frames.max_side or audio length, or raise max_model_len"
                )
            log.warning(
                "vllm preflight: frames downscaled to long side %d px to fit max_model_len %d",
                fitted,
                self.max_model_len,
            )
            self.max_side, reduced = fitted, True
            tokens = worst(fitted)[0]
        self._preflight = PreflightReport(
            max_side=self.max_side,
            reduced=reduced,
            worst_tokens=tokens,
            checked=len(builts),
            max_model_len=self.max_model_len,
        )
        return self._preflight

    # -- generation ----------------------------------------------------------------------------

    def _generate(self, inputs: list[dict[str, Any]]) -> list[Any]:
        outs = self.engine().generate(
            inputs, sampling_params=self.sampling_params(), use_tqdm=False
        )
        outs = list(outs)
        if len(outs) != len(inputs):
            raise AdapterError(f"vllm returned {len(outs)} outputs for {len(inputs)} prompts")
        return outs

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        out = self.respond_batch([request])[0]
        if isinstance(out, Exception):
            raise out
        return out

    def respond_batch(self, requests: list[DecisionRequest]) -> list[AdapterOutput | Exception]:
        """All requests in one ``llm.generate`` call; results in request order.

        A request that cannot be built, exceeds the item limits, or fails in the engine gets an
        :class:`AdapterError` in its slot; the others are answered. ``latency_s`` is the batch's
        wall time divided by the batch size (``extra.batch_wall_s`` and ``extra.batch_size`` hold
        the raw values).
        """
        results: list[AdapterOutput | Exception | None] = [None] * len(requests)
        pending: list[tuple[int, _Built, dict[str, Any]]] = []
        for i, r in enumerate(requests):
            try:
                b = self.build(r)
                for kind, n in self._mm_counts(b).items():
                    limit = self.limit_mm_per_prompt.get(kind, 0)
                    if n > limit:
                        raise AdapterError(
                            f"{b.where}: {n} {kind} item(s) > limit_mm_per_prompt[{kind!r}]={limit}"
                        )
                pending.append((i, b, self.engine_input(b)))
            except AdapterError as exc:
                results[i] = exc
            except Exception as exc:  # noqa: BLE001
                results[i] = AdapterError(
                    f"interaction {r.interaction.id} t={r.t:g}s: building the prompt failed: "
                    f"{type(exc).__name__}: {exc}"
                )
        if pending:
            t0 = time.perf_counter()
            try:
                outs: list[Any] | None = self._generate([p[2] for p in pending])
            except Exception as exc:  # noqa: BLE001 - isolate the failing request(s)
                log.warning("vllm batch of %d failed (%s); retrying one by one", len(pending), exc)
                outs = None
                batch_exc = exc
            wall = time.perf_counter() - t0
            if outs is not None:
                for (i, b, _), o in zip(pending, outs, strict=True):
                    results[i] = self._to_output(o, b, wall / len(pending), wall, len(pending))
            elif len(pending) == 1:
                i, b, _ = pending[0]
                results[i] = self._engine_error(b, batch_exc)
            else:
                for i, b, inp in pending:
                    t1 = time.perf_counter()
                    try:
                        o = self._generate([inp])[0]
                    except Exception as exc:  # noqa: BLE001
                        results[i] = self._engine_error(b, exc)
                        continue
                    dt = time.perf_counter() - t1
                    results[i] = self._to_output(o, b, dt, dt, 1)
        return [r if r is not None else AdapterError("no result") for r in results]

    def _engine_error(self, built: _Built, exc: BaseException) -> AdapterError:
        err = AdapterError(f"{built.where}: vllm engine error: {type(exc).__name__}: {exc}")
        err.__cause__ = exc
        return err

    def _to_output(
        self, o: Any, built: _Built, latency: float, wall: float, batch: int
    ) -> AdapterOutput:
        comp = o.outputs[0]
        prompt_ids = getattr(o, "prompt_token_ids", None)
        comp_ids = getattr(comp, "token_ids", None)
        extra: dict[str, Any] = {
            "finish_reason": getattr(comp, "finish_reason", None),
            "batch_wall_s": wall,
            "batch_size": batch,
            "frames_max_side": self.max_side,
        }
        if built.videos:
            extra["frames_true"] = built.n_frames
            extra["frames_sent"] = sum(len(v) + len(v) % 2 for v in built.videos)
        if built.audio_dropped_s:
            extra["audio_dropped_s"] = round(built.audio_dropped_s, 3)
        return AdapterOutput(
            text=str(comp.text or ""),
            latency_s=latency,
            prompt_tokens=len(prompt_ids) if prompt_ids is not None else None,
            completion_tokens=len(comp_ids) if comp_ids is not None else None,
            extra=extra,
        )

    def close(self) -> None:
        """Drop the engine (GPU memory is freed when the object is collected)."""
        self._llm = None
        self._renderer = None
