"""Model names (``configs/models/NAME.yaml``) resolved into chat engines for the EgoBench agent
and simulated user, with a one-line error for a name or config that cannot chat."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from interactscope.core.errors import InteractScopeError
from interactscope.core.model_configs import (
    ModelConfigError,
    available_models,
    resolve_model_config,
)
from interactscope.core.text import did_you_mean
from interactscope.engines import ENGINES, EngineError, load_engine


class ChatModelError(InteractScopeError, ValueError):
    """A model that cannot serve as an agent or user; one line naming it and the fix."""


class ChatModel(BaseModel):
    """A resolved model: name, config file and its sha256, backend, and whether it sees pixels
    (the config's ``sees_pixels``, default True)."""

    name: str
    path: str
    sha256: str
    backend: str
    sees_pixels: bool = True


def chat_model_names() -> list[str]:
    """Config names (``configs/models``) whose backend has a chat engine, sorted: the models
    that can be an EgoBench agent or user (streaming-only baselines such as ``silent`` or
    ``change-detector`` are left out; an unreadable config is left out too)."""
    out = []
    for name in available_models():
        try:
            backend = resolve_model_config(name).config.get("backend")
        except ModelConfigError:
            continue
        if backend in ENGINES:
            out.append(name)
    return out


def unknown_name(role: str, name: str, builtins: list[str]) -> ChatModelError | None:
    """The error for a ``role`` name (``--agent``) that is neither one of ``builtins`` nor a
    config name nor a ``.yaml`` path: it lists what ``role`` accepts (``builtins``, then the
    chat models of :func:`chat_model_names`) and the close matches (difflib); None for a
    known name."""
    if name.endswith((".yaml", ".yml")) or "/" in name or name in available_models():
        return None
    models = chat_model_names()
    mean = did_you_mean(name, [*builtins, *models])
    return ChatModelError(
        f"{role} {name!r}: unknown; expected one of {', '.join(builtins)} or a chat model "
        f"({', '.join(models) or 'none configured'}; `interactscope models` lists them){mean}"
    )


def resolve_chat_model(name: str, role: str) -> tuple[ChatModel, dict[str, Any]]:
    """Resolve ``name`` for ``role`` (``--agent``/``--user``) without building the engine.

    Raises:
        ChatModelError: unknown model, unreadable config, or a backend without a chat engine."""
    try:
        rc = resolve_model_config(name)
    except ModelConfigError as exc:
        raise ChatModelError(f"{role} {name!r}: {exc}") from None
    backend = str(rc.config.get("backend") or "")
    if backend not in ENGINES:
        raise ChatModelError(
            f"{role} {name!r} ({rc.path}) cannot chat: backend {backend!r} has no chat engine; "
            f"use a model whose backend is one of {', '.join(sorted(ENGINES))}"
        )
    info = ChatModel(
        name=rc.name,
        path=rc.path,
        sha256=rc.sha256,
        backend=backend,
        sees_pixels=bool(rc.config.get("sees_pixels", True)),
    )
    return info, dict(rc.config)


def load_chat_engine(name: str, role: str) -> tuple[Any, ChatModel]:
    """The engine of model ``name`` and its description.

    Raises:
        ChatModelError: as :func:`resolve_chat_model`, or the engine cannot be built (bad
            option, missing package), one line."""
    info, config = resolve_chat_model(name, role)
    try:
        engine = load_engine(config, name=info.name)
    except EngineError as exc:
        raise ChatModelError(f"{role} {name!r}: {str(exc).splitlines()[0]}") from None
    if not callable(getattr(engine, "chat", None)):
        raise ChatModelError(f"{role} {name!r}: its engine has no chat method")
    client = getattr(engine, "client", None)
    if callable(client):  # remote backends: a missing key or package shows before any episode
        try:
            client()
        except EngineError as exc:
            raise ChatModelError(f"{role} {name!r}: {str(exc).splitlines()[0]}") from None
    return engine, info
