"""Adapter registry: ``--model NAME`` -> ``configs/models/NAME.yaml`` -> backend class.

A model config is data: ``backend`` (a key of ``BACKENDS``), ``checkpoint``, optional
``settings`` overrides merged into the run's Settings (e.g. ``audio: {mode: asr}``), and
backend options. Backends are imported lazily so that heavy optional dependencies (torch, vLLM,
openai) are needed only by the models that use them.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import yaml

from interactscope.adapters.base import Adapter, AdapterError
from interactscope.settings import Settings

BACKENDS: dict[str, str] = {
    "silent": "interactscope.adapters.baselines:SilentAdapter",
    "oracle": "interactscope.adapters.baselines:OracleAdapter",
    "blind-fire": "interactscope.adapters.baselines:BlindFireAdapter",
    "openai": "interactscope.adapters.openai_backend:OpenAIAdapter",
    "vllm": "interactscope.adapters.vllm_backend:VLLMAdapter",
    "transformers": "interactscope.adapters.transformers_backend:TransformersAdapter",
    "cascade": "interactscope.adapters.cascade:CascadeAdapter",
}
"""Backend name -> "module:Class". Add new backends here."""

CONFIG_ENV = "INTERACTSCOPE_CONFIGS"


def config_dirs() -> list[Path]:
    """Where model configs are looked up, in order: ``$INTERACTSCOPE_CONFIGS``, ``./configs/models``,
    the ``configs/models`` folder of the interactscope checkout."""
    dirs = []
    if os.environ.get(CONFIG_ENV):
        dirs.append(Path(os.environ[CONFIG_ENV]))
    dirs.append(Path.cwd() / "configs" / "models")
    dirs.append(Path(__file__).resolve().parents[2] / "configs" / "models")
    seen, out = set(), []
    for d in dirs:
        if d.resolve() not in seen:
            seen.add(d.resolve())
            out.append(d)
    return out


def available_models() -> list[str]:
    names: set[str] = set()
    for d in config_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def load_model_config(name: str) -> tuple[str, dict[str, Any]]:
    """Resolve ``name`` (a config name or a path to a YAML file) to (name, config mapping).

    Raises:
        AdapterError: no such config (the message lists the available ones), bad YAML, or no
            ``backend`` key.
    """
    path: Path | None = None
    if name.endswith((".yaml", ".yml")) or os.sep in name:
        path = Path(name)
        if not path.exists():
            raise AdapterError(f"model config {path} not found")
        name = path.stem
    else:
        for d in config_dirs():
            if (d / f"{name}.yaml").exists():
                path = d / f"{name}.yaml"
                break
    if path is None:
        raise AdapterError(
            f"unknown model {name!r}; available: {', '.join(available_models()) or 'none'} "
            f"(configs are looked up in {', '.join(str(d) for d in config_dirs())})"
        )
    try:
        cfg = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise AdapterError(f"{path}: invalid YAML ({exc})") from exc
    if not isinstance(cfg, dict) or "backend" not in cfg:
        raise AdapterError(f"{path}: field 'backend' is required (one of {sorted(BACKENDS)})")
    cfg["_path"] = str(path)
    return name, cfg


def adapter_class(backend: str) -> type[Adapter]:
    if backend not in BACKENDS:
        raise AdapterError(f"unknown backend {backend!r}; known: {', '.join(sorted(BACKENDS))}")
    module, cls = BACKENDS[backend].split(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise AdapterError(
            f"backend {backend!r} needs a package that is not installed ({exc}); "
            "see the README's Models section for the extra to install"
        ) from exc
    return getattr(mod, cls)


def build_adapter(name: str, config: dict[str, Any], settings: Settings) -> Adapter:
    return adapter_class(config["backend"])(name, config, settings)
