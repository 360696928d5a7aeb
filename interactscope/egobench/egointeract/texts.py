"""Versioned prompt files of EgoInteract (``prompts/<role>_<version>.yaml``, role ``service``
or ``auditor``; this project's own words)."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from interactscope.egobench.prompts import PromptError, load_versioned

REQUIRED = {
    "service": ("system", "text_tools", "correction", "stopped", "deferred", "view_frames"),
    "auditor": ("system", "request", "rules"),
}


@functools.lru_cache(maxsize=8)
def load_texts(role: str, version: str = "v1") -> dict[str, Any]:
    """The prompt file of ``role`` at ``version`` as a mapping.

    Raises:
        PromptError: no such file (the versions present are listed) or a required key missing."""
    base = resources.files(__package__) / "prompts"
    data = load_versioned(base, "egointeract/prompts", role, version)
    missing = [k for k in REQUIRED.get(role, ()) if k not in data]
    if missing:
        raise PromptError(
            f"egointeract/prompts/{role}_{version}.yaml: missing {', '.join(missing)}"
        )
    return data
