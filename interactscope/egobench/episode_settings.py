"""Named settings of an EgoBench episode run; every one is recorded in ``run.json``
(docs/egobench.md, "Settings")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from interactscope.core.settings import (
    LegacyRule,
    apply_overrides,
    fill_legacy,
    unknown_setting_hint,
)
from interactscope.egobench.profiles import PROFILES, TOOL_RULE_OVERRIDES, run_profile

Mode = Literal["easy", "hard", "static"]


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LimitSettings(_Group):
    """When an episode stops besides the user's ``STOP``."""

    max_user_turns: int = Field(10, ge=1, description="user messages per episode at most")
    max_tool_calls: int = Field(200, ge=1, description="executed agent tool calls at most")


class EpisodeFrameSettings(_Group):
    """Frames of the task video shown to the agent."""

    fps: float = Field(
        1.0,
        gt=0,
        le=1,
        description="frames per second of video (<= 1: the decoder keeps 1 fps samples)",
    )
    max: int = Field(32, ge=1, description="frames at most (the streaming cap)")
    cap_policy: Literal["uniform", "recent"] = "uniform"
    max_side: int | None = Field(
        None, ge=16, description="downscale so the long side is <= this (px)"
    )
    every_turn: bool = Field(
        False, description="send the frames with every user message (reference: first only)"
    )
    missing_video: Literal["description", "fail"] = Field(
        "description",
        description="video file absent: send image_description as text, or fail the episode",
    )


class AgentSettings(_Group):
    """How the model agent talks to its engine."""

    tool_mode: Literal["auto", "native", "text"] = Field(
        "auto",
        description="auto: native tool calling where the engine offers it, else a JSON array in text",
    )
    prompt_version: str = "v1"
    max_new_tokens: int | None = Field(
        None, ge=1, description="per agent call (None: engine default)"
    )
    video: Literal["frames", "file"] = Field(
        "frames",
        description="frames: decoded frames under the cap; file: the video file itself, for "
        "engines that take video (engine flag takes_video_file), else frames",
    )


class UserSettings(_Group):
    """The simulated user (Actor / Evaluator / Summarizer)."""

    prompt_version: str = "v1"
    evaluator: bool = Field(True, description="check each Actor message on the four criteria")
    max_rewrites: int = Field(3, ge=0, description="Actor rewrites after a failed verdict")
    summarizer: bool = True
    summary_sentences: int = Field(3, ge=1)
    chitchat: Literal["append", "prompt"] = Field(
        "append",
        description="hard mode: append one scenario chit-chat sentence to each message, or only ask the Actor to add one",
    )
    seed: int = Field(0, description="picks the chit-chat sentences")
    max_new_tokens: int | None = Field(None, ge=1)
    scripted_opening: Literal["request", "instruction"] = Field(
        "request",
        description="--user scripted's message: request (date + user id + a generic request; "
        "the hidden Instruction is never shown) or instruction (the Instruction verbatim)",
    )


class EpisodeSettings(_Group):
    """Every knob of an episode run (``--set KEY=VALUE`` with dotted keys)."""

    mode: Mode = "easy"
    runner: Literal["ours", "official"] = Field(
        "ours",
        description="episode loop: ours (documented departures) or official (run/multi_agent.py "
        "parity, easy mode only; docs/egobench.md, 'Runner profiles')",
    )
    limits: LimitSettings = Field(default_factory=LimitSettings)
    frames: EpisodeFrameSettings = Field(default_factory=EpisodeFrameSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    user: UserSettings = Field(default_factory=UserSettings)
    reference: str = Field(
        "ours",
        description="reference profile whose tool rules the environment executes with (ours, paper, egolink2026); `ego score RUN` replays with the same rules",
    )
    undeclared_params: Literal["drop", "reject"] | None = Field(
        None, description="override of the profile's rule for undeclared tool arguments"
    )
    coerce_numeric_strings: bool | None = Field(
        None, description="override of the profile's numeric-string rule"
    )
    kitchen_numeric_strings: Literal["float", "reject"] | None = Field(
        None,
        description="override of the profile's kitchen quantity rule (float: numeric strings "
        "converted as the official kitchen tools do; reject: ours before the rule)",
    )

    @field_validator("reference")
    @classmethod
    def _known_profile(cls, v: str) -> str:

        if v not in PROFILES:
            raise ValueError(
                f"unknown reference profile {v!r}; expected one of {', '.join(PROFILES)}"
            )
        return v


def _scripted_opening(old: Any, new: dict[str, Any]) -> Any:
    # the default scripted user (no script file) sent the Instruction; for any other user
    # the setting does nothing, so it takes the resuming run's value
    if old.user.get("kind") == "scripted" and not old.user.get("script"):
        return "instruction"
    return (new.get("user") or {}).get("scripted_opening")


LEGACY_DEFAULTS: dict[str, Any] = {
    # before `reference` (commit cc45199) every run executed its tools with ours' rules plus
    # its recorded undeclared_params / coerce_numeric_strings
    "reference": "ours",
    # before kitchen's numeric-string quantities became floats (the official tools' rule), ours
    # rejected them: kitchen GT writes failed and were missing from the GT state
    "kitchen_numeric_strings": "reject",
    "user.scripted_opening": LegacyRule(_scripted_opening),
}
"""Settings added after run folders were written, each with the value that reproduces what a
run written before it did (:func:`interactscope.core.settings.fill_legacy`): a ``run.json``
without ``reference`` reads as ``ours``, without ``kitchen_numeric_strings`` as ``reject``; one without ``user.scripted_opening`` is compared,
on resume, as ``instruction`` for the default scripted user and as the resuming run's value for
any other user (docs/egobench.md, "Settings")."""


def with_legacy_defaults(
    settings: dict[str, Any], old: Any = None, new: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``settings`` (``run.json``'s) with every key of :data:`LEGACY_DEFAULTS` it lacks set
    to that old default; the keys it has are kept as they are. The rules that depend on the
    run (``user.scripted_opening``) apply only with ``old`` (that run's manifest) and ``new``
    (the settings of the run compared with it)."""
    return fill_legacy(settings, LEGACY_DEFAULTS, old=old, new=new)


SETTINGS_DOCS = 'docs/egobench.md, section "Settings (`--set KEY=VALUE`, recorded in `run.json`)"'
"""Where every episode setting is documented (named in the unknown-``--set`` message)."""

OFFICIAL_DEFAULTS: dict[str, Any] = {
    "user.evaluator": False,  # run/multi_agent.py: --multi_agent_user is store_true (off)
    "user.summarizer": False,  # --summary_user is store_true (off)
    "user.max_rewrites": 1,  # run/utils.py check_user_contradiction corrects once
    "agent.tool_mode": "text",  # tool schema in SERVICE_AGENT_PROMPT_BASE, calls read from text
}
"""Settings ``runner=official`` changes (docs/egobench.md, "Runner profiles")."""


def resolve_tool_rules(settings: EpisodeSettings) -> EpisodeSettings:
    """``settings`` with each tool-rule override (:data:`~interactscope.egobench.profiles
    .TOOL_RULE_OVERRIDES`; ``None``: the profile's) set to the rule the episodes execute with
    (:func:`~interactscope.egobench.profiles.run_profile`), so a new ``run.json`` records what
    ``summary.json`` reports (``kitchen_numeric_strings: float`` under ``ours``, not ``null``).
    The rules are the same either way: ``run_profile`` of the result equals that of the input."""
    rules = run_profile(settings)
    return settings.model_copy(update={k: getattr(rules, k) for k in TOOL_RULE_OVERRIDES})


def build_settings(mode: str, overrides: dict[str, Any] | None = None) -> EpisodeSettings:
    """Settings for ``mode`` with dotted ``overrides`` (``{"limits.max_user_turns": 5}``), the
    tool-rule overrides resolved (:func:`resolve_tool_rules`).

    ``runner=official`` starts from :data:`OFFICIAL_DEFAULTS` (the official runner's
    defaults); explicit overrides still win.

    Raises:
        ValueError: an unknown key or a bad value, one line naming it; ``runner=official``
            with a mode other than easy."""
    overrides = dict(overrides or {})
    base = EpisodeSettings().model_dump()
    if overrides.get("runner") == "official":
        base = apply_overrides(base, OFFICIAL_DEFAULTS)
    raw = apply_overrides(base, {"mode": mode, **overrides})
    if raw.get("runner") == "official" and raw.get("mode") != "easy":
        raise ValueError(
            f"--set runner=official: easy mode only (got --mode {mode}); the parity profile "
            "reproduces the official interactive easy loop"
        )
    try:
        return resolve_tool_rules(EpisodeSettings.model_validate(raw))
    except ValidationError as exc:
        e = exc.errors()[0]
        key = ".".join(str(p) for p in e["loc"])
        if key == "mode":
            raise ValueError(f"--mode {mode!r}: expected easy, hard or static") from None
        if e["type"] == "extra_forbidden":
            hint = unknown_setting_hint(EpisodeSettings, e["loc"])
            raise ValueError(
                f"unknown episode setting {key!r}{hint} (every setting: {SETTINGS_DOCS})"
            ) from None
        raise ValueError(f"episode setting {key!r}: {e['msg']}") from None
