"""Streaming adapter ``openai``: the decision protocol over an OpenAI-compatible endpoint.

The model client is :class:`interactscope.engines.openai_compat.OpenAIEngine` (wire format,
retries, keys from the environment, concurrency); this module keeps what is specific to
streaming: the prompt of each decision point
(:func:`interactscope.streaming.protocol.prompts.build_prompt`, typed messages), the T1 catalogue as native ``tools``
(``native_tools``), the **audio check** and Online Rolling sessions.

Options (model config keys, or ``--set adapter.KEY=VALUE``): see
:class:`~interactscope.engines.openai_compat.OpenAIOptions` — ``model``, ``base_url_env`` /
``base_url``, ``api_key_env``, ``api_key_optional``, ``generation.*`` (``max_new_tokens`` 256,
``temperature`` 0, ``top_p``, ``seed``, ``stop``), ``max_concurrency`` (4), ``max_retries`` (4),
``timeout_s`` (120), ``native_tools`` (true), ``check_audio`` (true, see below),
``check_models`` (true: :meth:`OpenAIAdapter.prepare` asks ``GET /models`` and stops before the
run when the server is unreachable or does not serve ``model``), ``jpeg_quality`` (90),
``image_detail``, ``extra_body``, ``online_max_images`` (Online Rolling: at most this many frames
stay in the conversation), ``max_tokens_field``, and ``frames_consumer`` (this adapter's: the
pixel budget frames are held and sent at, default 200,704 = the Qwen configs'; ``source``: as
the observation gives them; docs/protocol.md, frame budget per backend).

Audio check: the first request carrying at least :data:`AUDIO_CHECK_MIN_S` seconds of audio is
first sent twice with one output token, with and without its audio parts. More prompt tokens
with the audio: consumed. Equal (or fewer): the server dropped it, and the run stops with
:class:`FatalAdapterError` saying the fix (``--set audio.mode=asr`` or
``--set adapter.check_audio=false``). No token counts: inconclusive, one warning, the run goes on.
Which request was checked (interaction id, ``t``, seconds of audio) and the verdict go into
``run.json`` (``adapter.audio_check``).

Errors: a failed request raises :class:`AdapterError` naming the interaction and ``t``;
``respond_batch`` returns it in that request's slot, so it becomes an infrastructure error on the
record, never silence (an answer with ``content: null`` and no tool calls included).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from interactscope.engines.base import (
    AudioPart,
    ChatResult,
    ImagePart,
    Message,
    TextPart,
    as_messages,
)
from interactscope.engines.openai_compat import (
    DEFAULT_FRAME_PIXELS,
    OpenAIEngine,
    OpenAIOptions,
    encode_audio_wav,
    encode_image_jpeg,
    in_flight,
    to_openai_messages,
    to_openai_tools,
)
from interactscope.streaming.adapters.base import (
    AdapterOutput,
    ConfiguredAdapter,
    DecisionRequest,
    FrameConsumer,
    Session,
    adapter_errors,
    area_budget_side,
    where_of,
)
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.protocol.prompts import build_prompt, online_prompt
from interactscope.streaming.protocol.types import FatalAdapterError
from interactscope.streaming.schema import Interaction, VideoRecord
from interactscope.streaming.settings import Settings

log = logging.getLogger(__name__)

__all__ = [
    "AUDIO_CHECK_MIN_S",
    "DEFAULT_FRAME_PIXELS",
    "OpenAIAdapter",
    "encode_audio_wav",
    "encode_image_jpeg",
    "to_openai_messages",
    "to_openai_tools",
]


AUDIO_CHECK_MIN_S = 1.0
"""Seconds of audio a request must carry before the audio check runs on it (less, e.g. at
``t = q = 0``, cannot show a difference in prompt tokens)."""


def _has_audio(messages: Sequence[Message]) -> bool:
    return any(isinstance(p, AudioPart) for m in messages for p in m.parts())


def audio_seconds(messages: list[Any]) -> float:
    """Seconds of audio in ``messages`` (all audio parts, each ``samples / sample_rate``)."""
    return sum(
        len(p.audio) / p.sample_rate
        for m in as_messages(messages)
        for p in m.parts()
        if isinstance(p, AudioPart)
    )


def to_output(result: ChatResult) -> AdapterOutput:
    """An engine answer as an adapter answer: native calls win (and make it non-silent); without
    them the driver classifies the text."""
    extra: dict[str, Any] = {"finish_reason": result.raw.get("finish_reason")}
    if result.raw.get("cached_tokens") is not None:  # server prefix-cache hits (run.json timings)
        extra["cached_tokens"] = result.raw["cached_tokens"]
    if result.tool_call_errors:
        extra["native_parse_error"] = "; ".join(result.tool_call_errors)
    calls = list(result.tool_calls) or None
    return AdapterOutput(
        text=result.text,
        silent=False if calls else None,
        tool_calls=calls,
        latency_s=result.latency_s,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        extra=extra,
    )


LOW_DETAIL_SIDE = 512
"""Long side (px) an OpenAI server reduces an ``image_detail: low`` image to (512 x 512 box)."""


class OpenAIAdapter(FrameConsumer, ConfiguredAdapter):
    """Offline Probing and Online Rolling over an OpenAI-compatible endpoint.

    Thread-safe: :meth:`respond_batch` runs up to ``max_concurrency`` requests at once.

    Raises:
        AdapterError: (construction) an unknown or invalid option, naming it and the valid ones.
    """

    backend: ClassVar[str] = "openai"
    needs_media: ClassVar[bool] = True
    supports_online: ClassVar[bool] = True
    options_class = OpenAIOptions
    options: OpenAIOptions

    def __init__(self, name: str, config: dict[str, Any], settings: Settings):
        super().__init__(name, config, settings)
        self.engine = OpenAIEngine(self.options, name)
        self.model = self.engine.model
        self._audio_lock = threading.Lock()
        self._audio_check: dict[str, Any] | None = None  # None: not checked yet

    @property
    def check_audio(self) -> bool:
        return self.options.check_audio

    def prepare(self, bench: Benchmark) -> None:
        """Before collection: fail at once (not on every record) when the ``openai`` package or
        the API key is missing, or (``check_models``) the server is unreachable or does not
        serve the model.

        Raises:
            AdapterError: one line naming the missing package or variable, or the URL.
        """
        with adapter_errors():
            self.engine.client()
        if self.options.check_models:
            with adapter_errors(f"model {self.name!r}"):
                self.engine.check_served_model()

    def describe(self) -> dict[str, Any]:
        """Recorded into ``run.json``: no key, only the names of the variables."""
        check = self._audio_check
        if check is None and self.options.check_audio:
            check = {"result": f"not run: no request carried {AUDIO_CHECK_MIN_S:g} s of audio"}
        return {
            **self.engine.describe(),
            "native_tools": self.options.native_tools,
            "check_audio": self.options.check_audio,
            "audio_check": check,
            **self.memory_info(),
        }

    def consumer_max_side(self, width: int, height: int) -> int | None:
        """Long side (px) to hold frames of display size ``width`` x ``height`` at (and so to
        send them at: the server gets the frames the observation carries): the
        ``frames_consumer`` pixel budget (default :data:`DEFAULT_FRAME_PIXELS`;
        :func:`~interactscope.streaming.adapters.base.area_budget_side`: the Qwen grid kept,
        600 for 720p), at most :data:`LOW_DETAIL_SIDE` with ``image_detail: low`` (the server
        reduces it to a 512 x 512 box), capped at ``frames.max_side``. ``frames_consumer:
        source``: only the ``image_detail: low`` cap and ``frames.max_side`` (the old rule)."""
        side = self.settings.frames.max_side
        budget = self.options.frames_consumer
        if budget != "source":
            side = area_budget_side(width, height, int(budget), side) or side
        if self.options.image_detail == "low":
            return LOW_DETAIL_SIDE if side is None else min(side, LOW_DETAIL_SIDE)
        return side

    def consumer_rule(self) -> str:
        rule = super().consumer_rule()
        if self.options.frames_consumer != "source":
            rule = f"frames_consumer max_pixels={self.options.frames_consumer}, {rule}"
        if self.options.image_detail == "low":
            return f"image_detail=low ({LOW_DETAIL_SIDE} px), {rule}"
        return rule

    def _build(self, request: DecisionRequest) -> list[Message]:

        return build_prompt(request)

    def _tools(self, request: DecisionRequest) -> list[Any] | None:
        return list(request.tools) if (self.options.native_tools and request.tools) else None

    def _audio_verdict(self, check: dict[str, Any]) -> str:
        """``consumed``, ``inconclusive`` (a warning is logged) or ``dropped`` (with ``error``)."""
        n_with, n_without = check["prompt_tokens_with_audio"], check["prompt_tokens_without_audio"]
        where = f"interaction {check['interaction_id']} t={check['t']:g}s"
        if n_with is None or n_without is None:
            log.warning(
                "model %r: audio check inconclusive (%s): the server at %s reports no "
                "usage.prompt_tokens; going on without knowing whether it hears the audio",
                self.name,
                where,
                self.engine.url(),
            )
            return "inconclusive"
        if n_with > n_without:
            log.info("model %r: audio consumed (%s vs %s tokens)", self.name, n_with, n_without)
            return "consumed"
        check["error"] = (
            f"model {self.name!r}: the server at {self.engine.url()} silently dropped the audio ({where}, "
            f"{check['audio_s']:g} s: prompt_tokens {n_with} with it vs {n_without} without); "
            "use a server that consumes input_audio, or --set audio.mode=asr, or run anyway "
            "with --set adapter.check_audio=false"
        )
        return "dropped"

    def verify_audio(self, built: list[Message], request: DecisionRequest) -> None:
        """The audio check (module docstring) on ``built``, once per adapter: skipped while the
        requests carry less than :data:`AUDIO_CHECK_MIN_S` seconds of audio.

        Raises:
            AdapterError: a probe request failed (this record only; the next request retries).
            FatalAdapterError: the server drops the audio (the run stops).
        """
        with self._audio_lock:
            check = self._audio_check
            if check is None:
                seconds = audio_seconds(built)
                if seconds < AUDIO_CHECK_MIN_S:
                    return
                with adapter_errors(where_of(request)):
                    n_with = self.engine.prompt_tokens(built)
                    n_without = self.engine.prompt_tokens(built, drop_audio=True)
                check = {
                    "interaction_id": request.interaction.id,
                    "t": request.t,
                    "audio_s": round(seconds, 3),
                    "prompt_tokens_with_audio": n_with,
                    "prompt_tokens_without_audio": n_without,
                }
                check["result"] = self._audio_verdict(check)
                self._audio_check = check
            if check["result"] == "dropped":
                raise FatalAdapterError(check["error"])

    def ask(self, messages: list[Any], request: DecisionRequest) -> AdapterOutput:
        """One engine call for ``request`` with prompt ``messages`` (audio checked first).

        Raises:
            AdapterError: transport failure, malformed reply or no answer, naming the
                interaction, ``t`` and the URL; the API key is never part of the message.
            FatalAdapterError: the audio check proved the server drops the audio.
        """
        messages = as_messages(messages)  # typed (a dict-form prompt is read once here)
        if self.options.check_audio and _has_audio(messages):
            self.verify_audio(messages, request)
        with adapter_errors(where_of(request)):
            return to_output(self.engine.chat(messages, self._tools(request)))

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        """One chat completion for one decision point (see :meth:`ask`)."""
        with adapter_errors(where_of(request)):
            built = self._build(request)
        return self.ask(built, request)

    def respond_batch(self, requests: list[DecisionRequest]) -> list[AdapterOutput | Exception]:
        """Answer independent requests with up to ``max_concurrency`` in flight; results are in
        request order and an exception in a slot fails that request only."""

        def one(r: DecisionRequest) -> AdapterOutput | Exception:
            try:
                return self.respond(r)
            except Exception as exc:  # noqa: BLE001 - recorded on the record
                return exc

        return in_flight(one, requests, self.options.max_concurrency)

    def open_session(self, interaction: Interaction, video: VideoRecord) -> Session:
        """Online Rolling: one growing conversation per interaction (see :class:`OpenAISession`)."""
        return OpenAISession(self, interaction)

    def close(self) -> None:
        """Close the HTTP client."""
        self.engine.close()


def _cap_images(messages: list[Message], cap: int | None) -> None:
    """Replace all but the newest ``cap`` image parts by a short note (in place)."""
    if not cap:
        return
    slots = [
        (m, j)
        for m in messages
        if not isinstance(m.content, str)
        for j, p in enumerate(m.content)
        if isinstance(p, ImagePart)
    ]
    for m, j in slots[: max(0, len(slots) - cap)]:
        m.content[j] = TextPart(text="(older frame removed)")


class OpenAISession(Session):
    """Online Rolling over a chat endpoint: the conversation grows by one user turn per decision
    point (:func:`interactscope.streaming.protocol.prompts.online_prompt`: the replay 0..q at the first step,
    then only the new frames, the new audio samples and the current time) and the model's own
    answer as an assistant turn (native tool calls written as JSON text). The whole conversation
    is sent at every step; a failed step raises :class:`AdapterError`, its user turn stays in the
    conversation and the next step continues from its observation."""

    def __init__(self, adapter: OpenAIAdapter, interaction: Interaction):
        self.adapter = adapter
        self.interaction = interaction
        self.messages: list[Message] = []
        self.previous: Any = None
        self.steps = 0

    def step(self, request: DecisionRequest) -> AdapterOutput:
        """Append this decision point's turn, ask the model, keep its answer.

        Raises:
            AdapterError: as :meth:`OpenAIAdapter.ask`.
        """

        a = self.adapter
        with adapter_errors(where_of(request)):
            turn = online_prompt(request, self.previous)
        self.previous = request.observation
        self.messages.extend(turn)
        _cap_images(self.messages, a.options.online_max_images)
        out = a.ask(self.messages, request)
        reply = out.text
        if out.tool_calls:
            calls = [{"name": c.name, "arguments": c.arguments} for c in out.tool_calls]
            reply = (reply + "\n" if reply else "") + json.dumps(calls, ensure_ascii=False)
        self.messages.append(Message(role="assistant", content=reply or a.settings.silence_token))
        self.steps += 1
        return out

    def close(self) -> None:
        self.messages = []
        self.previous = None
