"""Model configs: ``--model NAME`` -> a YAML file -> its mapping, with where it came from.

Lookup order: ``$INTERACTSCOPE_CONFIGS``, ``./configs/models`` (local), then the configs bundled
with the package. A local config that shadows a bundled one of the same name is reported (the
caller warns on stderr), and the resolved path and its sha256 are recorded in ``run.json``.
In a clone ``./configs/models`` is a link to the bundled folder: it is the bundled folder, read
once as ``bundled`` (:func:`local_is_bundled`), so a file added there shadows nothing.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from interactscope.core.errors import InteractScopeError
from interactscope.core.files import FileReadError, exists, parse_yaml, read_bytes
from interactscope.core.resources import bundled_models_dir

__all__ = [
    "CONFIG_ENV",
    "BASELINE_BACKENDS",
    "ModelConfig",
    "ModelConfigError",
    "ResolvedModelConfig",
    "ModelSummary",
    "config_dirs",
    "local_is_bundled",
    "available_models",
    "resolve_model_config",
    "list_models",
]

CONFIG_ENV = "INTERACTSCOPE_CONFIGS"
BASELINE_BACKENDS = ("silent", "oracle", "blind-fire")

log = logging.getLogger(__name__)
_warned_env: set[str] = set()  # config_dirs runs per lookup: say a missing folder once


class ModelConfigError(InteractScopeError, ValueError):
    """A model config that cannot be found or read; the message names the file and the fix."""


class ResolvedModelConfig(BaseModel):
    """One resolved ``--model``: ``name``, the file it came from, its sha256 (hex), where it was
    found (``env``, ``local``, ``bundled`` or an explicit ``path``), the bundled file it shadows
    (if any) and the parsed mapping."""

    model_config = ConfigDict(frozen=True)

    name: str
    path: str
    sha256: str
    source: Literal["env", "local", "bundled", "path"]
    shadows: str | None = None
    config: dict[str, Any]

    @property
    def backend(self) -> str:
        """The config's ``backend`` (a name registered as kind ``backends`` / ``engines``)."""
        return str(self.config.get("backend") or "")


ModelConfig = ResolvedModelConfig
"""The typed model config every caller passes on (name, path, sha256, the YAML mapping)."""


class ModelSummary(BaseModel):
    """One row of ``interactscope models``."""

    name: str
    backend: str
    sees: str
    hears: str
    source: str
    path: str
    notes: str = ""


def config_dirs() -> list[tuple[str, Path]]:
    """``[(source, folder), ...]`` in lookup order; later folders are shadowed by earlier ones."""
    dirs: list[tuple[str, Path]] = []
    env = os.environ.get(CONFIG_ENV)
    if env:
        dirs.append(("env", Path(env)))
        if not Path(env).is_dir() and env not in _warned_env:
            _warned_env.add(env)
            log.warning(
                "$%s=%s is not a folder: no model configs are read from it (point it at a "
                "folder of NAME.yaml files, or unset it)",
                CONFIG_ENV,
                env,
            )
    dirs.append(("local", Path.cwd() / "configs" / "models"))
    dirs.append(("bundled", bundled_models_dir()))
    bundled = bundled_models_dir().resolve()
    seen: set[Path] = set()
    out = []
    for source, d in dirs:
        key = d.resolve()
        # Inside a checkout ./configs/models links to the bundled folder: list it once, as bundled.
        if key in seen or (source != "bundled" and key == bundled):
            continue
        seen.add(key)
        out.append((source, d))
    return out


def local_is_bundled() -> bool:
    """Whether ``./configs/models`` is the bundled folder itself (a clone links it there): files
    added to it are bundled configs, and shadowing needs ``$INTERACTSCOPE_CONFIGS`` or
    ``--model path/to/file.yaml``."""
    local = Path.cwd() / "configs" / "models"
    return local.is_dir() and local.resolve() == bundled_models_dir().resolve()


def available_models() -> list[str]:
    """Every config name found in :func:`config_dirs`, sorted."""
    names: set[str] = set()
    for _, d in config_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def _find(name: str) -> tuple[str, Path, str | None]:
    hits = [(src, d / f"{name}.yaml") for src, d in config_dirs() if (d / f"{name}.yaml").exists()]
    if not hits:
        where = ", ".join(str(d) for _, d in config_dirs())
        raise ModelConfigError(
            f"unknown model {name!r}; available: {', '.join(available_models()) or 'none'} "
            f"(configs are looked up in {where}; `interactscope models` lists them)"
        )
    source, path = hits[0]
    bundled = [p for src, p in hits[1:] if src == "bundled"]
    return source, path, (str(bundled[0]) if bundled else None)


def resolve_model_config(name: str) -> ResolvedModelConfig:
    """Resolve ``name`` (a config name or a path to a ``.yaml`` file).

    Raises:
        ModelConfigError: no such config (the message lists the available ones), unreadable file,
            invalid YAML, or no ``backend`` key.
    """
    shadows = None
    if name.endswith((".yaml", ".yml")) or os.sep in name:
        path, source = Path(name), "path"
        if not exists(path):
            raise ModelConfigError(f"model config {path} not found")
        name = path.stem
    else:
        source, path, shadows = _find(name)
    try:
        raw = read_bytes(path)
        cfg = parse_yaml(raw, path) or {}
    except FileReadError as exc:
        raise ModelConfigError(f"cannot read the model config {exc}") from None
    if not isinstance(cfg, dict) or "backend" not in cfg:
        raise ModelConfigError(f"{path}: field 'backend' is required")
    return ResolvedModelConfig(
        name=name,
        path=str(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        source=source,  # type: ignore[arg-type]
        shadows=shadows,
        config=cfg,
    )


def _senses(cfg: dict[str, Any]) -> tuple[str, str]:
    if cfg.get("backend") in BASELINE_BACKENDS:
        return "nothing (baseline)", "nothing (baseline)"
    mode = ((cfg.get("settings") or {}).get("audio") or {}).get("mode", "native")
    hears = {"native": "native audio", "asr": "ASR transcript", "none": "no audio"}.get(mode, mode)
    sees = "frames" if cfg.get("sees_pixels", True) else "no pixels"
    return sees, hears


def list_models() -> list[ModelSummary]:
    """One :class:`ModelSummary` per available config (the first found for each name)."""
    rows = []
    for name in available_models():
        try:
            r = resolve_model_config(name)
        except ModelConfigError as exc:
            rows.append(
                ModelSummary(
                    name=name, backend="?", sees="?", hears="?", source="?", path="", notes=str(exc)
                )
            )
            continue
        sees, hears = _senses(r.config)
        rows.append(
            ModelSummary(
                name=name,
                backend=str(r.config.get("backend")),
                sees=sees,
                hears=hears,
                source=r.source + (" (shadows bundled)" if r.shadows else ""),
                path=r.path,
                notes=str(r.config.get("notes", "")),
            )
        )
    return rows
