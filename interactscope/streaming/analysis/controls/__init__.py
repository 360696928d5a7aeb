"""Evidence controls (paper Tables 8 and 10, Figure 3): do scores come from seeing the stream,
from the request text, or from the response policy?

Every control is registered by name in :data:`~.registry.CONTROLS` (``interactscope control
NAME`` and the report loop over it): ``request-prior`` and ``blind-fire`` (:mod:`.priors`),
``scene`` (:mod:`.scene`), ``policy`` (:mod:`.policy`) and ``schedule`` (:mod:`.schedule`). Each
returns a :class:`~.base.ControlResult` — a tidy table (raw numbers, CSV), a Markdown rendering
and ``meta`` (the runs it compared, their non-default settings, options) — whose ``write`` puts
``NAME.csv``, ``NAME.md`` and ``NAME.json`` into a folder.

Names are imported on first use, so the registry loads without the analysis code.
"""

from __future__ import annotations

import importlib
from typing import Any

from interactscope.streaming.analysis.controls.registry import (
    CONTROLS,
    ControlParam,
    ControlSpec,
    register,
    registered,
)

_LAZY = {
    "ControlResult": "base",
    "ReportInputs": "base",
    "ReportSink": "base",
    "BLIND_FIRE_DELAYS": "priors",
    "blind_fire": "priors",
    "constant_tool": "priors",
    "request_labels": "priors",
    "request_prior": "priors",
    "simulate_blind_fire": "priors",
    "TOLERANCES": "scene",
    "scene_ablation": "scene",
    "policy_controls": "policy",
    "schedule_control": "schedule",
}

__all__ = [
    "BLIND_FIRE_DELAYS",
    "CONTROLS",
    "ControlParam",
    "ControlResult",
    "ControlSpec",
    "ReportInputs",
    "ReportSink",
    "TOLERANCES",
    "blind_fire",
    "constant_tool",
    "policy_controls",
    "register",
    "registered",
    "request_labels",
    "request_prior",
    "scene_ablation",
    "schedule_control",
    "simulate_blind_fire",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
