"""Baseline agents that need no model: ``oracle`` replays the task's ground-truth calls,
``none`` never calls a tool."""

from __future__ import annotations

from typing import Any

from interactscope.egobench.agents.base import AgentStep, EpisodeContext, ToolEvent


class OracleAgent:
    """Issues every ground-truth call of the task in one batch on its first step, then only
    replies ``Done.``: a perfect agent (JointSucc 1 on every task with a ground truth)."""

    name = "oracle"
    wants_pixels = False

    def __init__(self) -> None:
        self._calls: list = []

    def begin(self, ctx: EpisodeContext) -> None:
        self._calls = list(ctx.task.ground_truth)

    def on_user(self, text: str) -> None:
        pass

    def on_tools(self, events: list[ToolEvent]) -> None:
        pass

    def step(self) -> AgentStep:
        calls, self._calls = self._calls, []
        if calls:
            return AgentStep(calls=calls, call_ids=[None] * len(calls))
        return AgentStep(text="Done.")

    def describe(self) -> dict[str, Any]:
        return {"kind": "oracle"}


class NoneAgent:
    """Never calls a tool; answers every message with one fixed sentence (JointSucc 0)."""

    name = "none"
    wants_pixels = False
    reply = "I am sorry, I cannot help with that."

    def begin(self, ctx: EpisodeContext) -> None:
        pass

    def on_user(self, text: str) -> None:
        pass

    def on_tools(self, events: list[ToolEvent]) -> None:
        pass

    def step(self) -> AgentStep:
        return AgentStep(text=self.reply)

    def describe(self) -> dict[str, Any]:
        return {"kind": "none"}
