"""Files that ship inside the package (model configs, the demo benchmark) and the user cache.

Everything is found through :mod:`importlib.resources`, so a non-editable ``pip install .`` works
from any directory; nothing here writes into the installed package (writable copies go to
:func:`cache_dir`).
"""

from __future__ import annotations

import os
from importlib import resources
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = [
    "bundled_models_dir",
    "cache_dir",
    "demo_benchmark_dir",
    "demo_env_benchmark_dir",
    "package_version",
]


def _data_dir() -> Path:
    # Packages installed from a wheel or a checkout are plain folders: as_file is not needed.
    return Path(str(resources.files("interactscope") / "data"))


def bundled_models_dir() -> Path:
    """The folder of the model configs shipped with the package (``NAME.yaml`` each)."""
    return _data_dir() / "models"


def demo_benchmark_dir() -> Path:
    """The bundled demo benchmark folder (``benchmark.json`` + ``interactions.jsonl``)."""
    return _data_dir() / "demo"


def demo_env_benchmark_dir() -> Path:
    """The bundled environment demo benchmark folder (T1 interactions on EgoBench databases)."""
    return _data_dir() / "demo-env"


def cache_dir() -> Path:
    """The user's writable cache: ``$INTERACTSCOPE_CACHE``, else ``$XDG_CACHE_HOME/interactscope``,
    else ``~/.cache/interactscope``. Created on first use."""
    env = os.environ.get("INTERACTSCOPE_CACHE")
    if env:
        root = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "interactscope"
    root.mkdir(parents=True, exist_ok=True)
    return root


def package_version() -> str:
    """The installed distribution's version (``importlib.metadata``); ``0+unknown`` when the
    package runs from a tree that was never installed."""
    try:
        return version("interactscope")
    except PackageNotFoundError:
        return "0+unknown"
