"""One EgoBench episode: user message → agent turn(s) with tool calls executed on a fresh
environment and results returned → next user message, until the user's whole reply is
``STOP``, the user-turn limit or the tool-call limit (docs/egobench.md, "Episode
loop")."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from interactscope.egobench.agents.base import Agent, EpisodeContext, ToolEvent, Visual
from interactscope.egobench.env import Environment
from interactscope.egobench.episode_settings import EpisodeSettings
from interactscope.egobench.profiles import run_profile
from interactscope.egobench.records import (
    CallRecord,
    DialogueTurn,
    EpisodeRecord,
    Task,
    ToolCall,
    Variant,
)
from interactscope.egobench.user_sim import STOP, SimulatedUser, UserTurn


class _Episode:
    """Bookkeeping of one running episode (the record being filled and the call count)."""

    def __init__(
        self,
        rec: EpisodeRecord,
        env: Environment,
        s: EpisodeSettings,
        on_step: Callable[[str], None] | None = None,
    ):
        self.rec, self.env, self.s = rec, env, s
        self.user_turns = 0
        self.steps = 0
        self.executed = 0
        self.on_step = on_step

    def status(self) -> None:
        """Tell ``on_step`` where the episode is (the progress bar's postfix)."""
        if self.on_step is not None:
            calls = f"{self.executed} call" + ("" if self.executed == 1 else "s")
            self.on_step(
                f"{self.rec.variant}:{self.rec.task_id} turn {self.user_turns} "
                f"step {self.steps}, {calls}"
            )

    def add_user(self, turn: UserTurn) -> None:
        self.user_turns += 1
        self.status()
        self.rec.dialogue.append(DialogueTurn(role="user", text=turn.text))
        if turn.verdict is not None:
            self.rec.user_verdicts.append(turn.verdict.model_copy(update={"turn": self.user_turns}))
        self.rec.errors.extend(turn.errors)

    def execute(self, calls: list[ToolCall], ids: list[str | None]) -> tuple[list[ToolEvent], bool]:
        """Run calls in order; True when the tool-call limit is reached. Ours stops at the
        limit; the official runner executes the whole batch, then checks ``> limit``."""
        events = []
        official = self.s.runner == "official"
        for call, cid in zip(calls, ids + [None] * (len(calls) - len(ids)), strict=False):
            if not official and self.executed >= self.s.limits.max_tool_calls:
                return events, True
            result = self.env.call(call.name, call.arguments)
            self.executed += 1
            self.rec.calls.append(CallRecord(turn=self.user_turns, call=call, result=result))
            events.append(ToolEvent(call=call, result=result, call_id=cid))
        if official:
            return events, self.executed > self.s.limits.max_tool_calls
        return events, self.executed >= self.s.limits.max_tool_calls

    def agent_turn(self, agent: Agent) -> tuple[str, str | None, str | None]:
        """Agent steps until a step without calls. Returns (reply, problem, stop reason):
        ``problem`` says why the reply was malformed (hard mode interrupts it)."""
        while True:
            step = agent.step()
            self.steps += 1
            self.rec.input_tokens += step.prompt_tokens
            self.rec.output_tokens += step.completion_tokens
            self.rec.latency_s += step.latency_s
            if step.error:
                self.rec.errors.append(step.error)
                if self.s.runner != "official":
                    return "", None, "error"
                # run/apis/unified.py: a failed backend call returns "Error: ..." as the text
                text = "Error: " + step.error.removeprefix("agent engine: ")
                self.rec.dialogue.append(DialogueTurn(role="agent", text=text))
                return text, None, None
            for m in step.malformed:
                self.rec.calls.append(
                    CallRecord(turn=self.user_turns, call=ToolCall(name=""), malformed=m)
                )
            if not step.calls:
                self.rec.dialogue.append(DialogueTurn(role="agent", text=step.text))
                problem = "; ".join(step.malformed) or (
                    None if step.text.strip() else "empty reply"
                )
                return step.text, problem, None
            if step.text.strip():
                self.rec.dialogue.append(DialogueTurn(role="agent", text=step.text))
            events, limit = self.execute(step.calls, list(step.call_ids))
            self.status()
            if limit and self.s.runner == "official":
                # run/multi_agent.py: past the limit the agent's turn ends, not the episode
                agent.on_tools(events)
                text = OFFICIAL_LIMIT_REPLY.format(n=self.s.limits.max_tool_calls)
                self.rec.dialogue.append(DialogueTurn(role="agent", text=text))
                return text, None, None
            if limit:
                return "", None, "max_tool_calls"
            agent.on_tools(events)


OFFICIAL_LIMIT_REPLY = "[Interaction stopped: tool calls exceeded {n}]"
"""The agent's reply when the official runner ends its turn at the tool-call limit."""


def _stopped(turn: UserTurn, s: EpisodeSettings) -> bool:
    """Ours: the whole reply is STOP; official: "STOP" anywhere in it (run/multi_agent.py)."""
    return STOP in turn.text if s.runner == "official" else turn.stop


def _user_says(ep: _Episode, speak: Any) -> UserTurn:
    """The user's next message; with the official runner a failed user backend speaks
    ``Error: ...`` (run/apis/unified.py), ours fails the episode (the exception propagates)."""
    if ep.s.runner != "official":
        return speak()
    try:
        return speak()
    except Exception as exc:  # noqa: BLE001 - the official loop turns it into an utterance
        msg = _one_line(exc).split(": ", 1)[-1]
        return UserTurn(text=f"Error: {msg}", errors=[f"user engine: {msg}"])


def _loop(ep: _Episode, agent: Agent, user: SimulatedUser) -> str:
    turn = _user_says(ep, user.first)
    ep.add_user(turn)
    while True:
        if _stopped(turn, ep.s):
            return "user_stop"
        agent.on_user(turn.text)
        reply, problem, stop = ep.agent_turn(agent)
        if stop:
            return stop
        if ep.user_turns >= ep.s.limits.max_user_turns:
            return "max_user_turns"
        turn = _user_says(ep, partial(user.reply, reply, problem))
        ep.add_user(turn)


def run_episode(
    variant: Variant,
    task: Task,
    agent: Agent,
    user: SimulatedUser,
    settings: EpisodeSettings,
    visual: Visual,
    *,
    agent_name: str = "",
    user_name: str = "",
    trial: int = 1,
    on_step: Callable[[str], None] | None = None,
) -> EpisodeRecord:
    """Play one episode on a fresh environment and return its record.

    Args:
        variant, task: the data (the task's "today" dates the environment).
        agent: the agent under test (``begin`` is called here).
        user: this episode's simulated user.
        settings: limits, mode and the environment's argument rules.
        visual: what the agent gets of the video (``sees_pixels`` is recorded).
        trial: the 1-based trial; the record keeps it and the seed (``settings.user.seed``).
        on_step: called with a one-line status (``"retail1:1 turn 1 step 2, 3 calls"``: user
            turns, agent steps, executed tool calls so far) after each user message and after
            each agent step that called tools.

    Returns:
        The :class:`EpisodeRecord`: dialogue, every call with its result (in execution order),
        final state hash, stop reason (``user_stop``, ``max_user_turns``, ``max_tool_calls``,
        or ``error`` when the agent's or the user's backend failed: the message is in
        ``errors``), Evaluator verdicts, agent tokens and model time (s). Never raises for a
        backend failure."""
    rec = EpisodeRecord(
        variant=variant.name,
        task_id=task.task_id,
        trial=trial,
        seed=settings.user.seed,
        mode=settings.mode,
        agent=agent_name or getattr(agent, "name", ""),
        user=user_name,
        sees_pixels=visual.sees_pixels,
    )
    with Environment.from_variant(variant, task, rules=run_profile(settings)) as env:
        ep = _Episode(rec, env, settings, on_step)
        ctx = EpisodeContext(
            variant=variant.name,
            scenario=variant.scenario,
            task=task,
            tools=variant.tools,
            visual=visual,
            settings=settings,
        )
        try:
            agent.begin(ctx)
            rec.stop_reason = _loop(ep, agent, user)
        except Exception as exc:  # noqa: BLE001 - a failed backend fails this episode only
            rec.stop_reason = "error"
            rec.errors.append(_one_line(exc))
        rec.final_state_hash = env.state_hash()
    ledger = getattr(agent, "episode_ledger", None)
    if callable(ledger):  # a policy that keeps its own record (EgoInteract's ledger)
        rec.ledger = ledger()
    rec.latency_s = round(rec.latency_s, 6)
    return rec


def _one_line(exc: Any) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
