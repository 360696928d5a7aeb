"""The model agent: any engine behind the one chat interface, with native tool calling where the
engine offers it, else a JSON array of calls in its text (read by the project's tool-call
parser)."""

from __future__ import annotations

import json
from string import Template
from typing import Any

from interactscope.core.records import ToolCall as EngineToolCall
from interactscope.core.records import ToolSpec as EngineToolSpec
from interactscope.egobench.agents.base import AgentStep, EpisodeContext, ToolEvent, after_scene
from interactscope.egobench.prompts import load_prompts
from interactscope.egobench.records import ToolCall
from interactscope.engines import EngineError, Message, TextPart, VideoPart
from interactscope.replies import parse_response

_NEVER_SILENT = "\x00never-silent\x00"


def engine_has_native_tools(engine: Any) -> bool:
    """True when the engine says it takes native ``tools``: an attribute ``native_tools`` on
    the engine or on its ``options`` (the openai backend's ``native_tools`` option)."""
    for holder in (engine, getattr(engine, "options", None)):
        flag = getattr(holder, "native_tools", None)
        if isinstance(flag, bool):
            return flag
    return False


def engine_takes_video_file(engine: Any) -> bool:
    """True when the engine (or its ``options``) says ``video_file``: it takes the video file
    itself (``agent.video=file``); else the agent sends frames."""
    for holder in (engine, getattr(engine, "options", None)):
        if getattr(holder, "video_file", None) is True:
            return True
    return False


def result_json(event: ToolEvent) -> str:
    """A tool result as the agent reads it: ``{"ok", "output"}`` or ``{"ok", "error"}``."""
    r = event.result
    body: dict[str, Any] = {"ok": r.ok}
    body.update({"output": r.output} if r.ok else {"error": r.error})
    return json.dumps(body, ensure_ascii=False, default=str)


def official_result(event: ToolEvent) -> str:
    """A tool result as the official runner shows it: the output's JSON, or
    ``{"error": ...}`` (run/utils.py ``execute_tool``)."""
    r = event.result
    body = r.output if r.ok else {"error": r.error}
    return json.dumps(body, ensure_ascii=False, default=str)


class ModelAgent:
    """An agent over ``engine`` (``chat(messages, tools=None, **generation) -> ChatResult``).

    Args:
        engine: the backend.
        name: the model's name (recorded in the run).
        wants_pixels: False for a model that sees no pixels (it gets the description).
        native: native tool calling (None: ask the engine, see :func:`engine_has_native_tools`).
    """

    def __init__(
        self, engine: Any, name: str, *, wants_pixels: bool = True, native: bool | None = None
    ):
        self.engine, self.name, self.wants_pixels = engine, name, wants_pixels
        self._native_flag = native
        self.native = False
        self.messages: list[Message] = []

    def begin(self, ctx: EpisodeContext) -> None:
        """Reset the conversation: the system prompt (with the catalogue in text mode)."""
        self.ctx = ctx
        s = ctx.settings.agent
        self.p = load_prompts("agent", s.prompt_version)
        self.native = {"native": True, "text": False}.get(
            s.tool_mode,
            self._native_flag
            if self._native_flag is not None
            else engine_has_native_tools(self.engine),
        )
        self.tools = [
            EngineToolSpec(name=t.name, description=t.description, parameters=t.parameters)
            for t in ctx.tools
        ]
        system = Template(self.p["system"]).safe_substitute(scenario=ctx.scenario)
        if not self.native:
            catalogue = json.dumps([t.model_dump() for t in self.tools], ensure_ascii=False)
            system += "\n" + Template(self.p["text_tools"]).safe_substitute(catalogue=catalogue)
        self.messages = [Message(role="system", content=system)]
        self.user_turns = 0

    def _visual_parts(self) -> list[Any]:
        v = self.ctx.visual
        if (
            v.sees_pixels
            and v.video
            and self.ctx.settings.agent.video == "file"
            and engine_takes_video_file(self.engine)
        ):
            intro = self.p.get("video_file_intro", "The video of the scene:")
            return [TextPart(text=intro), VideoPart(frames=[], path=v.video)]
        if v.sees_pixels:
            intro = Template(self.p["video_intro"]).safe_substitute(n=len(v.frames), step=v.step_s)
            return [TextPart(text=intro), VideoPart(frames=v.frames, pts_s=v.pts_s)]
        text = Template(self.p["no_video"]).safe_substitute(description=v.description or "")
        return [TextPart(text=text)]

    def on_user(self, text: str) -> None:
        """Add a user message; the video goes with the first one (or every one with
        ``frames.every_turn``)."""
        self.user_turns += 1
        parts: list[Any] = []
        if self.user_turns == 1 or self.ctx.settings.frames.every_turn:
            parts = self._visual_parts()
        self.messages.append(Message(role="user", content=after_scene(parts, text)))

    def on_tools(self, events: list[ToolEvent]) -> None:
        """Return results: native ``tool`` messages when every call has an id, else one user
        message holding the results as JSON (``runner=official``: ``Tool execution result: ``
        and each call's output JSON joined by ``; ``, run/multi_agent.py)."""
        if self.ctx.settings.runner == "official":
            text = "Tool execution result: " + "; ".join(official_result(e) for e in events)
            self.messages.append(Message(role="user", content=text))
            return
        if self.native and events and all(e.call_id for e in events):
            for e in events:
                self.messages.append(
                    Message(role="tool", content=result_json(e), tool_call_id=e.call_id)
                )
            return
        lines = "\n".join(f"{e.call.name}: {result_json(e)}" for e in events)
        text = Template(self.p["tool_results"]).safe_substitute(results=lines)
        self.messages.append(Message(role="user", content=text))

    def step(self) -> AgentStep:
        """One engine call. Native calls win; without them, calls are read from the text.
        An engine failure returns ``AgentStep(error=...)``."""
        gen = {}
        if self.ctx.settings.agent.max_new_tokens:
            gen["max_new_tokens"] = self.ctx.settings.agent.max_new_tokens
        try:
            res = self.engine.chat(self.messages, self.tools if self.native else None, **gen)
        except Exception as exc:  # noqa: BLE001 - an engine bug fails the episode, not the run
            msg = str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
            if self.ctx.settings.runner == "official":  # the failure is the agent's reply
                self.messages.append(Message(role="assistant", content=f"Error: {msg}"))
            return AgentStep(error=f"agent engine: {msg}")
        native = list(res.tool_calls) if self.native else []
        parsed = parse_response(res.text, _NEVER_SILENT)
        malformed = list(res.tool_call_errors)
        if native:
            ids = list(res.tool_call_ids) + [None] * (len(native) - len(res.tool_call_ids))
            calls, text = native, parsed.reply if parsed.tool_calls else (res.text or "").strip()
        else:
            ids, calls, text = [None] * len(parsed.tool_calls), parsed.tool_calls, parsed.reply
            malformed += [parsed.parse_error] if parsed.parse_error else []
        self.messages.append(
            Message(
                role="assistant",
                content=res.text or "",
                tool_calls=[EngineToolCall(name=c.name, arguments=c.arguments) for c in calls]
                if native
                else [],
                tool_call_ids=[i or "" for i in ids] if native else [],
            )
        )
        return AgentStep(
            text=text,
            calls=[ToolCall(name=c.name, arguments=c.arguments) for c in calls],
            call_ids=ids if native else [None] * len(calls),
            malformed=malformed,
            prompt_tokens=res.prompt_tokens or 0,
            completion_tokens=res.completion_tokens or 0,
            latency_s=res.latency_s or 0.0,
        )

    def close(self) -> None:
        """Close the engine (its HTTP client or model), if it can be closed."""
        close = getattr(self.engine, "close", None)
        if callable(close):
            close()

    def describe(self) -> dict[str, Any]:
        """Facts for ``run.json``: kind, whether the engine offers native tools, its own facts."""
        info: dict[str, Any] = {
            "kind": "model",
            "engine_native_tools": engine_has_native_tools(self.engine),
        }
        describe = getattr(self.engine, "describe", None)
        if callable(describe):
            try:
                info["engine"] = describe()
            except Exception:  # noqa: BLE001 - description is best effort
                pass
        return info
