"""The one chat interface every model backend implements.

An :class:`Engine` takes chat :class:`Message` values whose content is text, images, videos and
audio (our own decoded arrays, never file paths) and an optional tool catalogue, and returns a
:class:`ChatResult`: the text, the native tool calls parsed into name + arguments dict, token
counts and the wall time of the call.

Arrays: an image is ``(H, W, 3)`` uint8 RGB; a video is a list of such frames with their stream
times (s); audio is a ``(n,)`` float32 mono waveform with its sample rate (Hz).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from interactscope.core.errors import InteractScopeError
from interactscope.core.records import ToolCall, ToolSpec

__all__ = [
    "AudioPart",
    "ChatResult",
    "Engine",
    "EngineError",
    "ImagePart",
    "Message",
    "Part",
    "TextPart",
    "VideoPart",
    "GENERATION_KEYS",
    "as_messages",
    "chat_each",
    "generation_of",
    "hf_generate_kwargs",
    "prompt_dicts",
]


class EngineError(InteractScopeError, RuntimeError):
    """A model backend failed in a way that is not the model's answer (bad config, missing
    package or weights, transport error after retries, engine exception)."""


class _Part(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", frozen=True)


def _rgb(value: Any) -> np.ndarray:
    """``(H, W, 3)`` uint8 RGB; grey ``(H, W)`` and RGBA are converted, other shapes refused."""
    arr = np.asarray(value)
    if arr.ndim == 2:
        arr = np.stack([arr] * 3, axis=-1)
    if arr.ndim != 3 or arr.shape[-1] not in (3, 4):
        raise ValueError(f"image must be an (H, W, 3) uint8 RGB array, got shape {arr.shape}")
    if arr.shape[-1] == 4:
        arr = arr[..., :3]
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    return arr


class TextPart(_Part):
    """Plain text."""

    type: Literal["text"] = "text"
    text: str

    def prompt_dict(self) -> dict[str, Any]:
        """The prompt builder's dict form: ``{"type": "text", "text": str}``."""
        return {"type": "text", "text": self.text}


class ImagePart(_Part):
    """One image: a stream frame (``pts_s`` = its presentation time, s) or an attachment."""

    type: Literal["image"] = "image"
    image: np.ndarray
    pts_s: float | None = None
    attachment: bool = False

    @field_validator("image", mode="before")
    @classmethod
    def _image(cls, v: Any) -> np.ndarray:
        return _rgb(v)

    def prompt_dict(self) -> dict[str, Any]:
        """``{"type": "image", "image": (H, W, 3) uint8, "pts_s": s}`` (+ ``"attachment": True``)."""
        out: dict[str, Any] = {"type": "image", "image": self.image}
        if self.pts_s is not None:
            out["pts_s"] = self.pts_s
        if self.attachment:
            out["attachment"] = True
        return out


class VideoPart(_Part):
    """Stream frames sent as one video item; ``pts_s[i]`` is the stream time of ``frames[i]``.
    ``path``: the video file itself, for engines that take one (``video_file`` option; frames
    may then be empty)."""

    type: Literal["video"] = "video"
    frames: list[np.ndarray]
    pts_s: list[float] = Field(default_factory=list)
    path: str | None = None

    @field_validator("frames", mode="before")
    @classmethod
    def _frames(cls, v: list[Any]) -> list[np.ndarray]:
        return [_rgb(f) for f in v]

    def prompt_dict(self) -> dict[str, Any]:
        """``{"type": "video", "video": [(H, W, 3) uint8, ...], "pts_s": [s, ...]}``."""
        out: dict[str, Any] = {
            "type": "video",
            "video": list(self.frames),
            "pts_s": list(self.pts_s),
        }
        if self.path is not None:
            out["path"] = self.path
        return out


class AudioPart(_Part):
    """A mono waveform ``(n,)`` float32 at ``sample_rate`` Hz; ``stream``: the stream's own audio
    (the prompt dict's ``"role": "stream"``), not an attachment's."""

    type: Literal["audio"] = "audio"
    audio: np.ndarray
    sample_rate: int = Field(16000, gt=0)
    stream: bool = False

    @field_validator("audio", mode="before")
    @classmethod
    def _mono(cls, v: Any) -> np.ndarray:
        arr = np.asarray(v, dtype=np.float32)
        return arr if arr.ndim == 1 else arr.reshape(-1)  # the caller's array when it is one

    def prompt_dict(self) -> dict[str, Any]:
        """``{"type": "audio", "audio": (n,) float32, "sampling_rate": Hz}`` (+ ``"role": "stream"``)."""
        out: dict[str, Any] = {
            "type": "audio",
            "audio": self.audio,
            "sampling_rate": self.sample_rate,
        }
        if self.stream:
            out["role"] = "stream"
        return out


Part = TextPart | ImagePart | VideoPart | AudioPart


class Message(BaseModel):
    """One chat turn. ``content`` is a string or a list of parts in prompt order; an assistant
    turn may carry the native ``tool_calls`` it made and a ``tool`` turn the ``tool_call_id`` of
    the call whose result it holds."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[Part] = ""
    tool_calls: list[ToolCall] = Field(default_factory=list, description="assistant's calls")
    tool_call_ids: list[str] = Field(default_factory=list, description="ids of tool_calls")
    tool_call_id: str | None = Field(None, description="role tool: the call this answers")

    def parts(self) -> list[Part]:
        """The content as parts (a string becomes one :class:`TextPart`)."""
        if isinstance(self.content, str):
            return [TextPart(text=self.content)] if self.content else []
        return list(self.content)

    def text(self) -> str:
        """The text parts joined (media parts left out)."""
        return "".join(p.text for p in self.parts() if isinstance(p, TextPart))

    def prompt_dict(self) -> dict[str, Any]:
        """The prompt builder's dict form (``{"role", "content": str | [part dicts]}``, the tool
        keys only when set): what :func:`as_messages` reads back into this message."""
        content = self.content
        out: dict[str, Any] = {
            "role": self.role,
            "content": content if isinstance(content, str) else [p.prompt_dict() for p in content],
        }
        if self.tool_calls:
            out["tool_calls"] = list(self.tool_calls)
        if self.tool_call_ids:
            out["tool_call_ids"] = list(self.tool_call_ids)
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


class ChatResult(BaseModel):
    """One answer. ``tool_calls`` are the backend's native calls, parsed (``tool_call_errors``
    says what could not be parsed); ``latency_s`` is the wall time of the call in seconds;
    ``raw`` holds backend facts worth recording (finish reason, frame counts, ...)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_errors: list[str] = Field(default_factory=list)
    tool_call_ids: list[str] = Field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    raw: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    """What every backend implements (see the module docstring).

    ``generation`` keyword arguments override the engine's configured defaults for one call:
    ``max_new_tokens``, ``temperature``, ``top_p``, ``seed``, ``stop``."""

    name: str

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] | None = None,
        **generation: Any,
    ) -> ChatResult: ...

    def chat_batch(
        self,
        conversations: Sequence[Sequence[Message]],
        tools: Sequence[ToolSpec] | None = None,
        **generation: Any,
    ) -> list[ChatResult | EngineError]: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def chat_each(
    engine: Any,
    conversations: Sequence[Sequence[Message]],
    tools: Sequence[ToolSpec] | None = None,
    **generation: Any,
) -> list[ChatResult | EngineError]:
    """``chat_batch`` for engines that do not batch: one ``chat`` per conversation; a failure
    fills that slot with its :class:`EngineError` and the others are still answered."""
    out: list[ChatResult | EngineError] = []
    for conv in conversations:
        try:
            out.append(engine.chat(conv, tools, **generation))
        except EngineError as exc:
            out.append(exc)
        except Exception as exc:  # noqa: BLE001 - one failed conversation fails its slot only
            err = EngineError(f"{type(exc).__name__}: {exc}")
            err.__cause__ = exc
            out.append(err)
    return out


GENERATION_KEYS = ("max_new_tokens", "temperature", "top_p", "seed", "stop")
"""The generation options a call may override (``chat(..., **generation)``)."""


def generation_of(defaults: BaseModel, generation: dict[str, Any]) -> dict[str, Any]:
    """The generation options of one call: the model config's ``defaults`` (its ``generation``
    block) updated with the call's ``generation``.

    Raises:
        EngineError: a key that is not one of :data:`GENERATION_KEYS`.
    """
    unknown = sorted(set(generation) - set(GENERATION_KEYS))
    if unknown:
        raise EngineError(f"unknown generation option(s) {unknown}; valid: {GENERATION_KEYS}")
    g = defaults.model_dump()
    g.update(generation)
    return g


def hf_generate_kwargs(
    defaults: BaseModel, generation: dict[str, Any], max_new_tokens: int, *, top_p: bool
) -> dict[str, Any]:
    """``transformers`` ``generate`` keyword arguments of one call (see :func:`generation_of`):
    ``max_new_tokens`` (``max_new_tokens`` when unset), greedy at temperature 0, else sampling
    at that temperature (and with ``top_p`` when ``top_p`` is true and the option is set)."""
    g = generation_of(defaults, generation)
    kw: dict[str, Any] = {"max_new_tokens": int(g["max_new_tokens"] or max_new_tokens)}
    if float(g["temperature"] or 0) > 0:
        kw.update(do_sample=True, temperature=float(g["temperature"]))
        if top_p and g["top_p"] is not None:
            kw["top_p"] = float(g["top_p"])
    else:
        kw.update(do_sample=False)
    return kw


def _part(p: Any) -> Part:
    if isinstance(p, (TextPart, ImagePart, VideoPart, AudioPart)):
        return p
    if isinstance(p, str):
        return TextPart(text=p)
    kind = p.get("type")
    if kind == "text":
        return TextPart(text=str(p.get("text", "")))
    if kind == "image":
        return ImagePart(
            image=p["image"], pts_s=p.get("pts_s"), attachment=bool(p.get("attachment"))
        )
    if kind == "video":
        frames = p.get("video", p.get("frames"))
        frames = [f["image"] if isinstance(f, dict) else f for f in frames]
        return VideoPart(frames=frames, pts_s=list(p.get("pts_s") or []), path=p.get("path"))
    if kind == "audio":
        sr = p.get("sample_rate", p.get("sampling_rate")) or 16000
        return AudioPart(audio=p["audio"], sample_rate=int(sr), stream=p.get("role") == "stream")
    raise EngineError(f"prompt part of type {kind!r} is not supported (text, image, video, audio)")


def as_messages(messages: Sequence[Any]) -> list[Message]:
    """Messages from :class:`Message` values or the dict shape of the prompt builder
    (``{"role", "content": str | [{"type": "text"|"image"|"video"|"audio", ...}]}``; audio may
    name its rate ``sampling_rate``).

    Raises:
        EngineError: an unknown part type or a malformed array, naming message and part.
    """
    out: list[Message] = []
    for i, m in enumerate(messages):
        if isinstance(m, Message):
            out.append(m)
            continue
        content = m.get("content", "")
        try:
            parts = content if isinstance(content, str) else [_part(p) for p in content]
            out.append(
                Message(
                    role=m.get("role", "user"),
                    content=parts,
                    tool_calls=m.get("tool_calls") or [],
                    tool_call_ids=m.get("tool_call_ids") or [],
                    tool_call_id=m.get("tool_call_id"),
                )
            )
        except ValidationError as exc:
            e = exc.errors()[0]
            loc = ".".join(str(x) for x in e["loc"])
            raise EngineError(f"message {i}: {loc}: {e['msg']}") from None
        except (KeyError, ValueError) as exc:
            raise EngineError(f"message {i}: missing or bad field {exc}") from None
    return out


def prompt_dicts(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Messages in the prompt builder's dict form (:meth:`Message.prompt_dict`; dicts pass
    through): the inverse of :func:`as_messages`, so ``as_messages(prompt_dicts(m))`` is ``m``.
    The form adapters that edit prompts in place and the JSON previews use."""
    return [m.prompt_dict() if isinstance(m, Message) else m for m in messages]
