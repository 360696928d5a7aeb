"""What an EgoBench agent is: the episode loop feeds it user messages and tool results and asks
it for its next step (a reply, tool calls, or both)."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from interactscope.egobench.episode_settings import EpisodeSettings
from interactscope.egobench.records import Task, ToolCall, ToolResult, ToolSpec
from interactscope.engines import TextPart


class Visual(BaseModel):
    """What the agent gets of the task video: frames (``(H, W, 3)`` uint8 RGB, stream times
    ``pts_s`` in s) when ``sees_pixels``, else the task's ``image_description`` as text."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    sees_pixels: bool
    frames: list[Any] = Field(default_factory=list)
    pts_s: list[float] = Field(default_factory=list)
    step_s: float = 1.0
    description: str | None = None
    video: str | None = None
    note: str | None = None


def after_scene(parts: list[Any], text: str) -> list[Any]:
    """``parts`` (the scene: frames or its description) then ``text`` as a paragraph of its own.

    Text engines join a message's text parts with nothing between them, so the scene text and
    the user's words were glued ("...in succession.Hello."); a blank line keeps them apart."""
    return [*parts, TextPart(text="\n\n" + text if parts else text)]


class EpisodeContext(BaseModel):
    """Everything the agent may know at the start of an episode (never the user's goal;
    ``task`` is given for baselines such as the oracle, which replay its ground truth)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    variant: str
    scenario: str
    task: Task
    tools: list[ToolSpec]
    visual: Visual
    settings: EpisodeSettings


class ToolEvent(BaseModel):
    """One executed call and its result, as returned to the agent; ``call_id`` is the native
    id the engine gave the call (None for calls parsed from text)."""

    call: ToolCall
    result: ToolResult
    call_id: str | None = None


class AgentStep(BaseModel):
    """One agent answer: ``text`` for the user (tool-call JSON removed), ``calls`` to execute
    in order, ``malformed`` calls that could not be read, token counts, wall time (s), and
    ``error`` when the backend failed (the episode then ends with stop reason ``error``)."""

    text: str = ""
    calls: list[ToolCall] = Field(default_factory=list)
    call_ids: list[str | None] = Field(default_factory=list)
    malformed: list[str] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None


class Agent(Protocol):
    """An agent under test. ``wants_pixels`` says whether frames should be decoded for it;
    ``begin`` starts an episode, ``on_user``/``on_tools`` add what happened, ``step`` answers."""

    name: str
    wants_pixels: bool

    def begin(self, ctx: EpisodeContext) -> None: ...

    def on_user(self, text: str) -> None: ...

    def on_tools(self, events: list[ToolEvent]) -> None: ...

    def step(self) -> AgentStep: ...

    def describe(self) -> dict[str, Any]: ...
