"""Backend ``vllm``: the offline ``vllm.LLM`` engine (GPU only, extra ``[vllm]``).

Offline Probing is embarrassingly parallel: :meth:`VLLMAdapter.respond_batch` sends every request
of a batch in one ``llm.generate`` call, with prefix caching on (the shared system prompt and the
frames common to neighbouring decision points are reused).

Prompt construction. :func:`interactscope.streaming.protocol.prompts.build_messages` gives chat messages
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
``{image: 4, video: 1, audio: 2}``, with ``video_pairs`` ``{image: 4, video: ceil(frames.max /
2), audio: 2}``; the 4 images are room for query attachments)
    Per-prompt multimodal item limits given to the engine and checked by :meth:`preflight`.
``frames_as`` (``image`` | ``video`` | ``video_pairs``, default ``image``; the shipped vLLM
configs say ``image``: with prompt ``v2`` the prefix cache reuses every earlier frame,
docs/protocol.md#prompts; ``video_pairs``: 2-frame video items, each after its label, the
prompt builder's parts as they are)
``mm_processor_kwargs`` (alias ``processor_kwargs``, the transformers backend's key)
    Passed to the engine (and per prompt), e.g. ``{max_pixels: 602112}``.
``videos_kwargs``
    ``frames_as: video`` only: added to the per-prompt processor kwargs (``fps`` defaults to the
    frames' rate: 1 Hz, or the spacing of the ``uniform`` cap).
``video_metadata`` (``auto`` | true | false; ``auto``: true for Qwen2.5-VL and Qwen3-VL, by the
started engine's ``model_type``, else by the checkpoint name)
    Send each video as ``(frames, metadata)`` (``fps`` 1, ``frames_indices`` = the frames' stream
    seconds, ``do_sample_frames`` false): vLLM's Qwen2.5-VL and Qwen3-VL require it (Qwen3-VL
    derives the frame timestamps from it).
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

The model client is :class:`interactscope.engines.vllm_engine.VLLMEngine` (engine creation,
chat template, ``multi_modal_data``, sampling); this module keeps the streaming parts: the
decision-point prompt, stream frames as one video, preflight and the run-wide frame size.
Options: :class:`interactscope.engines.qwen_options.QwenOptions` (unknown keys are refused).

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

from interactscope.engines.base import (
    AudioPart,
    ImagePart,
    Message,
    Part,
    TextPart,
    VideoPart,
    as_messages,
)
from interactscope.engines.qwen_options import QwenOptions
from interactscope.engines.vllm_engine import Rendered, VLLMEngine
from interactscope.media import Frame, probe
from interactscope.streaming.adapters.base import (
    AdapterError,
    AdapterOutput,
    ConfiguredAdapter,
    DecisionRequest,
    FrameConsumer,
    adapter_errors,
    budget_side,
    smart_resize,
    where_of,
)
from interactscope.streaming.protocol.observation import AttachmentView, Observation, Observer
from interactscope.streaming.protocol.prompts import build_prompt, layout_of
from interactscope.streaming.protocol.requests import interaction_grid, request_at
from interactscope.streaming.schema import ResponseRecord
from interactscope.streaming.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["PreflightReport", "VLLMAdapter", "estimate_image_tokens", "smart_resize"]


def estimate_image_tokens(
    height: int, width: int, patch_px: int = 28, min_pixels: int = 3136, max_pixels: int = 12845056
) -> int:
    """Placeholder tokens of one image for a Qwen-style vision encoder (one per patch_px² area)."""
    h, w = smart_resize(height, width, patch_px, min_pixels, max_pixels)
    return (h // patch_px) * (w // patch_px)


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
    from PIL import Image  # optional dependency ([openai])

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
        return where_of(self.request)

    def rendered(self) -> Rendered:
        return Rendered(self.prompt, self.images, self.videos, self.video_pts, self.audios)


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


def _downscaled_size(w: int, h: int, max_side: int | None) -> tuple[int, int]:
    """(w, h) after :func:`_downscale` (the same rounding)."""
    if not max_side or max(w, h) <= max_side:
        return w, h
    scale = max_side / max(w, h)
    return max(1, round(w * scale)), max(1, round(h * scale))


class VLLMAdapter(FrameConsumer, ConfiguredAdapter):
    """Offline Probing with the ``vllm.LLM`` engine; see the module docstring for the options.

    The engine is started by :meth:`prepare` (the driver counts it as ``load_s``), or on first
    use when a caller skips ``prepare``.

    Raises:
        AdapterError: (construction) vLLM missing, no ``checkpoint``, an unknown option.
    """

    backend: ClassVar[str] = "vllm"
    needs_media: ClassVar[bool] = True
    supports_online: ClassVar[bool] = False
    options_class = QwenOptions
    options: QwenOptions

    def __init__(self, name: str, config: dict[str, Any], settings: Settings):
        super().__init__(name, config, settings)
        with adapter_errors():
            self.chat_engine = VLLMEngine(
                self.options, name, frames_as="image", max_frames=settings.frames.max
            )
        o = self.options
        self.checkpoint = self.chat_engine.checkpoint
        self.frames_as = self.chat_engine.frames_as
        self.max_model_len = o.max_model_len
        self.limit_mm_per_prompt = self.chat_engine.limit_mm_per_prompt
        self.max_new_tokens = self.chat_engine.max_new_tokens
        est = o.token_estimate
        self.max_pixels = int(
            est.max_pixels or self.chat_engine.mm_processor_kwargs.get("max_pixels", 12845056)
        )
        self._probe_cache: dict[Any, Any] = {}
        self.max_side: int | None = settings.frames.max_side
        self._preflight: PreflightReport | None = None

    def engine(self) -> Any:
        """The ``vllm.LLM`` instance (created once)."""
        with adapter_errors():
            return self.chat_engine.llm()

    def renderer(self) -> Any:
        """The object whose ``apply_chat_template`` renders prompts (processor or tokenizer)."""
        with adapter_errors():
            return self.chat_engine.renderer()

    def describe(self) -> dict[str, Any]:
        """Recorded into ``run.json``."""
        return {
            **self.chat_engine.describe(),
            "frames_as": self.frames_as,
            "frames_max_side": self.max_side,
            "preflight": self._preflight.as_dict() if self._preflight else None,
            **self.memory_info(),
        }

    def consumer_max_side(self, width: int, height: int) -> int | None:
        """Long side (px) to hold frames of display size ``width`` x ``height`` at: the
        smallest side at which vLLM's processor (pixel budget ``max_pixels``, after this
        adapter's own downscale to the run-wide ``max_side``, preflight's included) gives the
        same grid (:func:`~interactscope.streaming.adapters.base.budget_side`), else ``max_side``."""
        est = self.options.token_estimate
        seen = _downscaled_size(width, height, self.max_side)
        side = budget_side(width, height, self.max_pixels, est.min_pixels, seen=seen)
        return side if side is not None else self.max_side

    def consumer_rule(self) -> str:
        return f"vLLM max_pixels={self.max_pixels} (grid kept), max_side={self.max_side}"

    # -- request construction ------------------------------------------------------------------

    def _messages(self, request: DecisionRequest) -> list[Message]:
        """The request's chat messages. ``frames_as: video`` with the prefix layout (v2+): the
        prompt builder's own video part, its label after the media as the layout wants it; with
        the classic layout (v1) image parts that :meth:`_as_video` joins as before (recorded v1
        runs keep their prompts)."""

        if self.frames_as == "video" and not self.joins_video_itself():
            return build_prompt(request, frames_as="video")
        if self.frames_as == "video_pairs":  # the builder's 2-frame items, any layout
            return build_prompt(request, frames_as="video_pairs")
        return build_prompt(request)

    def joins_video_itself(self) -> bool:
        """True when :meth:`_as_video` turns image parts into the video (``frames_as: video``
        with the classic layout, v1); False when the prompt builder makes the video part."""

        return self.frames_as == "video" and layout_of(self.settings.prompt_version) == "classic"

    def _audio_window(self) -> int | None:
        """Most samples one audio item may carry (see ``VLLMEngine.audio_window``)."""
        return self.chat_engine.audio_window(self.settings.audio.sample_rate)

    def _as_video(self, content: list[Part]) -> list[Part]:
        """``frames_as: video`` over image parts (the classic layout, or a caller's own
        messages): the stream frames become one video part where the first frame was, the frame
        labels between them replaced by one line listing the frame times, before the video."""
        stream = [i for i, p in enumerate(content) if isinstance(p, ImagePart) and not p.attachment]
        if self.frames_as != "video" or not stream:
            return content
        first, last = stream[0], stream[-1]
        frames = [content[i] for i in stream]
        pts = [float(f.pts_s or 0.0) for f in frames]
        times = ", ".join(f"{t:g} s" for t in pts)
        video = VideoPart(frames=[f.image for f in frames], pts_s=pts)
        label = TextPart(text=f"(video of {len(frames)} frames at {times})")
        return content[:first] + [label, video] + content[last + 1 :]

    def _fit_part(self, p: Part, built: _Built, window: int | None) -> Part:
        """Downscale images to the run-wide ``max_side``; keep an audio part's newest window."""
        if isinstance(p, ImagePart):
            if not p.attachment:
                built.n_frames += 1
            return p.model_copy(update={"image": _downscale(p.image, self.max_side)})
        if isinstance(p, VideoPart):
            built.n_frames += len(p.frames)
            return p.model_copy(update={"frames": [_downscale(f, self.max_side) for f in p.frames]})
        if isinstance(p, AudioPart):
            wave, sr = p.audio, p.sample_rate
            if window and wave.shape[0] > window:
                built.audio_dropped_s += (wave.shape[0] - window) / sr
                wave = wave[-window:]
            return AudioPart(audio=wave, sample_rate=sr)
        return p

    def build(self, request: DecisionRequest) -> _Built:
        """Render one request: the prompt text and its multimodal arrays in prompt order.

        Stream frames become image items (``frames_as: image``) or one video item
        (``frames_as: video``, see :meth:`_as_video`); image attachments are always image items.
        An audio part with no samples (t = 0) is left out; one longer than the audio window keeps
        its most recent window (``extra["audio_dropped_s"]``).

        Raises:
            AdapterError: an unsupported part, naming the interaction and ``t``.
        """
        built = _Built(request=request, prompt="")
        with adapter_errors(where_of(request)):
            self.chat_engine.renderer()
            window = self._audio_window()
            messages = []
            for msg in as_messages(self._messages(request)):  # typed (dict prompts read once)
                if not isinstance(msg.content, str):
                    parts = [self._fit_part(p, built, window) for p in self._as_video(msg.parts())]
                    msg = msg.model_copy(update={"content": parts})
                messages.append(msg)
            r = self.chat_engine.render(messages)
        built.prompt, built.images, built.videos = r.prompt, r.images, r.videos
        built.video_pts, built.audios = r.video_pts, r.audios
        return built

    def engine_input(self, built: _Built) -> dict[str, Any]:
        """The ``llm.generate`` prompt dict of one built request (``VLLMEngine.engine_input``)."""
        return self.chat_engine.engine_input(built.rendered())

    # -- preflight -----------------------------------------------------------------------------

    def prepare(self, bench: Any) -> None:
        """Run :meth:`preflight` before collection on the largest request of every interaction
        (its last decision point), built as ``preflight.on_prepare`` says:

        - ``synthetic`` (default): from the probed frame size and the settings, without decoding
          (``frames.max`` frames, round(t·16000) audio samples, ~2.5 words/s of transcript in
          ``asr`` mode, ``history.n`` 40-word responses, image attachments counted as 448 px);
        - ``decode``: the real causal observation (exact; decodes every video once more);
        - ``off``: no preflight.

        The engine itself is started here first (whatever the preflight mode), so its start-up
        is counted in ``timings.load_s`` and never in the first batch's ``model_s``.

        Raises:
            AdapterError: the engine cannot start, or from :meth:`preflight`, naming the
                interaction and ``t``.
        """
        self.engine()
        mode = self.options.preflight.on_prepare
        if mode == "off" or not bench.interactions:
            return
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
                    observer = self._observer(bench, video, observer)
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
                request_at(bench, it, t, self.settings, observation=obs, history=history)
            )
        if observer is not None:
            observer.close()
        report = self.preflight(requests)
        log.info("vllm preflight (%s): %s", mode, report.as_dict())

    def _observer(self, bench: Any, video: Any, observer: Any) -> Any:
        """An Observer of ``video`` (the previous one reused when it is the same file)."""

        if observer is not None and observer.path == bench.media_path(video):
            return observer
        if observer is not None:
            observer.close()
        return Observer(bench.media_path(video), self.settings, bench_root=bench.root)

    def _synthetic_observation(self, bench: Any, it: Any, t: float) -> Any:
        """An Observation with the shapes the real one would have at ``t`` (zero-memory arrays)."""

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
        est = self.options.token_estimate
        return estimate_image_tokens(h, w, est.patch_px, est.min_pixels, self.max_pixels)

    def estimate_tokens(self, built: _Built, max_side: int | None) -> int:
        """Estimated prompt + generation tokens of one request at frame long side ``max_side``."""
        est = self.options.token_estimate
        if built.text_tokens is None:
            with adapter_errors(built.where):
                built.text_tokens = self.chat_engine.count_tokens(built.prompt)
        n = built.text_tokens + self.max_new_tokens
        per = [self._image_tokens(im, max_side) for im in built.images]
        n += sum(per) + est.per_item_overhead * len(per)
        for video in built.videos:
            n_sent = len(video) + len(video) % 2
            size = max(self._image_tokens(im, max_side) for im in video)
            n += (n_sent // 2) * size + est.per_item_overhead
        for wave, sr in built.audios:
            n += math.ceil(len(wave) / sr * est.audio_tokens_per_s) + est.per_item_overhead
        return n

    def _item_problems(self, built: _Built) -> list[str]:
        """One line per multimodal item kind over ``limit_mm_per_prompt``."""
        problems = []
        for kind, n in self._mm_counts(built).items():
            limit = self.limit_mm_per_prompt.get(kind, 0)
            if n > limit:
                problems.append(
                    f"{built.where}: {n} {kind} item(s) > limit_mm_per_prompt[{kind!r}]={limit}"
                )
        return problems

    def _worst(self, builts: list[_Built], max_side: int | None) -> tuple[int, _Built | None]:
        """The largest estimated length among ``builts`` at ``max_side``, and its request."""
        best, which = 0, None
        for b in builts:
            n = self.estimate_tokens(b, max_side)
            if n > best:
                best, which = n, b
        return best, which

    def _fit_side(self, builts: list[_Built], tokens: int, which: _Built) -> int:
        """The largest frame long side (steps of 15 %, not below ``preflight.min_side``) at which
        every request fits ``max_model_len``.

        Raises:
            AdapterError: none fits, or reduction is off; names the longest request.
        """
        pre = self.options.preflight
        longest = max(
            (max(im.shape[:2]) for b in builts for im in b.images + sum(b.videos, [])),
            default=0,
        )
        side = min(longest, self.max_side or longest)
        can_reduce = pre.reduce_pixels and longest > pre.min_side
        while can_reduce and side > pre.min_side:
            side = max(pre.min_side, int(side * 0.85))
            if self._worst(builts, side)[0] <= self.max_model_len:
                return side
        hint = (
            f"even at frames.max_side={pre.min_side} px"
            if can_reduce
            else "(pixel reduction not allowed or no frames)"
        )
        raise AdapterError(
            f"vllm preflight failed: {which.where}: about {tokens} tokens (prompt + "
            f"{self.max_new_tokens} new) exceed max_model_len={self.max_model_len} {hint}; "
            "lower frames.max, frames.max_side or audio length, or raise max_model_len"
        )

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
        problems = [
            p + " (lower frames.max or raise the limit in the model config)"
            for b in builts
            for p in self._item_problems(b)
        ]
        if problems:
            raise AdapterError("vllm preflight failed:\n  " + "\n  ".join(problems[:20]))
        tokens, which = self._worst(builts, self.max_side)
        reduced = False
        if tokens > self.max_model_len and which is not None:
            fitted = self._fit_side(builts, tokens, which)
            log.warning(
                "vllm preflight: frames downscaled to long side %d px to fit max_model_len %d",
                fitted,
                self.max_model_len,
            )
            self.max_side, reduced = fitted, True
            tokens = self._worst(builts, fitted)[0]
        self._preflight = PreflightReport(
            max_side=self.max_side,
            reduced=reduced,
            worst_tokens=tokens,
            checked=len(builts),
            max_model_len=self.max_model_len,
        )
        return self._preflight

    # -- generation ----------------------------------------------------------------------------

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        out = self.respond_batch([request])[0]
        if isinstance(out, Exception):
            raise out
        return out

    def _prepared(self, r: DecisionRequest) -> tuple[_Built, dict[str, Any]]:
        """The built request and its engine input.

        Raises:
            AdapterError: the prompt cannot be built or exceeds the item limits.
        """
        try:
            b = self.build(r)
        except AdapterError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise AdapterError(
                f"{where_of(r)}: building the prompt failed: {type(exc).__name__}: {exc}"
            ) from exc
        problems = self._item_problems(b)
        if problems:
            raise AdapterError(problems[0])
        return b, self.engine_input(b)

    def respond_batch(self, requests: list[DecisionRequest]) -> list[AdapterOutput | Exception]:
        """All requests in one ``llm.generate`` call; results in request order.

        A request that cannot be built, exceeds the item limits, or fails in the engine gets an
        :class:`AdapterError` in its slot; the others are answered (after a failed batch, one
        request at a time). ``latency_s`` is the batch's wall time divided by the batch size
        (``extra.batch_wall_s`` and ``extra.batch_size`` hold the raw values).
        """
        results: list[AdapterOutput | Exception | None] = [None] * len(requests)
        pending: list[tuple[int, _Built, dict[str, Any]]] = []
        for i, r in enumerate(requests):
            try:
                pending.append((i, *self._prepared(r)))
            except AdapterError as exc:
                results[i] = exc
        if pending:
            t0 = time.perf_counter()
            try:
                outs = self.chat_engine.generate([p[2] for p in pending])
            except Exception as exc:  # noqa: BLE001 - isolate the failing request(s)
                log.warning("vllm batch of %d failed (%s); retrying one by one", len(pending), exc)
                for i, b, inp in pending:
                    results[i] = self._generate_one(b, inp, exc if len(pending) == 1 else None)
            else:
                wall = time.perf_counter() - t0
                for (i, b, _), o in zip(pending, outs, strict=True):
                    results[i] = self._to_output(o, b, wall / len(pending), wall, len(pending))
        return [r if r is not None else AdapterError("no result") for r in results]

    def _generate_one(
        self, built: _Built, inp: dict[str, Any], known: BaseException | None
    ) -> AdapterOutput | AdapterError:
        """One request alone (``known``: its batch-of-one failure, not retried)."""
        if known is not None:
            return self._engine_error(built, known)
        t1 = time.perf_counter()
        try:
            (o,) = self.chat_engine.generate([inp])
        except Exception as exc:  # noqa: BLE001
            return self._engine_error(built, exc)
        dt = time.perf_counter() - t1
        return self._to_output(o, built, dt, dt, 1)

    def _engine_error(self, built: _Built, exc: BaseException) -> AdapterError:
        err = AdapterError(f"{built.where}: vllm engine error: {type(exc).__name__}: {exc}")
        err.__cause__ = exc
        return err

    def _to_output(
        self, o: Any, built: _Built, latency: float, wall: float, batch: int
    ) -> AdapterOutput:
        res = self.chat_engine.to_result(o, latency)
        extra: dict[str, Any] = {
            "finish_reason": res.raw.get("finish_reason"),
            "batch_wall_s": wall,
            "batch_size": batch,
            "frames_max_side": self.max_side,
        }
        if res.raw.get("cached_tokens") is not None:  # prefix-cache hits (run.json timings)
            extra["cached_tokens"] = res.raw["cached_tokens"]
        if built.videos:
            extra["frames_true"] = built.n_frames
            extra["frames_sent"] = sum(len(v) + len(v) % 2 for v in built.videos)
        if built.audio_dropped_s:
            extra["audio_dropped_s"] = round(built.audio_dropped_s, 3)
        return AdapterOutput(
            text=res.text,
            latency_s=latency,
            prompt_tokens=res.prompt_tokens,
            completion_tokens=res.completion_tokens,
            extra=extra,
        )

    def close(self) -> None:
        """Drop the engine (GPU memory is freed when the object is collected)."""
        self.chat_engine.close()
