"""Versioned prompt files of the EgoBench agent and simulated user, and the hard mode's
chit-chat sentences per scenario (YAML data, this project's own words)."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import yaml

from interactscope.core.errors import InteractScopeError


class PromptError(InteractScopeError, ValueError):
    """A prompt file that is missing or lacks a key; the message names the file and the fix."""


def load_versioned(base: Any, label: str, kind: str, version: str) -> dict[str, Any]:
    """``base / <kind>_<version>.yaml`` (a :mod:`importlib.resources` folder) as a mapping whose
    ``version`` key equals ``version``; ``label`` is the folder as named in messages.

    Raises:
        PromptError: no such file (the versions present are listed), or not a mapping with that
            version."""
    name = f"{kind}_{version}.yaml"
    path = base / name
    if not path.is_file():
        have = sorted(p.name for p in base.iterdir() if p.name.startswith(f"{kind}_"))
        raise PromptError(f"{label}/{name} not found; available: {', '.join(have) or 'none'}")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("version") != version:
        raise PromptError(f"{label}/{name}: must be a mapping with version: {version}")
    return data


@functools.lru_cache(maxsize=32)
def load_prompts(kind: str, version: str = "v1") -> dict[str, Any]:
    """The prompt file ``prompts/<kind>_<version>.yaml`` as a mapping (``kind``: agent|user).

    Raises:
        PromptError: no such file (the versions present are listed)."""
    return load_versioned(resources.files(__name__), "egobench/prompts", kind, version)


@functools.lru_cache(maxsize=8)
def load_chitchat(scenario: str) -> list[str]:
    """Task-unrelated, scenario-flavoured sentences for hard mode (``chitchat_<scenario>.yaml``).

    Raises:
        PromptError: no file for the scenario or an empty list."""
    path = resources.files(__name__) / f"chitchat_{scenario}.yaml"
    if not path.is_file():
        raise PromptError(f"no chit-chat file chitchat_{scenario}.yaml for scenario {scenario!r}")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    sentences = [str(s) for s in data.get("sentences") or []]
    if not sentences:
        raise PromptError(f"chitchat_{scenario}.yaml: 'sentences' is empty")
    return sentences
