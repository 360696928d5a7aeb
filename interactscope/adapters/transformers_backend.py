"""Streaming adapter ``transformers``: Qwen Omni thinkers and Qwen VL models on CPU or GPU.

The model client is :class:`interactscope.engines.qwen_mm.QwenEngine` (loading, families,
arrays to the processor, padding and audio windows; see there). This module keeps the streaming
parts: the decision-point prompt (:mod:`interactscope.protocol.prompts`, whose parts carry our
own causal arrays: frames with ``pts <= t``, exactly ``round(t * sr)`` audio samples), the
refusal of native audio for a VL model, and Online Rolling.

Protocols. Offline Probing: ``respond`` (one greedy generation) / ``respond_batch`` (the
requests of one driver chunk, ``adapter.batch_size``, in one left-padded batched ``generate``;
greedy answers equal one-at-a-time ones). Online Rolling: :meth:`TransformersAdapter.open_session` keeps one
conversation per interaction: at the first step the observation 0..q is replayed, then each step
appends only the new frames, the new audio samples and new transcript words, and the model's own
answer stays in the conversation as an assistant turn (the whole conversation is re-encoded at
each step; no KV-cache reuse across steps).

Options (model config: top level, or inside ``limits:`` / ``transformers:``; ``--set adapter.*``
overrides any of them; unknown keys are refused): :class:`interactscope.engines.qwen_options.QwenOptions`
— ``checkpoint``, ``family`` (``omni`` | ``vl``), ``device``, ``dtype``, ``attn_implementation``,
``frames_as`` (``video`` | ``image``), ``processor_kwargs`` (``{max_pixels, min_pixels}``: the
per-frame pixel budget, also given as the video ``size`` on every call), ``videos_kwargs``,
``trust_remote_code``, ``min_audio_samples`` (1600), ``session_max_frames`` (Online Rolling;
default ``frames.max``), ``frame_cache_mb`` (256: processed frames kept across decision points;
0 = off), ``generation: {max_new_tokens: 128, temperature: 0}``.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from interactscope.adapters.base import (
    AdapterError,
    AdapterOutput,
    DecisionRequest,
    LocalEngineAdapter,
    Session,
    adapter_errors,
    options_of,
    output_of,
    where_of,
)
from interactscope.engines.qwen_mm import MODEL_TYPES, QwenEngine, Rendered
from interactscope.engines.qwen_options import QwenOptions
from interactscope.schema import Interaction, VideoRecord
from interactscope.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["MODEL_TYPES", "Rendered", "TransformersAdapter", "TransformersSession"]


def _native_audio_refused(name: str) -> AdapterError:
    return AdapterError(
        f"model {name}: a VL model cannot take native audio; set "
        "settings.audio.mode: asr (transcript) or none"
    )


class TransformersAdapter(LocalEngineAdapter):
    """Qwen Omni thinkers / Qwen VL through ``transformers`` (see the module docstring).

    Args:
        name, config, settings: as :class:`~interactscope.adapters.base.Adapter`.
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
        options = options_of(QwenOptions, name, config, settings)
        self._use(options, QwenEngine(options, name, model=model, processor=processor))
        self.frames_as = self.engine.frames_as

    @property
    def family(self) -> str | None:
        return self.engine.family

    @family.setter
    def family(self, value: str | None) -> None:
        self.engine.family = value

    @property
    def processor(self) -> Any:
        return self.engine.processor

    def prepare(self, bench: Any) -> None:
        if self.family == "vl" and self.settings.audio.mode == "native":  # before loading
            raise _native_audio_refused(self.name)
        self.load()
        if self.family == "vl" and self.settings.audio.mode == "native":
            raise _native_audio_refused(self.name)

    def describe(self) -> dict[str, Any]:
        return {
            **self.engine.describe(),
            "audio": "native waveform" if self.family == "omni" else "ASR transcript in text",
        }

    def render(self, messages: list[dict[str, Any]]) -> Rendered:
        """The engine's rendering of prompt messages (see ``QwenEngine.render``)."""
        with adapter_errors():
            return self.engine.render(messages)

    def generate(
        self, messages: list[dict[str, Any]], request: DecisionRequest | None = None
    ) -> AdapterOutput:
        """One greedy generation over ``messages``; text, token counts, latency, frame counts.

        Raises:
            AdapterError: loading or rendering failed (naming the request when given).
        """
        with adapter_errors(where_of(request) if request is not None else None):
            res = self.engine.chat(messages)
        return output_of(res)

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        from interactscope.protocol.prompts import build_messages

        return self.generate(build_messages(request, frames_as=self.frames_as), request)

    def respond_batch(self, requests: list[DecisionRequest]) -> list[AdapterOutput | Exception]:
        """Independent requests answered by one batched ``generate`` (the engine's
        ``chat_batch``: left padding, greedy answers equal to :meth:`respond`'s); a request whose
        prompt cannot be built or processed gets its :class:`AdapterError` in its slot.
        ``adapter.batch_size`` (the driver's chunk) bounds the batch; 1 answers one at a time."""
        from interactscope.protocol.prompts import build_messages

        out: list[AdapterOutput | Exception | None] = [None] * len(requests)
        convs, slots = [], []
        for i, r in enumerate(requests):
            try:
                convs.append(build_messages(r, frames_as=self.frames_as))
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
        cap = adapter.options.session_max_frames
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
        out = self.adapter.generate(self.messages, request)
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
