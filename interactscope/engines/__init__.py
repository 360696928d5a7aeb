"""One chat interface over every model backend (messages with text, images, audio and tools in;
text, parsed tool calls and token counts out).

``load_engine(model_config)`` builds the engine a model config names: ``openai`` (any
OpenAI-compatible server), ``vllm`` (GPU), ``transformers`` (Qwen Omni thinkers, Qwen VL) and
``causal-lm`` / ``cascade`` / ``gguf`` (plain text causal LMs, e.g. the CPU SmolLM2 GGUF).
Backends are imported lazily, so heavy optional packages are needed only by the models that use
them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interactscope.core import registry as plugins
from interactscope.engines import base as _base

# the message types and helpers of the chat interface are this package's API: base.__all__ is
# the one list of them
from interactscope.engines.base import *  # noqa: F403
from interactscope.engines.base import Engine, EngineError
from interactscope.engines.config import merge_options, parse_options

__all__ = ["ENGINES", *_base.__all__, "engine_class", "load_engine"]

KIND = "engines"
for _name, _target in {
    "openai": "interactscope.engines.openai_compat:OpenAIEngine",
    "vllm": "interactscope.engines.vllm_engine:VLLMEngine",
    "transformers": "interactscope.engines.qwen_mm:QwenEngine",
    "causal-lm": "interactscope.engines.causal_lm:CausalLMEngine",
    "cascade": "interactscope.engines.causal_lm:CausalLMEngine",
    "gguf": "interactscope.engines.causal_lm:CausalLMEngine",
}.items():
    plugins.register(KIND, _name, _target)
ENGINES: dict[str, str] = plugins.table(KIND)
"""Backend name -> "module:Class" (the ``engines`` table of :mod:`interactscope.core.registry`;
``interactscope.engines`` entry points add more); each class has an ``Options`` model."""


def engine_class(backend: str) -> Any:
    """The engine class of ``backend``.

    Raises:
        EngineError: unknown backend (the known ones are listed).
    """
    if not plugins.registered(KIND, backend):
        raise EngineError(
            f"backend {backend!r} has no engine; engines: {', '.join(plugins.names(KIND))}"
        )
    return plugins.lookup(KIND, backend, what="engine")


def load_engine(
    model_config: Mapping[str, Any], overrides: Mapping[str, Any] | None = None, *, name: str = ""
) -> Engine:
    """The engine of a model config (the mapping of ``configs/models/NAME.yaml``).

    Args:
        model_config: needs ``backend``; the other keys are the backend's options (meta keys
            and the ``limits:``/``vllm:``/``transformers:`` groups as in the model configs).
        overrides: option overrides on top (``settings.adapter``).
        name: the model's name, used in messages (default: the config's ``model``/``checkpoint``).

    Raises:
        EngineError: no or unknown ``backend``; an unknown option (one line naming it and the
            valid ones); the backend's package missing (vLLM: at construction).
    """
    backend = model_config.get("backend")
    if not backend:
        raise EngineError(f"model config needs a 'backend' (one of {', '.join(sorted(ENGINES))})")
    cls = engine_class(str(backend))
    name = name or str(model_config.get("model") or model_config.get("checkpoint") or backend)
    where = f"model {name!r} (backend {backend})"
    options = parse_options(cls.Options, merge_options(model_config, overrides), where)
    return cls(options, name)
