"""Named settings of the EgoInteract policy and how ``--agent egointeract:...`` spells them.

Spec grammar: ``egointeract:SERVICE_MODEL[,AUDITOR_MODEL][,KEY=VALUE...]``, e.g.
``egointeract:cascade``, ``egointeract:gpt-4o,gpt-4o,auditor=false``,
``egointeract:cascade,scene_rules=false,on_max_corrections=execute``. Every setting is
recorded in ``run.json`` (under ``agent.egointeract``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class EgoInteractSettings(BaseModel):
    """Every knob of the policy. ``auditor`` / ``scene_rules`` are the two ablations; the
    correction limit of 5 is the source's ("at most five rounds of correction")."""

    model_config = ConfigDict(extra="forbid")

    service_model: str = Field(..., description="model name of the service agent")
    auditor_model: str | None = Field(None, description="model of the auditor (None: the same)")
    auditor: bool = Field(True, description="audit writes and final replies (ablation: false)")
    scene_rules: bool = Field(True, description="per-scenario guidance in prompts (ablation)")
    frames: Literal["on_demand", "first_turn", "every_turn"] = Field(
        "on_demand",
        description="on_demand: frames only after the service agent calls view_frames; "
        "first_turn: with the first user message (the plain agent's rule)",
    )
    max_corrections: int = Field(5, ge=0, le=20, description="rejections per proposal at most")
    on_max_corrections: Literal["execute", "stop"] = Field(
        "stop",
        description="after the last allowed rejection: execute the proposal anyway, or drop it "
        "and tell the user the step could not be verified",
    )
    mixed_batch: Literal["split"] = Field(
        "split",
        description="a batch starting with reads runs those reads and hands the rest back",
    )
    auditor_temperature: float = Field(0.0, ge=0, description="generation temperature")
    ledger_output_chars: int = Field(
        1200, ge=80, description="characters of each tool output the auditor is shown"
    )
    prompt_version: str = "v1"

    @property
    def auditor_name(self) -> str:
        """The auditor's model name (the service model when unset)."""
        return self.auditor_model or self.service_model

    @property
    def label(self) -> str:
        """The ablation this is: ``full``, ``no_auditor``, ``no_rules`` or ``neither``."""
        return {
            (True, True): "full",
            (False, True): "no_auditor",
            (True, False): "no_rules",
            (False, False): "neither",
        }[(self.auditor, self.scene_rules)]


def _value(text: str) -> object:
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    return text.strip()


def parse_spec(spec: str) -> EgoInteractSettings:
    """Settings from what followed ``egointeract:`` (see the module docstring).

    Raises:
        ValueError: no service model, more than two model names, an unknown key or a bad value;
            one line naming it and the grammar."""
    grammar = "use --agent egointeract:MODEL[,AUDITOR_MODEL][,key=value...]"
    models, fields = [], {}
    for item in (p.strip() for p in spec.split(",") if p.strip()):
        if "=" in item:
            key, _, value = item.partition("=")
            fields[key.strip()] = _value(value)
        else:
            models.append(item)
    if not models or len(models) > 2:
        raise ValueError(f"{_flag(spec)}: name one or two models; {grammar}")
    fields.setdefault("service_model", models[0])
    if len(models) == 2:
        fields.setdefault("auditor_model", models[1])
    try:
        return EgoInteractSettings.model_validate(fields)
    except ValidationError as exc:
        e = exc.errors()[0]
        key = ".".join(str(p) for p in e["loc"])
        reason = "unknown setting" if e["type"] == "extra_forbidden" else e["msg"]
        raise ValueError(f"{_flag(spec)}: {key}: {reason}; {grammar}") from None


def _flag(spec: str) -> str:
    """``--agent egointeract:SPEC`` as typed (``--agent egointeract`` when SPEC is empty, never
    ``egointeract::``)."""
    return f"--agent egointeract:{spec}" if spec.strip() else "--agent egointeract"
