"""Typed records of EgoBench data, tool calls, results and episodes (pydantic models)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCENARIOS = ("retail", "kitchen", "restaurant", "warehouse", "household", "order")
Scenario = Literal["retail", "kitchen", "restaurant", "warehouse", "household", "order"]


class ToolSpec(BaseModel):
    """One tool of a scenario schema: name, description and JSON Schema of its arguments."""

    model_config = ConfigDict(frozen=True)
    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @property
    def declared(self) -> set[str]:
        """Names of the parameters the schema declares."""
        return set(self.parameters.get("properties", {}) or {})

    def openai(self) -> dict[str, Any]:
        """OpenAI-style function spec ``{"type": "function", "function": {name, description, parameters}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolCall(BaseModel):
    """One tool call: the tool name and its arguments (a JSON object)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Task(BaseModel):
    """One task of a variant's task file (fields as in the published EgoBench files)."""

    task_id: int
    instruction: str
    analysis: str | None = None
    ground_truth: list[ToolCall]
    image_path: str | None = None
    image_description: str | None = None
    key: str | None = None
    value: list[str] = Field(default_factory=list)
    today: dt.date | None = None
    today_text: str | None = None
    user_id: str | None = None


class Variant(BaseModel):
    """A variant (video + seed database + task file) of one scenario."""

    name: str
    scenario: Scenario
    tasks: list[Task]
    tools: list[ToolSpec]
    seed: dict[str, Any]
    seed_is_ours: bool = False
    files: dict[str, str] = Field(default_factory=dict)

    def task(self, task_id: int) -> Task:
        """The task with this id; KeyError when absent."""
        for t in self.tasks:
            if t.task_id == task_id:
                return t
        raise KeyError(f"{self.name}: no task {task_id}")


class ToolResult(BaseModel):
    """What a tool call returned. ``ok`` False means nothing changed; ``error`` says why in
    one line; ``ignored`` lists argument names the schema does not declare (dropped)."""

    ok: bool
    name: str
    output: Any = None
    error: str | None = None
    error_kind: Literal["unknown_tool", "invalid_arguments", "precondition"] | None = None
    ignored: list[str] = Field(default_factory=list)
    changed: bool = False


class CallRecord(BaseModel):
    """One executed agent call with its result, as an episode records it."""

    turn: int
    call: ToolCall
    result: ToolResult | None = None
    malformed: str | None = None


class DialogueTurn(BaseModel):
    """One message of the dialogue (user, agent or tool)."""

    role: Literal["user", "agent", "tool", "system"]
    text: str = ""
    time_s: float | None = None


class UserVerdict(BaseModel):
    """The simulated user's Evaluator verdict on one user turn (four yes/no criteria)."""

    turn: int
    role_consistency: bool
    instruction_fidelity: bool
    resistance: bool
    context_consistency: bool
    rewrites: int = 0

    @property
    def all_pass(self) -> bool:
        return (
            self.role_consistency
            and self.instruction_fidelity
            and self.resistance
            and self.context_consistency
        )


class EpisodeRecord(BaseModel):
    """One episode (one task, one run): this project's own log record, one JSON line each.

    ``calls`` holds every agent tool call in execution order with its result;
    ``stop_reason`` says why the episode ended; tokens and latency are totals in tokens and
    seconds."""

    format: Literal["interactscope.egobench.episode/1"] = "interactscope.egobench.episode/1"
    variant: str
    task_id: int
    trial: int = Field(1, ge=1, description="1-based trial of this task (ego run --trials K)")
    seed: int | None = Field(
        None, description="the seed this trial played with (user.seed + trial - 1)"
    )
    mode: Literal["easy", "hard", "static"] | None = None
    agent: str | None = None
    user: str | None = None
    sees_pixels: bool | None = None
    dialogue: list[DialogueTurn] = Field(default_factory=list)
    calls: list[CallRecord] = Field(default_factory=list)
    final_state_hash: str | None = None
    stop_reason: (
        Literal["user_stop", "max_user_turns", "max_tool_calls", "error", "other"] | None
    ) = None
    user_verdicts: list[UserVerdict] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    errors: list[str] = Field(default_factory=list)
    ledger: dict[str, Any] | None = None
    """The agent policy's own record of the episode (EgoInteract: its evidence ledger)."""


class AgentLog(BaseModel):
    """The agent calls of one task, imported from any log format (scorer input)."""

    task_id: int
    calls: list[ToolCall] = Field(default_factory=list)
    malformed: list[str] = Field(default_factory=list)
    mode: str | None = None
