"""Adapter registry: ``--model NAME`` -> model config (:mod:`interactscope.core.model_configs`) -> backend class.

A model config is data: ``backend`` (a name registered as kind ``backends``), ``checkpoint``, optional
``settings`` overrides merged into the run's Settings (e.g. ``audio: {mode: asr}``), and
backend options. Backends are imported lazily so that heavy optional dependencies (torch, vLLM,
openai) are needed only by the models that use them.
"""

from __future__ import annotations

import logging
from typing import Any

from interactscope.core import model_configs
from interactscope.core.registry import PluginError, UnknownPluginError, lookup, register
from interactscope.streaming.adapters.base import Adapter, AdapterError
from interactscope.streaming.settings import Settings, collection_strategy

log = logging.getLogger(__name__)

KIND = "backends"

BUILTIN_BACKENDS: dict[str, str] = {
    "silent": "interactscope.streaming.adapters.baselines:SilentAdapter",
    "oracle": "interactscope.streaming.adapters.baselines:OracleAdapter",
    "blind-fire": "interactscope.streaming.adapters.baselines:BlindFireAdapter",
    "change-detector": "interactscope.streaming.adapters.baselines:ChangeDetectorAdapter",
    "openai": "interactscope.streaming.adapters.openai_backend:OpenAIAdapter",
    "vllm": "interactscope.streaming.adapters.vllm_backend:VLLMAdapter",
    "transformers": "interactscope.streaming.adapters.transformers_backend:TransformersAdapter",
    "cascade": "interactscope.streaming.adapters.cascade:CascadeAdapter",
    # streaming models in their own loops (docs/protocol.md, "Streaming models")
    "livecc": "interactscope.streaming.adapters.livecc:LiveCCAdapter",
    "mmduet2": "interactscope.streaming.adapters.mmduet2:MMDuet2Adapter",
    "videollm-online": "interactscope.streaming.adapters.videollm_online:VideoLLMOnlineAdapter",
}
"""Backend name -> "module:Class" of the bundled backends, registered as kind ``backends`` of
:mod:`interactscope.core.registry`; a new backend is ``register("backends", NAME, "mod:Cls")``
or an entry point in the group ``interactscope.backends`` (docs/architecture.md)."""

for _name, _target in BUILTIN_BACKENDS.items():
    register(KIND, _name, _target)


def available_models() -> list[str]:
    """Every model config name that ``--model`` accepts (see :mod:`interactscope.core.model_configs`)."""
    return model_configs.available_models()


def load_model(name: str) -> model_configs.ModelConfig:
    """Resolve ``name`` (a config name or a path to a YAML file) to its typed model config
    (name, path, sha256, mapping). A local config that shadows a bundled one of the same name is
    said on stderr (logging WARNING).

    Raises:
        AdapterError: no such config (the message lists the available ones), bad YAML, or no
            ``backend`` key.
    """
    try:
        resolved = model_configs.resolve_model_config(name)
    except model_configs.ModelConfigError as exc:
        raise AdapterError(str(exc)) from None
    if resolved.shadows:
        log.warning(
            "model config %s shadows the bundled %s (remove or rename it to use the bundled one)",
            resolved.path,
            resolved.shadows,
        )
    return resolved


def load_model_config(name: str) -> tuple[str, dict[str, Any]]:
    """``(name, the config mapping)`` of :func:`load_model` (path and sha256 are on the typed
    :class:`~interactscope.core.model_configs.ModelConfig`).

    Raises:
        AdapterError: as :func:`load_model`.
    """
    m = load_model(name)
    return m.name, dict(m.config)


def adapter_class(backend: str) -> type[Adapter]:
    """The adapter class registered as ``backend``.

    Raises:
        AdapterError: unknown backend (the known ones listed) or its package is missing."""
    try:
        return lookup(KIND, backend, what="backend")
    except (UnknownPluginError, PluginError) as exc:
        raise AdapterError(str(exc)) from exc


def require_online_support(cls: type[Adapter], name: str, backend: str, settings: Settings) -> None:
    """Online Rolling needs an adapter with sessions (``supports_online``).

    Raises:
        AdapterError: ``protocol=online`` asked of a model whose backend has none."""
    if collection_strategy(settings) == "online" and not cls.supports_online:
        raise AdapterError(
            f"model {name!r} (backend {backend}) has no Online Rolling; use a model "
            "with backend transformers or openai (`interactscope models`), or protocol=offline"
        )


def build_adapter(name: str, config: dict[str, Any], settings: Settings) -> Adapter:
    return adapter_class(config["backend"])(name, config, settings)
