"""Roles of the runs given to the report, read from each ``run.json``: a run with
``scene=none`` is a request-only run, one with ``history.n > 0`` or ``cooldown_s > 0`` a policy
control, one with ``grid.step_s != 1`` a schedule control; every other run is a main run. A
control is paired with the main run of the same model, benchmark and settings except its
control key."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from interactscope.streaming.analysis.runs import ScoredRun, non_default_settings

__all__ = ["CONTROL_KEYS", "classify", "pair_runs", "unique_labels"]

_ROLES: tuple[tuple[str, str, Callable[[Any], bool]], ...] = (
    # (role, its control key, when a non-default value of the key makes a run that control),
    # tried in this order
    ("scene-none", "scene", lambda v: v == "none"),
    ("history", "history.n", bool),
    ("cooldown", "cooldown_s", bool),
    ("schedule", "grid.step_s", lambda v: True),
)

CONTROL_KEYS: dict[str, str] = {role: key for role, key, _ in _ROLES}
"""Role → the setting that makes a run that control."""


def classify(run: ScoredRun) -> str:
    """``main``, ``scene-none``, ``history``, ``cooldown`` or ``schedule`` from the settings."""
    nd = non_default_settings(run.settings)
    for role, key, makes in _ROLES:
        if key in nd and makes(nd[key]):
            return role
    return "main"


def _base_settings(run: ScoredRun, role: str) -> dict[str, Any]:
    nd = dict(non_default_settings(run.settings))
    key = CONTROL_KEYS.get(role)
    if key:
        nd.pop(key, None)
    return nd


def pair_runs(runs: Sequence[ScoredRun]) -> dict[str, Any]:
    """Roles and control → main pairings.

    Returns ``{"roles": {label: role}, "pairs": [(role, main, control)], "unpaired": [label]}``;
    a control pairs with the main run of the same model and benchmark whose non-default
    settings equal the control's without its control key (``scene=none`` runs are the
    request-only runs of Table 8 whether or not they pair).
    """
    roles = {r.label: classify(r) for r in runs}
    mains = [r for r in runs if roles[r.label] == "main"]
    pairs, unpaired = [], []
    for r in runs:
        role = roles[r.label]
        if role == "main":
            continue
        base = _base_settings(r, role)
        match = [
            m
            for m in mains
            if m.model == r.model
            and m.fingerprint == r.fingerprint
            and _base_settings(m, "main") == base
        ]
        if match:
            pairs.append((role, match[0], r))
        else:
            unpaired.append(r.label)
    return {"roles": roles, "pairs": pairs, "unpaired": unpaired}


def unique_labels(runs: list[ScoredRun]) -> None:
    """Make labels unique in place (a repeated label gets its folder name appended)."""
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.label] = seen.get(r.label, 0) + 1
    for r in runs:
        if seen[r.label] > 1:
            r.label = f"{r.label} [{r.path.name}]"
