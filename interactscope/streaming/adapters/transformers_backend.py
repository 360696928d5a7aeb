"""Streaming adapter ``transformers``: Qwen Omni thinkers and Qwen VL models on CPU or GPU.

The model client is :class:`interactscope.engines.qwen_mm.QwenEngine` (loading, families,
arrays to the processor, padding and audio windows; see there). This module keeps the streaming
parts: the decision-point prompt (:mod:`interactscope.streaming.protocol.prompts`, whose parts carry our
own causal arrays: frames with ``pts <= t``, exactly ``round(t * sr)`` audio samples), the
refusal of native audio for a VL model, and Online Rolling.

Protocols. Offline Probing: ``respond`` (one greedy generation) / ``respond_batch`` (the
requests of one driver chunk, ``adapter.batch_size``, in one left-padded batched ``generate``;
greedy answers equal one-at-a-time ones). Online Rolling: :meth:`TransformersAdapter.open_session` keeps one
conversation per interaction: at the first step the observation 0..q is replayed, then each step
appends only the new frames, the new audio samples, new transcript words and the tool calls
executed since the previous step with their results, and the model's own answer stays in the
conversation as an assistant turn. With ``session_cache: true`` (default) the session keeps the
model's KV cache (:mod:`interactscope.engines.qwen_session`): a step runs only its new tokens
through the model (3-D rope positions from the model's own index, shifted), with the same greedy
answers as re-encoding the whole conversation (``session_cache: false``). Past the frame cap the
oldest frames leave ``session_reprefill_every`` (cap // 2) at a time and the cache is prefilled
again (``session_window: reprefill``, exact), or the oldest frame parts leave the cache itself
(``session_window: evict``: no re-prefill; the other tokens keep their KV and positions, so
answers after the first eviction are not those of re-encoding).

Options (model config: top level, or inside ``limits:`` / ``transformers:``; ``--set adapter.*``
overrides any of them; unknown keys are refused): :class:`interactscope.engines.qwen_options.QwenOptions`
— ``checkpoint``, ``family`` (``omni`` | ``vl``), ``device``, ``dtype``, ``attn_implementation``,
``frames_as`` (``video`` | ``image`` | ``video_pairs``), ``processor_kwargs`` (``{max_pixels, min_pixels}``: the
per-frame pixel budget, also given as the video ``size`` on every call), ``videos_kwargs``,
``trust_remote_code``, ``min_audio_samples`` (1600), ``session_max_frames`` (Online Rolling;
default ``frames.max``), ``session_cache`` (true), ``session_reprefill_every`` (cap // 2),
``session_window`` (``reprefill`` | ``evict``), ``session_history`` (``window``: later turns
leave with their frames | ``all``), ``session_audio_padding`` (``tight``: a new audio
part is zero-padded to its length + 201 samples, not to the feature window; same features),
``audio_padding`` (Offline Probing, ``tight`` | ``window``), ``audio_feature_cache`` (true:
log-mel STFT frames reused across points),
``frame_cache_mb`` (256: processed frames kept across decision points; 0 = off),
``host_threads`` (1: torch threads for the processor and the batch join; null = torch's own),
``generation: {max_new_tokens: 128, temperature: 0}``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from interactscope.engines.base import ImagePart, Message, Part, TextPart, VideoPart
from interactscope.engines.qwen_mm import MODEL_TYPES, QwenEngine, Rendered
from interactscope.engines.qwen_options import QwenOptions
from interactscope.engines.qwen_session import KeptCache
from interactscope.streaming.adapters.base import (
    AdapterError,
    AdapterOutput,
    DecisionRequest,
    LocalEngineAdapter,
    Session,
    adapter_errors,
    output_of,
    pixel_budget_side,
    where_of,
)
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.protocol.prompts import build_prompt, online_prompt
from interactscope.streaming.schema import Interaction, VideoRecord

__all__ = ["MODEL_TYPES", "Rendered", "TransformersAdapter", "TransformersSession"]


def _native_audio_refused(name: str) -> AdapterError:
    return AdapterError(
        f"model {name}: a VL model cannot take native audio; set "
        "settings.audio.mode: asr (transcript) or none"
    )


class TransformersAdapter(LocalEngineAdapter):
    """Qwen Omni thinkers / Qwen VL through ``transformers`` (see the module docstring).

    Args:
        name, config, settings: as :class:`~interactscope.streaming.adapters.base.Adapter`.
        model, processor: an already-built model and processor (tests, notebooks); when given,
            ``checkpoint`` is not loaded.

    Raises:
        AdapterError: (construction) an unknown option; (``prepare``) torch/transformers
            missing, unknown ``model_type``, weights not found offline, ``audio.mode: native``
            for a VL model.
    """

    backend: ClassVar[str] = "transformers"
    needs_media: ClassVar[bool] = True
    supports_online: ClassVar[bool] = True
    options_class = QwenOptions

    def make_engine(self, *, model: Any | None = None, processor: Any | None = None) -> Any:
        return QwenEngine(self.options, self.name, model=model, processor=processor)

    @property
    def frames_as(self) -> str:
        """``video`` or ``image``: how the stream frames reach the model (the engine's)."""
        return self.engine.frames_as

    @property
    def family(self) -> str | None:
        return self.engine.family

    @family.setter
    def family(self, value: str | None) -> None:
        self.engine.family = value

    @property
    def processor(self) -> Any:
        return self.engine.processor

    def prepare(self, bench: Benchmark) -> None:
        if self.family == "vl" and self.settings.audio.mode == "native":  # before loading
            raise _native_audio_refused(self.name)
        self.load()
        if self.family == "vl" and self.settings.audio.mode == "native":
            raise _native_audio_refused(self.name)

    def describe(self) -> dict[str, Any]:
        return {
            **self.engine.describe(),
            "audio": "native waveform" if self.family == "omni" else "ASR transcript in text",
            **self.memory_info(),
            "session": self.session_options(),
        }

    def session_options(self) -> dict[str, Any]:
        """The Online Rolling options in force (recorded in ``run.json`` by ``describe``)."""
        o = self.options
        cap = o.session_max_frames or self.settings.frames.max
        return {
            "cache": o.session_cache,
            "max_frames": cap,
            "reprefill_every": reprefill_every(o, cap),
            "window": o.session_window,
            "audio_padding": o.session_audio_padding,
            "history": "all" if o.session_window == "evict" else o.session_history,
        }

    def consumer_max_side(self, width: int, height: int) -> int | None:
        """Long side (px) to hold frames of display size ``width`` x ``height`` at: with a
        ``processor_kwargs.max_pixels`` budget the smallest side at which the processor still
        gives the same grid (:func:`~interactscope.streaming.adapters.base.budget_side`: 600 for 720p
        at 200,704 px), capped at ``frames.max_side``; without one, ``frames.max_side``."""
        pk = self.options.processor_options()
        if "max_pixels" not in pk:
            return self.settings.frames.max_side
        hi = int(pk["max_pixels"])
        lo = int(pk.get("min_pixels", min(3136, hi)))
        return pixel_budget_side(width, height, hi, lo, self.settings.frames.max_side)

    def consumer_rule(self) -> str:
        pk = self.options.processor_options()
        if "max_pixels" not in pk:
            return super().consumer_rule()
        budget = int(pk["max_pixels"])
        return f"processor max_pixels={budget} (grid kept), {super().consumer_rule()}"

    def render(self, messages: list[dict[str, Any]]) -> Rendered:
        """The engine's rendering of prompt messages (see ``QwenEngine.render``)."""
        with adapter_errors():
            return self.engine.render(messages)

    def generate(
        self, messages: list[Message], request: DecisionRequest | None = None
    ) -> AdapterOutput:
        """One greedy generation over ``messages``; text, token counts, latency, frame counts.

        Raises:
            AdapterError: loading or rendering failed (naming the request when given).
        """
        with adapter_errors(where_of(request) if request is not None else None):
            res = self.engine.chat(messages)
        return output_of(res)

    def respond(self, request: DecisionRequest) -> AdapterOutput:

        return self.generate(build_prompt(request, frames_as=self.frames_as), request)

    def respond_batch(self, requests: list[DecisionRequest]) -> list[AdapterOutput | Exception]:
        """Independent requests answered by one batched ``generate`` (the engine's
        ``chat_batch``: left padding, greedy answers equal to :meth:`respond`'s); a request whose
        prompt cannot be built or processed gets its :class:`AdapterError` in its slot.
        ``adapter.batch_size`` (the driver's chunk) bounds the batch; 1 answers one at a time."""

        out: list[AdapterOutput | Exception | None] = [None] * len(requests)
        convs, slots = [], []
        for i, r in enumerate(requests):
            try:
                convs.append(build_prompt(r, frames_as=self.frames_as))
                slots.append(i)
            except Exception as exc:  # noqa: BLE001 - recorded on the record, run goes on
                out[i] = exc
        if self.engine.generator is None:
            self.load()
        for i, res in zip(slots, self.engine.chat_batch(convs), strict=True):
            if isinstance(res, Exception):
                err = AdapterError(f"{where_of(requests[i])}: {res}")
                err.__cause__ = res
                out[i] = err
            else:
                out[i] = output_of(res)
        return [o if o is not None else AdapterError("no result") for o in out]

    def open_session(self, interaction: Interaction, video: VideoRecord) -> TransformersSession:
        if self.engine.generator is None:
            self.load()
        return TransformersSession(self, interaction)


class TransformersSession(Session):
    """Online Rolling over one interaction (see the module docstring).

    ``messages`` is the conversation so far (prompt parts with arrays, and the model's own
    answers as assistant turns; a silent answer is kept as the silence token). The stream frames
    held in the conversation are capped at ``session_max_frames`` (config; default
    ``frames.max``): past it the oldest frames leave the conversation, ``session_reprefill_every``
    (K, default cap // 2) at a time, so it holds cap - K + 1 to cap frames (K = 1: exactly the
    cap; their text labels stay; ``extra["session_frames_dropped"]`` counts them). With
    ``session_history: window`` (default) the later turns whose frames have all left go too
    (:func:`drop_frameless_turns`: their audio, text and answers; ``extra["session_turns_dropped"]``),
    so a re-prefill is bounded by the cap; ``all`` keeps every turn (and with ``evict``, every
    turn is kept).

    With ``session_cache: true`` (default) the KV cache is kept across steps
    (:class:`interactscope.engines.qwen_session.KeptCache`): a step runs only its new tokens
    through the model, and the conversation is prefilled again only when frames leave it (at
    most once every K new frames). With ``false`` the whole conversation is re-encoded at each
    step. Both give the same greedy answers for the same options."""

    def __init__(self, adapter: TransformersAdapter, interaction: Interaction):
        self.adapter = adapter
        self.interaction = interaction
        self.messages: list[Message] = []
        self.previous: Any | None = None
        self.last_t: float | None = None
        self.steps = 0
        o = adapter.options
        cap = o.session_max_frames
        self.max_frames = int(cap) if cap else adapter.settings.frames.max
        self.evict = o.session_window == "evict"  # whole parts leave, one step past the cap
        self.drop_chunk = 1 if self.evict else reprefill_every(o, self.max_frames)
        self.frames_dropped = 0
        self.turns_dropped = 0
        # evict keeps the cache through drops by matching the held text less whole visual parts:
        # removing turns too would prefill at every step, so evict keeps every turn
        self.history_window = o.session_history == "window" and not self.evict
        self.results_shown = 0
        self.kept: Any = None
        if o.session_cache:
            self.kept = KeptCache(adapter.engine, o.session_audio_padding, evict=self.evict)

    def _answer(self, request: DecisionRequest) -> AdapterOutput:
        if self.kept is None:
            return self.adapter.generate(self.messages, request)
        with adapter_errors(where_of(request)):
            res = self.kept.chat(self.messages)
        return output_of(
            res, session_prefills=self.kept.prefills, session_evictions=self.kept.evictions
        )

    def step(self, request: DecisionRequest) -> AdapterOutput:

        if request.interaction.id != self.interaction.id:
            raise AdapterError(
                f"session of {self.interaction.id} stepped with {request.interaction.id}"
            )
        if self.last_t is not None and request.t < self.last_t:
            raise AdapterError(
                f"interaction {self.interaction.id}: Online Rolling steps must go forward in "
                f"time (t={request.t:g} after {self.last_t:g})"
            )
        turn = online_prompt(
            request,
            self.previous,
            frames_as=self.adapter.frames_as,
            first=self.steps == 0,
            results_shown=self.results_shown,
        )
        self.messages.extend(turn)
        dropped = _drop_oldest_frames(
            self.messages, self.max_frames, self.drop_chunk, whole=self.evict
        )
        self.frames_dropped += dropped
        if dropped and self.history_window:
            self.turns_dropped += drop_frameless_turns(self.messages)
        out = self._answer(request)
        answer = out.text.strip() or request.settings.silence_token
        self.messages.append(Message(role="assistant", content=[TextPart(text=answer)]))
        self.previous = request.observation
        self.last_t = request.t
        self.results_shown = len(request.tool_results or [])
        self.steps += 1
        out.extra["session_step"] = self.steps
        out.extra["session_messages"] = len(self.messages)
        if self.frames_dropped:
            out.extra["session_frames_dropped"] = self.frames_dropped
        if self.turns_dropped:
            out.extra["session_turns_dropped"] = self.turns_dropped
        return out

    def close(self) -> None:
        self.messages.clear()
        self.previous = None
        if self.kept is not None:
            self.kept.close()


def reprefill_every(options: QwenOptions, cap: int) -> int:
    """K, the frames that leave at once past the cap ``cap``: ``session_reprefill_every``
    (default ``cap // 2``, at least 1), at most ``cap``."""
    k = options.session_reprefill_every or max(1, cap // 2)
    return max(1, min(int(k), int(cap)))


def _is_stream_media(p: Part) -> bool:
    return (isinstance(p, ImagePart) and not p.attachment) or isinstance(p, VideoPart)


def _holds_stream_media(msg: Message) -> bool:
    return any(_is_stream_media(p) for p in msg.parts())


def drop_frameless_turns(messages: list[Message]) -> int:
    """``session_history: window``: remove, oldest first, the (user, assistant) turn pairs after
    the first user turn (the instruction, the query and the replay stay) that hold no stream
    frame any more, up to the oldest later turn that still holds one; the newest turn always
    stays. Their audio, text and the model's answers leave with them, so what a re-prefill
    processes is bounded by the frame cap, not by t. Returns the turns removed."""
    first = next((i for i, m in enumerate(messages) if m.role == "user"), None)
    if first is None:
        return 0
    i, n = first + 2, 0
    while (
        i + 2 < len(messages)
        and messages[i].role == "user"
        and messages[i + 1].role == "assistant"
        and not _holds_stream_media(messages[i])
    ):
        del messages[i : i + 2]
        n += 1
    return n


def _index(content: list[Part], part: Part) -> int:
    """Position of ``part`` itself in ``content`` (by identity: parts hold arrays)."""
    return next(i for i, p in enumerate(content) if p is part)


def _drop_oldest_frames(
    messages: list[Message], cap: int, chunk: int = 1, *, whole: bool = False
) -> int:
    """Remove the oldest stream frames (image parts that are not attachments, frames of video
    parts) from ``messages`` in place when more than ``cap`` are held, until at most
    ``cap - chunk + 1`` remain (``1 <= chunk <= cap``); with ``whole`` a video part leaves
    whole (never cut); returns how many went."""
    slots: list[tuple[list[Part], Part]] = []
    total = 0
    for msg in messages:
        if isinstance(msg.content, str):
            continue
        for part in msg.content:
            if _is_stream_media(part):
                slots.append((msg.content, part))
                total += len(part.frames) if isinstance(part, VideoPart) else 1
    excess = total - cap
    if excess > 0:
        excess += max(1, min(chunk, cap)) - 1
    dropped = 0
    for content, part in slots:
        if excess <= 0 or (whole and part is slots[-1][1]):  # the newest part stays
            break
        if isinstance(part, ImagePart):
            del content[_index(content, part)]
            excess -= 1
            dropped += 1
            continue
        n = len(part.frames)
        k = n if whole else min(n, excess)
        at = _index(content, part)
        if k == n:
            del content[at]
        else:
            content[at] = part.model_copy(
                update={"frames": part.frames[k:], "pts_s": list(part.pts_s)[k:]}
            )
        excess -= k
        dropped += k
    return dropped
