"""The EgoInteract service agent: proposes the next step (read calls, state-changing calls or a
reply) from the dialogue, tool results, the video's frames and its own notes. It is a
:class:`~interactscope.egobench.agents.ModelAgent` with its own system prompt, the scene rules,
a ``view_frames`` pseudo-tool (frames on demand), and ``BRANCH:`` / ``HYPOTHESIS:`` note lines
that go into the ledger and are removed from what the user sees."""

from __future__ import annotations

import json
import re
from string import Template
from typing import Any

from pydantic import BaseModel, Field

from interactscope.egobench.agents.base import AgentStep, EpisodeContext, ToolEvent, after_scene
from interactscope.egobench.agents.model import ModelAgent
from interactscope.egobench.egointeract.config import EgoInteractSettings
from interactscope.egobench.egointeract.rules import SceneRules
from interactscope.egobench.egointeract.texts import load_texts
from interactscope.egobench.records import ToolCall, ToolSpec
from interactscope.engines import Message, TextPart, VideoPart

VIEW_FRAMES = "view_frames"
_NOTE = re.compile(r"^\s*(BRANCH|HYPOTHESIS)\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


class Proposed(BaseModel):
    """One answer of the service agent: the step (note lines removed from its text), the
    notes (``("branch"|"hypothesis", text)``) and whether it asked for the video."""

    step: AgentStep
    notes: list[tuple[str, str]] = Field(default_factory=list)
    wants_frames: bool = False


def split_notes(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``("reply without note lines", [("branch", ...), ("hypothesis", ...)])``."""
    notes = [(m[1].lower(), m[2]) for m in _NOTE.finditer(text or "")]
    return _NOTE.sub("", text or "").strip(), notes


class ServiceAgent:
    """The service agent over ``engine``; ``settings.frames`` says when it sees the video."""

    def __init__(self, engine: Any, name: str, settings: EgoInteractSettings, sees_pixels: bool):
        self.model = ModelAgent(engine, name, wants_pixels=sees_pixels)
        self.s = settings
        self.frames_shown = 0

    def begin(self, ctx: EpisodeContext, rules: SceneRules | None) -> None:
        """Reset: the system prompt with the rules (when given) and the tool catalogue."""
        self.t = load_texts("service", self.s.prompt_version)
        self.ctx = ctx
        tools = list(ctx.tools)
        if self.s.frames == "on_demand":
            tools.append(ToolSpec(name=VIEW_FRAMES, description=self.t["view_frames"]))
        self.model.begin(ctx.model_copy(update={"tools": tools}))
        sub = {"scenario": ctx.scenario}
        system = Template(self.t["system"]).safe_substitute(sub)
        if self.s.frames == "on_demand":
            system += "\n" + self.t["frames_on_demand"]
        if rules is not None:
            system += "\n" + Template(self.t["rules"]).safe_substitute(sub, rules=rules.guidance())
        if not self.model.native:
            catalogue = json.dumps([t.model_dump() for t in self.model.tools], ensure_ascii=False)
            system += "\n" + Template(self.t["text_tools"]).safe_substitute(catalogue=catalogue)
        self.model.messages = [Message(role="system", content=system)]
        self.user_turns = 0

    def visual_parts(self) -> list[Any]:
        """The video as message parts: frames, or its description when there are no pixels."""
        v = self.ctx.visual
        if v.sees_pixels:
            intro = Template(self.t["video_intro"]).safe_substitute(n=len(v.frames), step=v.step_s)
            return [TextPart(text=intro), VideoPart(frames=v.frames, pts_s=v.pts_s)]
        text = Template(self.t["no_video"]).safe_substitute(description=v.description or "")
        return [TextPart(text=text)]

    def on_user(self, text: str) -> None:
        """Add a user message, with the video on the first turn (``first_turn``) or every turn."""
        self.user_turns += 1
        show = self.s.frames == "every_turn" or (
            self.s.frames == "first_turn" and self.user_turns == 1
        )
        parts = self.visual_parts() if show else []
        self.model.messages.append(Message(role="user", content=after_scene(parts, text)))

    def show_frames(self) -> int:
        """Answer a ``view_frames`` request (the request itself is dropped from the history);
        returns the number of frames shown."""
        self.discard_last()
        first = self.frames_shown == 0
        self.frames_shown += 1
        parts = self.visual_parts() if first else []
        note = self.t["frames_shown"] if first else self.t["frames_again"]
        self.model.messages.append(Message(role="user", content=after_scene(parts, note)))
        return len(self.ctx.visual.frames) if first else 0

    def on_tools(self, events: list[ToolEvent], deferred: list[ToolCall] | None = None) -> None:
        """Return tool results; ``deferred`` calls are named as not carried out."""
        self.model.on_tools(events)
        if deferred:
            calls = json.dumps([c.model_dump() for c in deferred], ensure_ascii=False)
            text = Template(self.t["deferred"]).safe_substitute(calls=calls)
            self.model.messages.append(Message(role="user", content=text))

    def keep_calls(self, keep: list[int]) -> None:
        """Keep only the native calls at indices ``keep`` in the last assistant message (the
        others were deferred or were ``view_frames``)."""
        last = self.model.messages[-1] if self.model.messages else None
        if last is None or last.role != "assistant" or not last.tool_calls:
            return
        ids = list(last.tool_call_ids)
        self.model.messages[-1] = last.model_copy(
            update={
                "tool_calls": [last.tool_calls[i] for i in keep if i < len(last.tool_calls)],
                "tool_call_ids": [ids[i] for i in keep if i < len(ids)],
            }
        )

    def discard_last(self) -> None:
        """Remove the last assistant message (a rejected or replaced proposal)."""
        if self.model.messages and self.model.messages[-1].role == "assistant":
            self.model.messages.pop()

    def replace_last(self, text: str) -> None:
        """Put ``text`` (what the user was shown instead) in place of the last proposal."""
        self.discard_last()
        self.model.messages.append(Message(role="assistant", content=text))

    def correct(self, proposal: str, verdict: str, reason: str) -> None:
        """Replace the rejected proposal by the auditor's feedback."""
        self.discard_last()
        text = Template(self.t["correction"]).safe_substitute(
            proposal=proposal, verdict=verdict.replace("_", " "), reason=reason
        )
        self.model.messages.append(Message(role="user", content=text))

    def propose(self) -> Proposed:
        """One engine call: the step with notes split off and ``view_frames`` taken out."""
        step = self.model.step()
        if step.error:
            return Proposed(step=step)
        text, notes = split_notes(step.text)
        keep = [i for i, c in enumerate(step.calls) if c.name != VIEW_FRAMES]
        wants = len(keep) < len(step.calls)
        if wants:
            self.keep_calls(keep)
        step = step.model_copy(
            update={
                "text": text,
                "calls": [step.calls[i] for i in keep],
                "call_ids": [step.call_ids[i] for i in keep if i < len(step.call_ids)],
            }
        )
        return Proposed(step=step, notes=notes, wants_frames=wants)
