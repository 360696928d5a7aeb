"""Typed data of the EgoBench page (``interactscope view EGO_RUN``): the run's summary, scores
per variant and one entry per task (dialogue, tool calls, auditor verdicts, state diff)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AuditVerdict",
    "EgoCall",
    "EgoPageData",
    "EgoRunInfo",
    "EgoTask",
    "FieldChange",
    "TableDiff",
    "VariantScore",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VariantScore(_Model):
    """Ratios of one variant (fractions 0–1) as ``ego score`` writes them; ``variant`` is
    ``all`` for the pooled row."""

    variant: str
    scenario: str = ""
    n_tasks: int
    joint_succ: float
    micro_acc: float
    tool_succ: float
    result_succ: float
    matched: int
    total_gt: int
    error_classes: dict[str, int] = Field(default_factory=dict)


class EgoRunInfo(_Model):
    path: str
    agent: str
    user: str
    mode: str
    sees_pixels: dict[str, int] = Field(default_factory=dict)
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    score_source: str = ""
    score_settings: dict[str, Any] = Field(default_factory=dict)
    health: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


class EgoCall(_Model):
    """One executed (or malformed) agent call with its result."""

    turn: int
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool | None = None
    output: Any = None
    error: str | None = None
    error_kind: str | None = None
    ignored: list[str] = Field(default_factory=list)
    changed: bool = False
    malformed: str | None = None


class AuditVerdict(_Model):
    """An auditor verdict from the episode's evidence ledger (EgoInteract)."""

    seq: int = 0
    turn: int = 0
    attempt: int = 1
    verdict: str
    reason: str = ""
    proposal: str = ""
    calls: list[str] = Field(default_factory=list)
    revised: str | None = None
    unparseable: bool = False


class FieldChange(_Model):
    """One field of a row that differs; ``missing`` names the side without it."""

    row: str
    field: str
    gt: Any = None
    agent: Any = None
    missing: Literal["gt", "agent"] | None = None


class TableDiff(_Model):
    """Final state after the episode's calls against the state after the GT calls, one table."""

    table: str
    only_gt: dict[str, Any] = Field(default_factory=dict)
    only_agent: dict[str, Any] = Field(default_factory=dict)
    changed: list[FieldChange] = Field(default_factory=list)


class EgoTask(_Model):
    key: str
    variant: str
    task_id: int
    instruction: str = ""
    present: bool = True
    joint_succ: bool = False
    tool_succ: bool = False
    result_succ: bool = False
    matched: int = 0
    total_gt: int = 0
    error_class: str = ""
    note: str = ""
    stop_reason: str | None = None
    errors: list[str] = Field(default_factory=list)
    dialogue: list[dict[str, Any]] = Field(default_factory=list)
    calls: list[EgoCall] = Field(default_factory=list)
    gt_calls: list[dict[str, Any]] = Field(default_factory=list)
    has_ledger: bool = False
    verdicts: list[AuditVerdict] = Field(default_factory=list)
    user_verdicts: list[dict[str, Any]] = Field(default_factory=list)
    diff: list[TableDiff] = Field(default_factory=list)
    diff_note: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    other: EgoTask | None = None
    """With two runs: the same task in run B (shown beside this one)."""


class EgoPageData(_Model):
    """Everything the EgoBench page shows (template ``ego.html.j2``)."""

    page: str = "ego"
    title: str
    run: EgoRunInfo
    variants: list[VariantScore]
    overall: VariantScore | None = None
    tasks: list[EgoTask]
    other: EgoRunInfo | None = None
    """With two runs (``view RUN_A RUN_B``): run B; its scores in ``other_variants``."""
    other_variants: list[VariantScore] = Field(default_factory=list)
    other_overall: VariantScore | None = None
    gained: list[str] = Field(default_factory=list)
    """Task keys JointSucc in B and not in A (``lost``: the reverse), on the tasks both hold."""
    lost: list[str] = Field(default_factory=list)
    generated_by: str = "interactscope view"
