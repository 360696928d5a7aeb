"""Typed backend options, parsed once from a model config (``configs/models/NAME.yaml``).

A model config mixes three kinds of keys: *meta* keys read by the registry and the collector
(``backend``, ``notes``, ``settings``, ``batch_size``, ...), option *groups* whose contents count
as top-level options (``limits:``, ``vllm:``, ``transformers:``, ``options:``; one file can serve
two backends), and the backend's own options. :func:`merge_options` flattens the groups and lays
the run's ``settings.adapter`` overrides (``--set adapter.KEY=VALUE``) on top; :func:`parse_options`
validates the result against the backend's pydantic model, which forbids unknown keys, so a
typo is a one-line error naming the key and the valid ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from interactscope.engines.base import EngineError

__all__ = [
    "META_KEYS",
    "OPTION_GROUPS",
    "BackendOptions",
    "GenerationOptions",
    "merge_options",
    "parse_options",
]

META_KEYS = frozenset(
    {"backend", "notes", "settings", "batch_size", "sees_pixels", "description", "_path"}
)
"""Model-config keys that are not backend options."""

OPTION_GROUPS = ("limits", "vllm", "transformers", "options")
"""Groups whose keys count as top-level backend options. Precedence: a top-level key, then
``limits``, then the others (the order of this tuple)."""

OptionsT = TypeVar("OptionsT", bound=BaseModel)


class GenerationOptions(BaseModel):
    """Sampling settings (``generation:`` in a model config). ``None`` leaves the engine's
    default (``max_new_tokens`` differs per backend)."""

    model_config = ConfigDict(extra="forbid")

    max_new_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(0.0, ge=0)
    top_p: float | None = Field(None, gt=0, le=1)
    seed: int | None = None
    stop: str | list[str] | None = None


class BackendOptions(BaseModel):
    """Base of every backend's options: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    generation: GenerationOptions = Field(default_factory=GenerationOptions)


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) and k == "generation":
            out[k] = _deep_merge(dict(out[k]), v)
        else:
            out[k] = v
    return out


def merge_options(config: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> dict:
    """The backend options of ``config``: meta keys dropped, :data:`OPTION_GROUPS` flattened into
    the top level, then ``overrides`` (``settings.adapter``) on top; ``generation`` is merged key
    by key, other values are replaced."""
    opts: dict[str, Any] = {}
    for group in reversed(OPTION_GROUPS):
        inner = config.get(group)
        if isinstance(inner, Mapping):
            opts = _deep_merge(opts, inner)
        elif inner is not None:
            raise EngineError(f"model config: {group!r} must be a mapping of options")
    top = {
        k: v
        for k, v in config.items()
        # "_"-prefixed keys are provenance added by the config resolver (path, sha256).
        if k not in META_KEYS and k not in OPTION_GROUPS and not k.startswith("_")
    }
    return _deep_merge(_deep_merge(opts, top), overrides or {})


def _valid_keys(cls: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    model: Any = cls
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        ann = getattr(field, "annotation", None)
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return []
        model = ann
    return sorted(model.model_fields)


def parse_options(cls: type[OptionsT], options: Mapping[str, Any], where: str) -> OptionsT:
    """Validate merged options against ``cls``.

    Args:
        cls: the backend's options model.
        options: from :func:`merge_options`.
        where: names the source in messages, e.g. ``"model 'gpt-4o' (backend openai)"``.

    Raises:
        EngineError: one line per problem; an unknown key names the key and the valid keys, a
            bad value is named (its repr, cut at 60 characters) with what is valid.
    """
    try:
        return cls.model_validate(dict(options))
    except ValidationError as exc:
        lines = []
        for e in exc.errors():
            key = ".".join(str(p) for p in e["loc"])
            if e["type"] == "extra_forbidden":
                valid = ", ".join(_valid_keys(cls, e["loc"])) or "(none)"
                lines.append(
                    f"{where}: unknown option {key!r} (config or --set adapter.{key}); "
                    f"valid options: {valid}"
                )
            else:
                given = repr(e.get("input"))
                given = given if len(given) <= 60 else given[:57] + "..."
                lines.append(f"{where}: option {key!r} = {given}: {e['msg']}")
        raise EngineError("; ".join(lines)) from None
