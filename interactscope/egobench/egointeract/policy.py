"""The EgoInteract agent policy (implements the EgoBench ``Agent`` interface): the service
agent proposes; read and compute calls run at once and only extend the ledger; a batch that
changes state and every final reply go to the auditor first. A rejected proposal is neither
executed nor shown: the auditor's reason goes back to the service agent, which re-plans. After
``max_corrections`` rejections of one proposal, ``on_max_corrections`` decides (execute it, or
stop and tell the user the step could not be verified). With ``auditor: false`` every proposal
passes unchecked; with ``scene_rules: false`` no scenario guidance reaches either prompt (the
tool-class table still decides what is audited)."""

from __future__ import annotations

import json
from typing import Any

from interactscope.egobench.agents.base import AgentStep, EpisodeContext, ToolEvent
from interactscope.egobench.egointeract.auditor import Auditor, AuditorError, Decision
from interactscope.egobench.egointeract.config import EgoInteractSettings
from interactscope.egobench.egointeract.ledger import (
    CallEntry,
    DeferredEntry,
    FramesEntry,
    Ledger,
    LimitEntry,
    Proposal,
    TextEntry,
    VerdictEntry,
)
from interactscope.egobench.egointeract.rules import load_rules
from interactscope.egobench.egointeract.service import Proposed, ServiceAgent


def _render(p: Proposal) -> str:
    """A proposal as the service agent is reminded of it (JSON)."""
    if p.kind == "calls":
        return json.dumps([c.model_dump() for c in p.calls], ensure_ascii=False)
    return json.dumps(p.text, ensure_ascii=False)


class _Totals:
    """Tokens and model time (s) of one ``step`` across service and auditor calls."""

    def __init__(self) -> None:
        self.prompt = self.completion = 0
        self.latency = 0.0

    def add(self, x: Any) -> None:
        self.prompt += x.prompt_tokens
        self.completion += x.completion_tokens
        self.latency += x.latency_s

    def finish(self, step: AgentStep) -> AgentStep:
        return step.model_copy(
            update={
                "prompt_tokens": self.prompt,
                "completion_tokens": self.completion,
                "latency_s": self.latency,
            }
        )


class EgoInteractAgent:
    """Service agent + auditor over an evidence ledger (see the module docstring).

    Args:
        settings: the policy's settings (models, ablations, correction limit).
        service_engine, auditor_engine: chat engines (the same object when one model plays both).
        sees_pixels: whether the service model sees frames (the auditor never does).
        info: facts for ``run.json`` (both models' configs)."""

    name = "egointeract"

    def __init__(
        self,
        settings: EgoInteractSettings,
        service_engine: Any,
        auditor_engine: Any,
        *,
        sees_pixels: bool = True,
        info: dict[str, Any] | None = None,
    ):
        self.s = settings
        self.service = ServiceAgent(service_engine, settings.service_model, settings, sees_pixels)
        self.auditor = Auditor(auditor_engine, settings.auditor_name, settings)
        self.engine = service_engine
        self.wants_pixels = sees_pixels
        self.info = info or {}
        self.ledger = Ledger()

    def begin(self, ctx: EpisodeContext) -> None:
        """A fresh ledger; both prompts built (rules only when ``scene_rules``)."""
        self.rules = load_rules(ctx.scenario)
        guidance = self.rules if self.s.scene_rules else None
        self.service.begin(ctx, guidance)
        self.auditor.begin(ctx, guidance)
        self.ledger = Ledger(
            scenario=ctx.scenario,
            service_model=self.s.service_model,
            auditor_model=self.s.auditor_name if self.s.auditor else None,
            settings=self.s.model_dump(),
        )
        self.turn = 0
        self._audited = False
        self._deferred: list = []

    def episode_ledger(self) -> dict[str, Any]:
        """The ledger as JSON data, for the episode's log."""
        return self.ledger.model_dump(mode="json")

    def _note(self, kind: str, text: str) -> None:
        self.ledger.add(TextEntry(kind=kind, text=text, turn=self.turn))

    def on_user(self, text: str) -> None:
        self.turn += 1
        self._note("user", text)
        self.service.on_user(text)

    def on_tools(self, events: list[ToolEvent]) -> None:
        """Record each executed call with its result and class, then return the results."""
        for e in events:
            self.ledger.add(
                CallEntry(
                    turn=self.turn,
                    call=e.call,
                    tool_class=self.rules.classify(e.call.name),
                    result=e.result,
                    audited=self._audited,
                )
            )
        self.service.on_tools(events, self._deferred)
        self._audited, self._deferred = False, []

    def _split(self, step: AgentStep) -> tuple[AgentStep, bool]:
        """(step to run, needs audit). Reads only: run. Starts with reads: run the leading
        reads, defer the rest. Starts with a write: audit the whole batch."""
        classes = [self.rules.classify(c.name) for c in step.calls]
        if "write" not in classes:
            return step, False
        if classes[0] == "write":
            return step, True
        k = classes.index("write")
        self._deferred = step.calls[k:]
        self.ledger.add(
            DeferredEntry(turn=self.turn, calls=self._deferred, reason="followed reads in a batch")
        )
        self.service.keep_calls(list(range(k)))
        ids = list(step.call_ids)[:k]
        return step.model_copy(update={"calls": step.calls[:k], "call_ids": ids}), False

    def _review(self, proposal: Proposal, attempt: int, totals: _Totals) -> Decision:
        d = self.auditor.review(self.ledger, proposal)
        totals.add(d)
        self.ledger.add(
            VerdictEntry(
                turn=self.turn,
                proposal=proposal,
                attempt=attempt,
                **d.model_dump(include={"verdict", "reason", "revised", "unparseable", "raw"}),
            )
        )
        return d

    def _shown(self, step: AgentStep) -> AgentStep:
        if step.text.strip():
            self._note("reply", step.text)
        return step

    def _at_limit(self, step: AgentStep, proposal: Proposal) -> AgentStep:
        self.ledger.add(
            LimitEntry(turn=self.turn, proposal=proposal, action=self.s.on_max_corrections)
        )
        if self.s.on_max_corrections == "execute":
            self._audited = bool(step.calls)
            return self._shown(step)
        self.service.replace_last(self.service.t["stopped"])
        return self._shown(AgentStep(text=self.service.t["stopped"]))

    def _next(self, totals: _Totals) -> Proposed | AgentStep:
        """One service answer with its notes recorded; a ``view_frames`` request is served
        (the video, then "already shown") and the service asked again, at most twice."""
        for i in range(3):
            p = self.service.propose()
            totals.add(p.step)
            if p.step.error:
                return p.step
            for kind, text in p.notes:
                self._note(kind, text)
            if not p.wants_frames or i == 2:
                return p
            n = self.service.show_frames()
            self.ledger.add(FramesEntry(turn=self.turn, n_frames=n, sees_pixels=self.wants_pixels))
        return p

    def step(self) -> AgentStep:
        """The next step the episode executes or shows (see the module docstring)."""
        totals, rejections = _Totals(), 0
        while True:
            p = self._next(totals)
            if isinstance(p, AgentStep):
                return totals.finish(p)
            step = p.step
            if not self.s.auditor:  # the ablation: every proposal as the service agent made it
                return totals.finish(self._shown(step))
            if step.calls:
                step, audit = self._split(step)
                proposal = Proposal(kind="calls", calls=step.calls, text=step.text)
            else:
                audit, proposal = True, Proposal(kind="reply", text=step.text)
            if not audit:
                return totals.finish(self._shown(step))
            try:
                d = self._review(proposal, rejections + 1, totals)
            except AuditorError as exc:
                return totals.finish(AgentStep(error=str(exc)))
            if d.verdict == "approve":
                self._audited = bool(step.calls)
                return totals.finish(self._shown(step))
            if d.verdict == "revise":
                self.service.replace_last(d.revised or "")
                return totals.finish(self._shown(AgentStep(text=d.revised or "")))
            rejections += 1
            if rejections >= self.s.max_corrections:
                return totals.finish(self._at_limit(step, proposal))
            self.service.correct(_render(proposal), d.verdict, d.reason or "No reason given.")

    def close(self) -> None:
        """Close both engines (once when they are the same object)."""
        seen = []
        for eng in (self.service.model.engine, self.auditor.engine):
            close = getattr(eng, "close", None)
            if callable(close) and not any(eng is s for s in seen):
                close()
                seen.append(eng)

    def describe(self) -> dict[str, Any]:
        """Facts for ``run.json``: kind, ablation label, every setting, both models."""
        return {
            "kind": "egointeract",
            "label": self.s.label,
            "egointeract": self.s.model_dump(),
            **self.info,
        }
