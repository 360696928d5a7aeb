"""Backend ``openai``: any OpenAI-compatible chat-completions endpoint (SPEC §2, issue 5).

Works with hosted models (OpenAI, Gemini's OpenAI-compatible endpoint) and local servers
(``vllm serve``, ``transformers serve``). The prompt is
:func:`interactscope.protocol.prompts.build_messages`; its parts become OpenAI content parts:

- text → ``{"type": "text"}``;
- a frame (``(H, W, 3)`` uint8 RGB) → ``{"type": "image_url"}`` with a ``data:image/jpeg;base64``
  URL (Pillow, ``jpeg_quality``, optional ``image_detail``);
- audio (float32 mono, ``sampling_rate`` Hz) → ``{"type": "input_audio"}`` with a 16-bit PCM WAV
  in base64;
- the T1 tool catalogue → native ``tools`` (``type: function``, JSON Schema parameters); the
  answer's ``message.tool_calls`` become :class:`~interactscope.schema.ToolCall` values in
  ``AdapterOutput.tool_calls``. Without native calls the driver parses calls from the text.

Config keys (``configs/models/NAME.yaml``; each may also be given in ``settings.adapter``, which
wins):

``model`` (or ``checkpoint``)
    Model name sent to the server.
``base_url_env`` / ``base_url``
    Name of the environment variable holding the base URL (``OPENAI_BASE_URL``); ``base_url`` is a
    public default used when that variable is unset (e.g. Gemini's endpoint). Never a secret.
``api_key_env``
    Name of the environment variable holding the API key (``OPENAI_API_KEY``). Keys are read from
    the environment only, never from files or the command line, and never logged.
``api_key_optional``
    ``true`` for local servers without authentication (a placeholder key is sent).
``generation.max_new_tokens`` (default 256), ``generation.temperature`` (default 0),
``generation.top_p``, ``generation.seed``, ``generation.stop``
    Sampling settings.
``max_concurrency`` (default 4)
    Requests in flight at once in :meth:`OpenAIAdapter.respond_batch`.
``max_retries`` (default 4), ``timeout_s`` (default 120)
    The openai client's retry policy (exponential backoff on connection errors, 408/409/429/5xx;
    ``Retry-After`` honoured) and per-request timeout in seconds.
``native_tools`` (default true)
    Offer the catalogue as native ``tools``; ``false`` relies on the prompt's text format only.
``check_audio`` (default true)
    On the first request that carries audio, compare the server's ``prompt_tokens`` with and
    without the audio parts; equal counts mean the server silently dropped the audio and raise
    :class:`AdapterError`.
``jpeg_quality`` (default 90), ``image_detail`` (``low`` | ``high`` | ``auto``; omitted by default)
``extra_body``
    Mapping merged into every request body (server-specific options).
``online_max_images`` (default unset: keep all)
    Online Rolling only: at most this many frames stay in the conversation; older image parts
    are replaced by a short text note before a call.
``max_tokens_field`` (``max_tokens`` | ``max_completion_tokens``, default ``max_tokens``)
    The request field that carries ``generation.max_new_tokens`` (newer OpenAI models want
    ``max_completion_tokens``).

Errors: a failed request (HTTP error after retries, timeout, malformed reply) raises
:class:`AdapterError` naming the interaction and ``t``; ``respond_batch`` returns it in that
request's slot, so it becomes an infrastructure error on the record, never silence.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import numpy as np

from interactscope.adapters.base import (
    Adapter,
    AdapterError,
    AdapterOutput,
    DecisionRequest,
    Session,
)
from interactscope.schema import Interaction, ToolSpec, VideoRecord
from interactscope.settings import Settings

log = logging.getLogger(__name__)

__all__ = [
    "OpenAIAdapter",
    "encode_audio_wav",
    "encode_image_jpeg",
    "to_openai_messages",
    "to_openai_tools",
]

_PLACEHOLDER_KEY = "EMPTY"


# --------------------------------------------------------------------------- conversion helpers


def encode_image_jpeg(image: Any, quality: int = 90) -> str:
    """Encode an RGB frame as a ``data:image/jpeg;base64,...`` URL.

    Args:
        image: ``(H, W, 3)`` uint8 RGB array (or ``(H, W)`` grey, or a PIL image).
        quality: JPEG quality 1..95.

    Raises:
        AdapterError: the array has an unsupported shape.
    """
    from PIL import Image

    if isinstance(image, Image.Image):
        pil = image.convert("RGB")
    else:
        arr = np.asarray(image)
        if arr.ndim == 2:
            arr = np.stack([arr] * 3, axis=-1)
        if arr.ndim != 3 or arr.shape[-1] not in (3, 4):
            raise AdapterError(f"frame of shape {arr.shape} is not (H, W, 3) RGB")
        if arr.dtype != np.uint8:
            arr = np.clip(arr, 0, 255).astype(np.uint8)
        pil = Image.fromarray(arr[..., :3], mode="RGB")
    buf = io.BytesIO()
    pil.save(buf, format="JPEG", quality=int(quality))
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def encode_audio_wav(audio: Any, sampling_rate: int) -> str:
    """Encode a mono waveform (float in [-1, 1]) as base64 16-bit PCM WAV (no data-URL prefix).

    Args:
        audio: 1-D float array; samples outside [-1, 1] are clipped.
        sampling_rate: Hz.
    """
    import soundfile as sf

    arr = np.asarray(audio, dtype=np.float32).reshape(-1)
    buf = io.BytesIO()
    sf.write(buf, np.clip(arr, -1.0, 1.0), int(sampling_rate), format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _convert_part(
    part: Any, *, jpeg_quality: int, image_detail: str | None
) -> dict[str, Any] | None:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": str(part.get("text", ""))}
    if kind == "image":
        url = encode_image_jpeg(part["image"], jpeg_quality)
        image_url: dict[str, Any] = {"url": url}
        if image_detail:
            image_url["detail"] = image_detail
        return {"type": "image_url", "image_url": image_url}
    if kind == "audio":
        sr = int(part.get("sampling_rate") or 16000)
        return {
            "type": "input_audio",
            "input_audio": {"data": encode_audio_wav(part["audio"], sr), "format": "wav"},
        }
    if kind in ("image_url", "input_audio"):  # already OpenAI-shaped
        return dict(part)
    raise AdapterError(f"prompt part of type {kind!r} is not supported by the openai backend")


def to_openai_messages(
    messages: Sequence[dict[str, Any]],
    *,
    jpeg_quality: int = 90,
    image_detail: str | None = None,
    drop_audio: bool = False,
) -> list[dict[str, Any]]:
    """Convert :func:`build_messages` output into OpenAI chat messages.

    Messages whose content is text only are sent as one string (some servers reject part lists
    for ``system`` and ``assistant``). ``drop_audio=True`` removes the audio parts (used by the
    audio-consumption check).
    """
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role", "user")
        content = msg.get("content", "")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        parts = []
        for p in content:
            if drop_audio and isinstance(p, dict) and p.get("type") in ("audio", "input_audio"):
                continue
            conv = _convert_part(p, jpeg_quality=jpeg_quality, image_detail=image_detail)
            if conv is not None:
                parts.append(conv)
        if all(p["type"] == "text" for p in parts):
            out.append({"role": role, "content": "".join(p["text"] for p in parts)})
        else:
            out.append({"role": role, "content": parts})
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The T1 catalogue as OpenAI native ``tools`` (``type: function``)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters or {"type": "object", "properties": {}},
            },
        }
        for t in tools
    ]


def _has_audio(messages: Sequence[dict[str, Any]]) -> bool:
    for msg in messages:
        content = msg.get("content")
        if isinstance(content, list):
            for p in content:
                if isinstance(p, dict) and p.get("type") == "audio":
                    return True
    return False


# --------------------------------------------------------------------------- adapter


class OpenAIAdapter(Adapter):
    """Offline Probing over an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Thread-safe: :meth:`respond_batch` runs up to ``max_concurrency`` requests at once. The
    openai client is created lazily on the first request.
    """

    backend: ClassVar[str] = "openai"
    needs_media: ClassVar[bool] = True
    supports_online: ClassVar[bool] = True

    def __init__(self, name: str, config: dict[str, Any], settings: Settings):
        super().__init__(name, config, settings)
        self.model = str(self._opt("model") or self._opt("checkpoint") or name)
        gen = dict(self.config.get("generation") or {})
        gen.update(self.settings.adapter.get("generation") or {})
        self.max_new_tokens = int(gen.get("max_new_tokens", 256))
        self.temperature = float(gen.get("temperature", 0.0))
        self.top_p = gen.get("top_p")
        self.seed = gen.get("seed")
        self.stop = gen.get("stop")
        self.max_concurrency = max(1, int(self._opt("max_concurrency", 4)))
        self.max_retries = max(0, int(self._opt("max_retries", 4)))
        self.timeout_s = float(self._opt("timeout_s", 120.0))
        self.native_tools = bool(self._opt("native_tools", True))
        self.check_audio = bool(self._opt("check_audio", True))
        self.jpeg_quality = int(self._opt("jpeg_quality", 90))
        self.image_detail = self._opt("image_detail")
        self.extra_body = dict(self._opt("extra_body") or {})
        self.max_tokens_field = str(self._opt("max_tokens_field", "max_tokens"))
        if self.max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise AdapterError(
                f"model {name!r}: max_tokens_field must be max_tokens or max_completion_tokens"
            )
        max_images = self._opt("online_max_images")
        self.online_max_images = int(max_images) if max_images else None
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._audio_lock = threading.Lock()
        self._audio_verified: bool | None = None  # None: not checked yet
        self._audio_check: dict[str, Any] | None = None

    # -- configuration -------------------------------------------------------------------------

    def _opt(self, key: str, default: Any = None) -> Any:
        if key in self.settings.adapter:
            return self.settings.adapter[key]
        return self.config.get(key, default)

    def _base_url(self) -> str | None:
        env = self._opt("base_url_env")
        if env and os.environ.get(str(env)):
            return os.environ[str(env)]
        return self._opt("base_url")

    def _api_key(self) -> str:
        env = self._opt("api_key_env")
        if env and os.environ.get(str(env)):
            return os.environ[str(env)]
        if self._opt("api_key_optional", False):
            return _PLACEHOLDER_KEY
        if not env:
            raise AdapterError(
                f"model {self.name!r}: config sets no api_key_env (the name of the environment "
                "variable holding the API key); set api_key_optional: true for a local server"
            )
        raise AdapterError(
            f"model {self.name!r}: environment variable {env} (the API key) is not set"
        )

    def client(self) -> Any:
        """The openai client (created once). Raises AdapterError when ``openai`` is missing."""
        with self._client_lock:
            if self._client is None:
                try:
                    import openai
                except ImportError as exc:
                    raise AdapterError(
                        "backend 'openai' needs the openai package: "
                        "pip install 'interactscope[openai]'"
                    ) from exc
                base_url = self._base_url()
                self._client = openai.OpenAI(
                    api_key=self._api_key(),
                    base_url=base_url,
                    max_retries=self.max_retries,
                    timeout=self.timeout_s,
                )
                log.info("openai backend: model %s at %s", self.model, base_url or "default URL")
            return self._client

    def prepare(self, bench: Any) -> None:
        """Before collection: fail at once (not on every record) when the ``openai`` package or
        the API key is missing.

        Raises:
            AdapterError: naming the missing package or environment variable.
        """
        self.client()

    def describe(self) -> dict[str, Any]:
        """Recorded into ``run.json``: no key, only the names of the variables."""
        return {
            "model": self.model,
            "base_url": self._base_url(),
            "base_url_env": self._opt("base_url_env"),
            "api_key_env": self._opt("api_key_env"),
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "max_concurrency": self.max_concurrency,
            "max_retries": self.max_retries,
            "timeout_s": self.timeout_s,
            "native_tools": self.native_tools,
            "check_audio": self.check_audio,
            "audio_check": self._audio_check,
            "jpeg_quality": self.jpeg_quality,
            "image_detail": self.image_detail,
        }

    # -- requests ------------------------------------------------------------------------------

    def _build(self, request: DecisionRequest) -> list[dict[str, Any]]:
        from interactscope.protocol.prompts import build_messages

        return build_messages(request)

    def _create(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None = None,
    ) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            self.max_tokens_field: self.max_new_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature,
        }
        if self.top_p is not None:
            kwargs["top_p"] = float(self.top_p)
        if self.seed is not None:
            kwargs["seed"] = int(self.seed)
        if self.stop:
            kwargs["stop"] = self.stop
        if tools:
            kwargs["tools"] = tools
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return self.client().chat.completions.create(**kwargs)

    def _verify_audio(self, built: list[dict[str, Any]], where: str) -> None:
        """Compare prompt tokens with and without the audio parts (once per adapter)."""
        with self._audio_lock:
            if self._audio_verified is not None:
                if not self._audio_verified:
                    raise AdapterError(self._audio_check["error"])  # type: ignore[index]
                return
            with_audio = self._create(
                to_openai_messages(built, jpeg_quality=self.jpeg_quality), None, max_tokens=1
            )
            without = self._create(
                to_openai_messages(built, jpeg_quality=self.jpeg_quality, drop_audio=True),
                None,
                max_tokens=1,
            )
            n_with = getattr(getattr(with_audio, "usage", None), "prompt_tokens", None)
            n_without = getattr(getattr(without, "usage", None), "prompt_tokens", None)
            self._audio_check = {
                "at": where,
                "prompt_tokens_with_audio": n_with,
                "prompt_tokens_without_audio": n_without,
            }
            if n_with is None or n_without is None:
                msg = (
                    f"model {self.name!r}: cannot verify that the server consumes audio "
                    f"({where}): it reports no usage.prompt_tokens; set check_audio: false to "
                    "run anyway, or use audio.mode=asr"
                )
            elif n_with <= n_without:
                msg = (
                    f"model {self.name!r}: the server silently dropped the audio ({where}): "
                    f"prompt_tokens {n_with} with audio vs {n_without} without; use a server "
                    "that accepts input_audio, or audio.mode=asr"
                )
            else:
                self._audio_verified = True
                log.info("openai backend: audio consumed (%s vs %s tokens)", n_with, n_without)
                return
            self._audio_verified = False
            self._audio_check["error"] = msg
            raise AdapterError(msg)

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        """One chat completion for one decision point.

        Raises:
            AdapterError: HTTP/connection failure after retries, a malformed reply, or audio
                dropped by the server (``check_audio``). The key is never part of the message.
        """
        where = f"interaction {request.interaction.id} t={request.t:g}s"
        try:
            built = self._build(request)
            if self.check_audio and _has_audio(built):
                self._verify_audio(built, where)
            messages = to_openai_messages(
                built, jpeg_quality=self.jpeg_quality, image_detail=self.image_detail
            )
            tools = (
                to_openai_tools(request.tools) if (self.native_tools and request.tools) else None
            )
            t0 = time.perf_counter()
            resp = self._create(messages, tools)
            latency = time.perf_counter() - t0
        except AdapterError:
            raise
        except Exception as exc:  # openai.APIError, httpx errors, encoding errors
            raise AdapterError(f"{where}: {type(exc).__name__}: {self._safe(exc)}") from exc
        return self._to_output(resp, latency, where)

    def _to_output(self, resp: Any, latency: float, where: str) -> AdapterOutput:
        choices = getattr(resp, "choices", None)
        if not choices:
            raise AdapterError(f"{where}: the server returned no choices")
        choice = choices[0]
        message = choice.message
        text = message.content or ""
        if not isinstance(text, str):  # some servers return a part list
            text = "".join(
                p.get("text", "") if isinstance(p, dict) else str(p) for p in (text or [])
            )
        extra: dict[str, Any] = {"finish_reason": getattr(choice, "finish_reason", None)}
        tool_calls = None
        native = getattr(message, "tool_calls", None)
        if native:
            from interactscope.protocol.parsing import parse_response

            dicts = [
                {
                    "function": {
                        "name": getattr(c.function, "name", None),
                        "arguments": getattr(c.function, "arguments", None),
                    }
                }
                for c in native
                if getattr(c, "function", None) is not None
            ]
            parsed = parse_response(text, self.settings.silence_token, native_tool_calls=dicts)
            tool_calls = parsed.tool_calls or None
            if parsed.parse_error:
                extra["native_parse_error"] = parsed.parse_error
        usage = getattr(resp, "usage", None)
        return AdapterOutput(
            text=text,
            silent=False if tool_calls else None,
            tool_calls=tool_calls,
            latency_s=latency,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            extra=extra,
        )

    def respond_batch(self, requests: list[DecisionRequest]) -> list[AdapterOutput | Exception]:
        """Answer independent requests with up to ``max_concurrency`` in flight; results are in
        request order and an exception in a slot fails that request only."""

        def one(r: DecisionRequest) -> AdapterOutput | Exception:
            try:
                return self.respond(r)
            except Exception as exc:  # noqa: BLE001 - recorded on the record
                return exc

        if len(requests) <= 1 or self.max_concurrency == 1:
            return [one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(one, requests))

    def _safe(self, exc: BaseException) -> str:
        """Exception text (500 chars at most) with the API key masked should a server echo it."""
        text = str(exc)
        env = self._opt("api_key_env")
        key = os.environ.get(str(env)) if env else None
        if key and len(key) >= 4:
            text = text.replace(key, "***")
        return text[:500]

    def open_session(self, interaction: Interaction, video: VideoRecord) -> Session:
        """Online Rolling: one growing conversation per interaction (see :class:`OpenAISession`)."""
        return OpenAISession(self, interaction)

    def close(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # noqa: BLE001
                pass
            self._client = None


class OpenAISession(Session):
    """Online Rolling over a chat endpoint: the conversation grows by one user turn per decision
    point (:func:`interactscope.protocol.prompts.online_turn`: the replay 0..q at the first step,
    then only the new frames, the new audio samples and the current time) and the model's own
    answer as an assistant turn (native tool calls written as JSON text). The whole conversation
    is sent at every step; a failed step raises :class:`AdapterError`, its user turn stays in the
    conversation and the next step continues from its observation."""

    def __init__(self, adapter: OpenAIAdapter, interaction: Interaction):
        self.adapter = adapter
        self.interaction = interaction
        self.messages: list[dict[str, Any]] = []
        self.previous: Any = None
        self.steps = 0

    def _cap_images(self) -> None:
        cap = self.adapter.online_max_images
        if not cap:
            return
        slots = [
            (i, j)
            for i, m in enumerate(self.messages)
            if isinstance(m.get("content"), list)
            for j, p in enumerate(m["content"])
            if p.get("type") == "image_url"
        ]
        for i, j in slots[: max(0, len(slots) - cap)]:
            self.messages[i]["content"][j] = {"type": "text", "text": "(older frame removed)"}

    def step(self, request: DecisionRequest) -> AdapterOutput:
        """Append this decision point's turn, ask the model, keep its answer.

        Raises:
            AdapterError: as :meth:`OpenAIAdapter.respond`.
        """
        from interactscope.protocol.prompts import online_turn

        a = self.adapter
        where = f"interaction {request.interaction.id} t={request.t:g}s"
        try:
            turn = online_turn(request, self.previous)
            self.previous = request.observation
            if a.check_audio and _has_audio(turn):
                a._verify_audio(turn, where)
            self.messages.extend(
                to_openai_messages(turn, jpeg_quality=a.jpeg_quality, image_detail=a.image_detail)
            )
            self._cap_images()
            use_tools = a.native_tools and bool(request.tools)
            tools = to_openai_tools(request.tools) if use_tools else None
            t0 = time.perf_counter()
            resp = a._create(self.messages, tools)
            latency = time.perf_counter() - t0
        except AdapterError:
            raise
        except Exception as exc:  # openai.APIError, httpx errors, encoding errors
            raise AdapterError(f"{where}: {type(exc).__name__}: {a._safe(exc)}") from exc
        out = a._to_output(resp, latency, where)
        reply = out.text
        if out.tool_calls:
            calls = [{"name": c.name, "arguments": c.arguments} for c in out.tool_calls]
            reply = (reply + "\n" if reply else "") + json.dumps(calls, ensure_ascii=False)
        self.messages.append({"role": "assistant", "content": reply or a.settings.silence_token})
        self.steps += 1
        return out

    def close(self) -> None:
        self.messages = []
        self.previous = None
