"""Reference profiles: named sets of :class:`~interactscope.egobench.settings.ScoreSettings`.

``ours`` is this project's principled default. ``paper`` reproduces Wind-Flipped/EgoBench's
evaluator (the paper's tables) and ``egolink2026`` the EgoLink 2026 challenge's
(ego-link/egolink2026 ``code/track2/EgoBench/``, the one EgoInteract's numbers were scored with),
each with its tools' execution semantics. docs/egobench.md ("Reference profiles") cites the
official function every value comes from. New profiles register with :func:`register_profile`."""

from __future__ import annotations

from typing import Any

from interactscope.egobench.settings import ScoreSettings

_OFFICIAL_TOOLS: dict[str, Any] = {
    # the official tools are Python methods called with **parameters: no schema validation
    "arguments": "official",
    "kitchen_lists": "insertion",
    "empty_user_id": "accept",
    "shopping_names": "any",
    "set_meal_price": "stored",
    "unknown_restaurant": "create",
    "bool_is_number": True,
    "accept_arguments_key": False,
    "missing_log": "skip",
    "compare_errors": "official",
}

PROFILES: dict[str, dict[str, Any]] = {
    "ours": {},
    "paper": {
        **_OFFICIAL_TOOLS,
        "merge_duplicate_items": True,
        "merge_before_replay": True,
        "log_alignment": "id",
        "list_names": "casefold",
        "hash_numbers": "normalise",
        "error_classes": "paper",
    },
    "egolink2026": {
        **_OFFICIAL_TOOLS,
        "merge_duplicate_items": False,
        "log_alignment": "position",
        "list_names": "scenario",
        "hash_numbers": "as_stored",
        # FUZZY_KEYS: restaurant compares only dish_name by the name rule (set_meal_name exactly)
        "name_keys": {
            "restaurant": ("dish_name",),
            "order": ("dish_name", "restaurant_name"),
        },
    },
}
"""Profile name -> the settings it changes from ``ours``."""


def register_profile(name: str, overrides: dict[str, Any]) -> None:
    """Add a profile (settings changed from ``ours``); ValueError on an unknown setting."""
    ScoreSettings(**overrides)
    PROFILES[name] = dict(overrides)


def profile(name: str = "ours", **overrides: Any) -> ScoreSettings:
    """The settings of profile ``name`` with ``overrides`` applied.

    Raises:
        ValueError: unknown profile (the message lists the known ones)."""
    if name not in PROFILES:
        raise ValueError(
            f"unknown reference profile {name!r}; expected one of {', '.join(PROFILES)}"
        )
    return ScoreSettings(**{**PROFILES[name], **overrides})


TOOL_RULE_OVERRIDES = ("undeclared_params", "coerce_numeric_strings", "kitchen_numeric_strings")
"""Episode settings that override the reference profile's tool rules (``None``: the
profile's)."""

SCENARIO_RULES = {"kitchen_numeric_strings": "kitchen"}
"""Tool rules that act on one scenario's tools only: for a run without that scenario their
value changes nothing (resuming such a run does not compare them)."""


def run_profile(settings: dict[str, Any] | Any) -> ScoreSettings:
    """The settings an episode run executes with and is scored with: profile
    ``settings.reference`` (default ``ours``) with the run's non-null
    :data:`TOOL_RULE_OVERRIDES`. ``settings``: an ``EpisodeSettings`` or its dump
    (``run.json``'s ``settings``).

    Raises:
        ValueError: unknown profile."""
    raw = settings if isinstance(settings, dict) else settings.model_dump()
    return profile(
        raw.get("reference") or "ours",
        **{k: raw[k] for k in TOOL_RULE_OVERRIDES if raw.get(k) is not None},
    )
