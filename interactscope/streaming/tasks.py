"""The task groups T1–T8-C and the target outcomes, defined once (docs/protocol.md, task groups).

Every module that needs to know which tasks exist, how a task is scored, which content check it
uses, whether it enters the six-task mean or has guidance sequences, looks it up here instead of
writing task literals:

>>> task_spec("T8-C").scoring_rule
'matching'
>>> SIX_TASK_MEAN_TASKS
('T1', 'T2', 'T3', 'T4', 'T6', 'T7')
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "ALLOCATION_TASKS",
    "ASSISTANCE_TASKS",
    "EXPLICIT_TASKS",
    "OUTCOMES",
    "SEQUENCE_TASKS",
    "SIX_TASK_MEAN_TASKS",
    "TASKS",
    "TASK_SPECS",
    "TOOL_TASKS",
    "UNSCORED_OUTCOMES",
    "Outcome",
    "Panel",
    "TaskSpec",
    "panel_of",
    "task_spec",
]

Panel = Literal["explicit", "assistance"]
ScoringRule = Literal["allocation", "matching"]
ContentCheck = Literal["toolset", "judge"]

Outcome = Literal["hit", "premature", "wrong", "late", "missed", "unjudged", "infra_error"]
OUTCOMES: tuple[str, ...] = (
    "hit",
    "premature",
    "wrong",
    "late",
    "missed",
    "unjudged",
    "infra_error",
)
"""Outcome of one target, in the order of the failure breakdown: ``hit`` (eligible and correct),
``premature`` (the consumed group opened before the window), ``wrong`` (in time, content check
failed), ``late`` (the group opened after the window), ``missed`` (no response in the region),
``unjudged`` (the judge's verdict could not be parsed: excluded from numerator and denominator),
``infra_error`` (every decision point that could have served the target is an infrastructure-error
record: not the model's failure, so excluded from numerator and denominator and counted in
``health.infra_error_targets``; docs/protocol.md, which records count as responses)."""

UNSCORED_OUTCOMES: tuple[str, ...] = ("unjudged", "infra_error")
"""Outcomes left out of every numerator and denominator."""


class TaskSpec(BaseModel):
    """One task group.

    Attributes:
        id: ``T1`` … ``T7``, ``T8-A``, ``T8-B``, ``T8-C``.
        panel: ``explicit`` (a spoken request at q) or ``assistance`` (T8: no explicit request).
        scoring_rule: ``allocation`` (first-response allocation) or ``matching``
            (order-preserving maximum matching).
        content_check: ``toolset`` (exact tool-name set) or ``judge`` (text judge).
        in_six_task_mean: averaged into the six-task balanced mean (Avg(6)).
        has_sequences: episodes are ordered guidance steps (Complete T8-C, permutation reference).
        description: one line, what the task asks of a model.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    panel: Panel
    scoring_rule: ScoringRule
    content_check: ContentCheck
    in_six_task_mean: bool
    has_sequences: bool
    description: str


_TABLE = (
    # id, in Avg(6), content is the tool-name set, ordered steps, what it asks;
    # T8-* are the assistance panel (matching), the others explicit (allocation)
    ("T1", True, True, False, "call the requested tools when the asked-for moment comes"),
    ("T2", True, False, False, "notify when the announced event happens"),
    ("T3", True, False, False, "interject on a risk or an error as it happens"),
    ("T4", True, False, False, "report a cumulative state (a count, a total) when it is reached"),
    ("T5", False, False, False, "answer when a stated time condition holds"),
    ("T6", True, False, False, "react to a non-verbal or workflow cue"),
    ("T7", True, False, False, "respond continuously, each time the condition recurs"),
    ("T8-A", False, False, False, "remind without being asked (query-free reminders)"),
    ("T8-B", False, False, False, "answer a question whose answer appears later in the stream"),
    ("T8-C", False, False, True, "guide through ordered steps, each when it is due"),
)

TASK_SPECS: dict[str, TaskSpec] = {
    task: TaskSpec(
        id=task,
        panel="assistance" if task.startswith("T8") else "explicit",
        scoring_rule="matching" if task.startswith("T8") else "allocation",
        content_check="toolset" if tools else "judge",
        in_six_task_mean=six,
        has_sequences=sequences,
        description=description,
    )
    for task, six, tools, sequences, description in _TABLE
}
"""Task id → :class:`TaskSpec`, in the paper's order."""

TASKS: tuple[str, ...] = tuple(TASK_SPECS)
EXPLICIT_TASKS: tuple[str, ...] = tuple(t for t, s in TASK_SPECS.items() if s.panel == "explicit")
ASSISTANCE_TASKS: tuple[str, ...] = tuple(
    t for t, s in TASK_SPECS.items() if s.panel == "assistance"
)
SIX_TASK_MEAN_TASKS: tuple[str, ...] = tuple(t for t, s in TASK_SPECS.items() if s.in_six_task_mean)
SEQUENCE_TASKS: tuple[str, ...] = tuple(t for t, s in TASK_SPECS.items() if s.has_sequences)
ALLOCATION_TASKS: tuple[str, ...] = tuple(
    t for t, s in TASK_SPECS.items() if s.scoring_rule == "allocation"
)
TOOL_TASKS: tuple[str, ...] = tuple(
    t for t, s in TASK_SPECS.items() if s.content_check == "toolset"
)


def task_spec(task: str) -> TaskSpec:
    """The :class:`TaskSpec` of ``task``.

    Raises:
        ValueError: unknown task id (the message lists the valid ones).
    """
    try:
        return TASK_SPECS[task]
    except KeyError:
        raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}") from None


def panel_of(task: str) -> Panel:
    """``explicit`` for T1–T7, ``assistance`` for T8-* (unknown ids: by their prefix)."""
    spec = TASK_SPECS.get(task)
    if spec is not None:
        return spec.panel
    return "assistance" if task.startswith("T8") else "explicit"
