"""Engine ``openai``: any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Hosted models (OpenAI, Gemini's OpenAI-compatible endpoint) and local servers (``vllm serve``,
``transformers serve``). Parts become OpenAI content parts: text → ``text``; an image →
``image_url`` with a ``data:image/jpeg;base64`` URL (Pillow, ``jpeg_quality``, optional
``image_detail``); a video → its frames as images; audio → ``input_audio`` with a 16-bit PCM
WAV. Tools go as native ``tools`` (``type: function``); the reply's ``message.tool_calls`` come
back parsed (name + arguments dict) in :attr:`ChatResult.tool_calls`.

The base URL and the API key come from environment variables named in the options
(``base_url_env``, ``api_key_env``); keys are never read from files or the command line, and
every error text passes through :func:`interactscope.core.secrets.redact` (the key variable is
registered there). The ``openai`` client retries connection errors, 408/409/429/5xx with
exponential backoff (``max_retries``, ``Retry-After`` honoured) within ``timeout_s`` seconds per
request; a failure names the server's URL.

An answer with ``content: null`` and no tool calls is an :class:`EngineError`, never an empty
(silent) reply. :meth:`OpenAIEngine.check_served_model` asks ``GET /models`` before a run
(``check_models``) so that a wrong URL or model name fails once, not on every record.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

import numpy as np
import soundfile as sf
from pydantic import Field, field_validator

from interactscope.core.records import ToolSpec
from interactscope.core.secrets import redact, register_key_env
from interactscope.engines import base
from interactscope.engines.base import (
    ChatResult,
    EngineError,
    Message,
    as_messages,
    generation_of,
)
from interactscope.engines.config import BackendOptions
from interactscope.engines.toolcalls import native_tool_call

log = logging.getLogger(__name__)

__all__ = [
    "OpenAIEngine",
    "OpenAIOptions",
    "encode_audio_wav",
    "encode_image_jpeg",
    "in_flight",
    "to_openai_messages",
    "to_openai_tools",
]

_PLACEHOLDER_KEY = "EMPTY"

DEFAULT_FRAME_PIXELS = 200_704
"""Default ``frames_consumer`` pixel budget of the streaming adapter: the shipped Qwen configs'
``max_pixels`` (256 tokens a Qwen frame; a 1280x720 frame is held and sent at 600x338)."""


class OpenAIOptions(BackendOptions):
    """Options of the ``openai`` backend (model config keys)."""

    model: str | None = Field(None, description="model name sent to the server")
    checkpoint: str | None = Field(None, description="alias of model")
    base_url_env: str | None = Field(None, description="env variable holding the base URL")
    base_url: str | None = Field(None, description="public default URL when that is unset")
    api_key_env: str | None = Field(None, description="env variable holding the API key")
    api_key_optional: bool = Field(False, description="local server: send a placeholder key")
    max_concurrency: int = Field(4, ge=1, description="requests in flight in chat_batch")
    max_retries: int = Field(4, ge=0)
    timeout_s: float = Field(120.0, gt=0, description="per request, seconds")
    jpeg_quality: int = Field(90, ge=1, le=100)
    image_detail: Literal["low", "high", "auto"] | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict, description="merged into requests")
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    # read by the streaming adapter over this engine (interactscope.streaming.adapters.openai_backend)
    native_tools: bool = Field(True, description="offer the T1 catalogue as native tools")
    video_file: bool = Field(
        False, description="the server takes a video file (video_url): EgoBench agent.video=file"
    )
    check_audio: bool = Field(
        True, description="verify the server consumes input_audio (first request with >= 1 s)"
    )
    check_models: bool = Field(
        True, description="ask GET /models for the model before a run (false: server has none)"
    )
    online_max_images: int | None = Field(None, ge=1, description="Online Rolling frame cap")
    send_empty_audio: bool = Field(
        False, description="send an audio part with no samples (a 0-sample WAV; default: left out)"
    )
    frames_consumer: int | Literal["source"] = Field(
        DEFAULT_FRAME_PIXELS,
        description="pixel budget (>= 3136) the streaming adapter holds and sends frames at, "
        "or 'source': as the observation gives them (frames.max_side)",
    )

    @field_validator("frames_consumer")
    @classmethod
    def _frame_budget(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 3136:
            raise ValueError(f"a pixel budget is >= 3136 (56 x 56 px), or 'source'; got {v}")
        return v


# --------------------------------------------------------------------------- wire format


def encode_image_jpeg(image: Any, quality: int = 90) -> str:
    """Encode an RGB frame as a ``data:image/jpeg;base64,...`` URL.

    Args:
        image: ``(H, W, 3)`` uint8 RGB array (or ``(H, W)`` grey, RGBA, or a PIL image).
        quality: JPEG quality 1..95.

    Raises:
        EngineError: the array has an unsupported shape.
    """
    from PIL import Image  # optional dependency ([openai])

    if isinstance(image, Image.Image):
        pil = image.convert("RGB")
    else:
        arr = np.asarray(image)
        if arr.ndim == 2:
            arr = np.stack([arr] * 3, axis=-1)
        if arr.ndim != 3 or arr.shape[-1] not in (3, 4):
            raise EngineError(f"frame of shape {arr.shape} is not (H, W, 3) RGB")
        if arr.dtype != np.uint8:
            arr = np.clip(arr, 0, 255).astype(np.uint8)
        pil = Image.fromarray(np.ascontiguousarray(arr[..., :3]), mode="RGB")
    buf = io.BytesIO()
    pil.save(buf, format="JPEG", quality=int(quality))
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def encode_audio_wav(audio: Any, sampling_rate: int) -> str:
    """Encode a mono waveform (float in [-1, 1]) as base64 16-bit PCM WAV (no data-URL prefix).

    Args:
        audio: 1-D float array; samples outside [-1, 1] are clipped.
        sampling_rate: Hz.
    """

    arr = np.asarray(audio, dtype=np.float32).reshape(-1)
    buf = io.BytesIO()
    sf.write(buf, np.clip(arr, -1.0, 1.0), int(sampling_rate), format="WAV", subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _image_url(image: Any, quality: int, detail: str | None) -> dict[str, Any]:
    image_url: dict[str, Any] = {"url": encode_image_jpeg(image, quality)}
    if detail:
        image_url["detail"] = detail
    return {"type": "image_url", "image_url": image_url}


def _video_data_url(path: str) -> str:
    """The video file as a base64 data URL (``video/mp4`` unless the suffix says otherwise)."""
    mime = {".webm": "video/webm", ".mov": "video/quicktime", ".mkv": "video/x-matroska"}
    kind = mime.get(os.path.splitext(path)[1].lower(), "video/mp4")
    try:
        with open(path, "rb") as fh:
            data = base64.b64encode(fh.read()).decode("ascii")
    except OSError as exc:
        raise EngineError(f"{path}: the video file cannot be read ({exc.strerror})") from None
    return f"data:{kind};base64,{data}"


def _wire_parts(part: Any, quality: int, detail: str | None) -> list[dict[str, Any]]:
    if isinstance(part, base.TextPart):
        return [{"type": "text", "text": part.text}]
    if isinstance(part, base.ImagePart):
        return [_image_url(part.image, quality, detail)]
    if isinstance(part, base.VideoPart) and part.path:
        return [{"type": "video_url", "video_url": {"url": _video_data_url(part.path)}}]
    if isinstance(part, base.VideoPart):
        return [_image_url(f, quality, detail) for f in part.frames]
    if isinstance(part, base.AudioPart):
        data = encode_audio_wav(part.audio, part.sample_rate)
        return [{"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}]
    raise EngineError(f"prompt part {type(part).__name__} is not supported by the openai backend")


def _wire_message(
    msg: Message, quality: int, detail: str | None, drop_audio: bool, empty_audio: bool = False
) -> dict:
    parts: list[dict[str, Any]] = []
    for p in msg.parts():
        # no samples (t = 0): no audio part, unless the config asks for an empty one
        empty = isinstance(p, base.AudioPart) and np.asarray(p.audio).size == 0 and not empty_audio
        if (drop_audio and isinstance(p, base.AudioPart)) or empty:
            continue
        parts.extend(_wire_parts(p, quality, detail))
    out: dict[str, Any] = {"role": msg.role}
    if all(p["type"] == "text" for p in parts):
        # text-only content as one string: some servers reject part lists for system/assistant
        out["content"] = "".join(p["text"] for p in parts)
    else:
        out["content"] = parts
    if msg.tool_calls:
        ids = list(msg.tool_call_ids) + [f"call_{i}" for i in range(len(msg.tool_calls))]
        out["tool_calls"] = [
            {
                "id": ids[i],
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for i, c in enumerate(msg.tool_calls)
        ]
        out["content"] = out["content"] or None
    if msg.tool_call_id is not None:
        out["tool_call_id"] = msg.tool_call_id
    return out


def to_openai_messages(
    messages: Sequence[Any],
    *,
    jpeg_quality: int = 90,
    image_detail: str | None = None,
    drop_audio: bool = False,
    send_empty_audio: bool = False,
) -> list[dict[str, Any]]:
    """Chat messages (:class:`Message` values or the prompt builder's dicts) as OpenAI chat
    messages. A message whose content is text only is sent as one string; ``drop_audio=True``
    leaves the audio parts out (the audio-consumption check); an audio part without samples
    (the stream at t = 0) is left out unless ``send_empty_audio``.

    Raises:
        EngineError: a malformed part.
    """
    return [
        _wire_message(m, jpeg_quality, image_detail, drop_audio, send_empty_audio)
        for m in as_messages(messages)
    ]


def to_openai_tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """A tool catalogue as OpenAI native ``tools``: :class:`ToolSpec` values, bare
    ``{name, description, parameters}`` dicts (``tool_name`` accepted) or dicts already in the
    ``{"type": "function", "function": {...}}`` shape."""
    out = []
    for t in tools:
        if isinstance(t, dict) and t.get("type") == "function" and "function" in t:
            out.append(t)
            continue
        if isinstance(t, dict):
            t = ToolSpec(
                name=t.get("name") or t.get("tool_name"),
                description=t.get("description", ""),
                parameters=t.get("parameters") or {},
            )
        fn = {
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters or {"type": "object", "properties": {}},
        }
        out.append({"type": "function", "function": fn})
    return out


def _reply_text(message: Any) -> str:
    text = message.content or ""
    if not isinstance(text, str):  # some servers return a part list
        text = "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in text)
    return text


def _no_answer(choice: Any) -> EngineError | None:
    """The error of an answer with ``content: null`` and no tool calls (``None`` otherwise; a
    refusal string counts as an answer)."""
    message = choice.message
    if message.content is not None or getattr(message, "tool_calls", None):
        return None
    if isinstance(getattr(message, "refusal", None), str):
        return None
    return EngineError(
        "the server answered with content null and no tool calls (finish_reason "
        f"{getattr(choice, 'finish_reason', None)}): not a model reply; check the server's "
        "chat template, reasoning parser and max tokens"
    )


T = TypeVar("T")
R = TypeVar("R")


def in_flight(fn: Callable[[T], R], items: Sequence[T], max_concurrency: int) -> list[R]:
    """``[fn(x) for x in items]`` with up to ``max_concurrency`` calls in flight (threads; in
    this thread when that is 1), results in ``items`` order. ``fn`` should return its failure
    rather than raise (a raise propagates and the other results are lost)."""
    n = min(max_concurrency, len(items))
    if n <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(fn, items))


def to_chat_result(resp: Any, latency_s: float, *, require_answer: bool = True) -> ChatResult:
    """A chat-completions response object as a :class:`ChatResult` (``raw``: ``finish_reason``
    and, when the server reports prefix-cache hits, ``cached_tokens``).

    Args:
        resp: the response of ``chat.completions.create``.
        latency_s: wall time of the call, seconds.
        require_answer: refuse ``content: null`` without tool calls (False: token probes).

    Raises:
        EngineError: the body is not JSON (the client hands back its text), the response holds
            no choices, or no content and no tool calls.
    """
    if isinstance(resp, (str, bytes)):
        head = resp if isinstance(resp, str) else resp.decode("utf-8", "replace")
        raise EngineError(
            f"the server answered HTTP 200 with a body that is not JSON ({head.strip()[:60]!r}); "
            "check that base_url is an OpenAI-compatible endpoint (usually ending in /v1)"
        )
    choices = getattr(resp, "choices", None)
    if not choices:
        raise EngineError("the server returned no choices")
    choice = choices[0]
    message = choice.message
    missing = _no_answer(choice) if require_answer else None
    if missing is not None:
        raise missing
    calls, errors, ids = [], [], []
    for c in getattr(message, "tool_calls", None) or []:
        fn = getattr(c, "function", None)
        if fn is None:
            continue
        call, err = native_tool_call(getattr(fn, "name", None), getattr(fn, "arguments", None))
        if call is not None:
            calls.append(call)
            ids.append(str(getattr(c, "id", "") or f"call_{len(ids)}"))
        if err:
            errors.append(err)
    usage = getattr(resp, "usage", None)
    text = _reply_text(message)
    refusal = getattr(message, "refusal", None)
    if message.content is None and isinstance(refusal, str):
        text = refusal
    return ChatResult(
        text=text,
        tool_calls=calls,
        tool_call_errors=errors,
        tool_call_ids=ids,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        latency_s=latency_s,
        raw={"finish_reason": getattr(choice, "finish_reason", None), **_cached(usage)},
    )


def _cached(usage: Any) -> dict[str, int]:
    """``{"cached_tokens": n}`` from ``usage.prompt_tokens_details.cached_tokens`` (the prompt
    tokens the server's prefix cache served), or ``{}`` when the server does not report it."""
    details = getattr(usage, "prompt_tokens_details", None)
    if isinstance(details, dict):
        n = details.get("cached_tokens")
    else:
        n = getattr(details, "cached_tokens", None)
    return {"cached_tokens": int(n)} if isinstance(n, int) and not isinstance(n, bool) else {}


# --------------------------------------------------------------------------- engine


class OpenAIEngine:
    """Chat over an OpenAI-compatible endpoint (see the module docstring).

    Thread-safe: :meth:`chat_batch` runs up to ``max_concurrency`` requests at once. The client is
    created on first use (or given, for tests).

    Args:
        options: parsed :class:`OpenAIOptions`.
        name: the model config's name (in messages).
        client: an already-built ``openai.OpenAI``.
    """

    backend = "openai"
    Options = OpenAIOptions

    def __init__(self, options: OpenAIOptions, name: str = "openai", *, client: Any = None):
        self.options = options
        self.name = name
        self.model = str(options.model or options.checkpoint or name)
        self._client = client
        self._lock = threading.Lock()
        register_key_env(options.api_key_env)

    def base_url(self) -> str | None:
        """``$base_url_env`` if set, else the public ``base_url`` default (never a secret)."""
        env = self.options.base_url_env
        if env and os.environ.get(env):
            return os.environ[env]
        return self.options.base_url

    def _api_key(self) -> str:
        env = self.options.api_key_env
        if env and os.environ.get(env):
            return os.environ[env]
        if self.options.api_key_optional:
            return _PLACEHOLDER_KEY
        if not env:
            raise EngineError(
                f"model {self.name!r}: config sets no api_key_env (the name of the environment "
                "variable holding the API key); set api_key_optional: true for a local server"
            )
        raise EngineError(
            f"model {self.name!r}: environment variable {env} (the API key) is not set"
        )

    def client(self) -> Any:
        """The ``openai.OpenAI`` client (created once).

        Raises:
            EngineError: the ``openai`` package or the API key is missing.
        """
        with self._lock:
            if self._client is None:
                try:
                    import openai  # optional dependency ([openai])
                except ImportError as exc:
                    raise EngineError(
                        "backend 'openai' needs the openai package: "
                        "pip install 'interactscope[openai]'"
                    ) from exc
                self._client = openai.OpenAI(
                    api_key=self._api_key(),
                    base_url=self.base_url(),
                    max_retries=self.options.max_retries,
                    timeout=self.options.timeout_s,
                )
                log.info("openai engine: model %s at %s", self.model, self.base_url() or "default")
            return self._client

    def request_body(self, wire: list[dict], tools: list[dict] | None, gen: dict) -> dict:
        """Keyword arguments of ``chat.completions.create`` for one call."""
        g = generation_of(self.options.generation, gen)
        max_tokens = g["max_new_tokens"] if g["max_new_tokens"] is not None else 256
        body: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            self.options.max_tokens_field: int(max_tokens),
            "temperature": float(g["temperature"]),
        }
        if g["top_p"] is not None:
            body["top_p"] = float(g["top_p"])
        if g["seed"] is not None:
            body["seed"] = int(g["seed"])
        if g["stop"]:
            body["stop"] = g["stop"]
        if tools:
            body["tools"] = tools
        if self.options.extra_body:
            body["extra_body"] = dict(self.options.extra_body)
        return body

    def wire(self, messages: Sequence[Any], *, drop_audio: bool = False) -> list[dict[str, Any]]:
        """``messages`` in the OpenAI wire format with this engine's image settings."""
        o = self.options
        return to_openai_messages(
            messages,
            jpeg_quality=o.jpeg_quality,
            image_detail=o.image_detail,
            drop_audio=drop_audio,
            send_empty_audio=o.send_empty_audio,
        )

    def url(self) -> str:
        """The URL requests go to (the client's base URL once it exists), for messages."""
        client = self._client
        url = getattr(client, "base_url", None) if client is not None else None
        return str(url or self.base_url() or "https://api.openai.com/v1")

    def _create(self, body: dict[str, Any], require_answer: bool = True) -> ChatResult:
        try:
            t0 = time.perf_counter()
            resp = self.client().chat.completions.create(**body)
            latency = time.perf_counter() - t0
        except EngineError:
            raise
        except Exception as exc:  # openai.APIError, httpx errors
            raise EngineError(f"{type(exc).__name__} from {self.url()}: {self.safe(exc)}") from exc
        try:
            return to_chat_result(resp, latency, require_answer=require_answer)
        except EngineError as exc:
            raise EngineError(f"{self.url()} (model {self.model}): {exc}") from None

    def chat(
        self, messages: Sequence[Any], tools: Sequence[Any] | None = None, **generation: Any
    ) -> ChatResult:
        """One chat completion (``generation``: max_new_tokens, temperature, top_p, seed, stop).

        Raises:
            EngineError: HTTP/connection failure after retries (naming the URL), timeout, a
                malformed reply or one with no content and no tool calls; keys are masked.
        """
        try:
            wire = self.wire(messages)
        except EngineError:
            raise
        except Exception as exc:  # encoding errors
            raise EngineError(f"{type(exc).__name__}: {self.safe(exc)}") from exc
        tools_wire = to_openai_tools(tools) if tools else None
        return self._create(self.request_body(wire, tools_wire, generation))

    def prompt_tokens(self, messages: Sequence[Any], *, drop_audio: bool = False) -> int | None:
        """``usage.prompt_tokens`` of ``messages`` (a one-token request; its content, even
        null, is not read); ``None`` when the server reports no usage.

        Raises:
            EngineError: as :meth:`chat`.
        """
        body = self.request_body(self.wire(messages, drop_audio=drop_audio), None, {})
        body[self.options.max_tokens_field] = 1
        return self._create(body, require_answer=False).prompt_tokens

    def check_served_model(self) -> list[str]:
        """Ask the server ``GET /models`` and check it serves :attr:`model` (an id equal to it,
        ``models/`` prefixes ignored). One quick attempt (at most 30 s, one retry).

        Returns:
            The ids the server serves.

        Raises:
            EngineError: one line naming the URL: unreachable, no ``/models`` (skip the check
                with ``check_models: false``), key refused, or the model not served.
        """
        url = self.url()
        try:
            client = self.client().with_options(
                max_retries=1, timeout=min(30.0, self.options.timeout_s)
            )
            ids = [str(m.id) for m in client.models.list()]
        except EngineError:
            raise
        except Exception as exc:  # openai.APIError, httpx errors
            raise EngineError(self._models_failure(url, exc)) from exc
        want = self.model.removeprefix("models/")
        if not any(i.removeprefix("models/") == want for i in ids):
            served = ", ".join(ids[:12]) + (f", ... ({len(ids)} in all)" if len(ids) > 12 else "")
            raise EngineError(
                f"the server at {url} does not serve model {self.model!r} (GET /models lists: "
                f"{served or 'nothing'}); set the served name with --set adapter.model=NAME, or "
                "skip this check with --set adapter.check_models=false"
            )
        return ids

    def _models_failure(self, url: str, exc: BaseException) -> str:
        status = getattr(exc, "status_code", None)
        what = f"{type(exc).__name__}: {self.safe(exc)}"
        if status in (404, 405, 501):
            return (
                f"the server at {url} has no GET /models (HTTP {status}); skip this check with "
                "--set adapter.check_models=false"
            )
        if status in (401, 403):
            env = self.options.api_key_env or "the api_key_env variable"
            return f"the server at {url} refused the API key in ${env} (HTTP {status}): {what}"
        if status is not None:
            return f"GET /models at {url} failed (HTTP {status}): {what}"
        return (
            f"cannot reach the server at {url} ({what}); start it or fix the base URL "
            f"(${self.options.base_url_env or 'base_url_env'} / base_url), or skip this check with "
            "--set adapter.check_models=false"
        )

    def chat_batch(
        self,
        conversations: Sequence[Sequence[Any]],
        tools: Sequence[Any] | None = None,
        **generation: Any,
    ) -> list[ChatResult | EngineError]:
        """Independent conversations with up to ``max_concurrency`` requests in flight; results
        in order, a failed request leaves its :class:`EngineError` in its slot."""

        def one(conv: Sequence[Any]) -> ChatResult | EngineError:
            try:
                return self.chat(conv, tools, **generation)
            except EngineError as exc:
                return exc

        return in_flight(one, conversations, self.options.max_concurrency)

    def safe(self, exc: BaseException) -> str:
        """Exception text (500 chars at most) with every key masked should a server echo it."""
        return redact(exc, [self.options.api_key_env or ""])[:500]

    def describe(self) -> dict[str, Any]:
        """Facts for ``run.json``: no key, only the names of the variables."""
        o = self.options
        return {
            "model": self.model,
            "base_url": self.base_url(),
            "base_url_env": o.base_url_env,
            "api_key_env": o.api_key_env,
            "max_new_tokens": o.generation.max_new_tokens or 256,
            "temperature": o.generation.temperature,
            "max_concurrency": o.max_concurrency,
            "max_retries": o.max_retries,
            "timeout_s": o.timeout_s,
            "jpeg_quality": o.jpeg_quality,
            "image_detail": o.image_detail,
            "check_models": o.check_models,
        }

    def close(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # noqa: BLE001
                pass
            self._client = None
