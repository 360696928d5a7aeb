"""The simulated user of an EgoBench episode: a scripted user (fixed messages, then ``STOP``)
and the model user (Actor / Evaluator / Summarizer) in the modes easy, hard and static
(docs/egobench.md, "Simulated user"). The user sees the task's instruction and
image description, never its ground-truth calls."""

from __future__ import annotations

import json
import random
import re
from string import Template
from typing import Any, Protocol

from pydantic import BaseModel, Field

from interactscope.egobench.episode_settings import EpisodeSettings
from interactscope.egobench.prompts import load_chitchat, load_prompts
from interactscope.egobench.records import Task, UserVerdict
from interactscope.engines import ChatResult, Message

STOP = "STOP"
CRITERIA = ("role_consistency", "instruction_fidelity", "resistance", "context_consistency")
OPENING = "(The agent waits for you to speak first.)"
"""What the Actor reads before the first user message (ours: the agent has said nothing)."""
OFFICIAL_OPENING = (
    "You are a customer in the environment shown in the video, and you need to complete the "
    "instructions in **Task**. I am your AI customer service representative; please interact "
    "with me in the first person. Let's begin the conversation.\nDear customer, how can I "
    "help you?"
)
"""The official runner's opening user-model message (run/multi_agent.py, ``user_messages``)."""
_STOP_WRAP = " \t\r\n\"'`*_"
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")


def is_stop(text: str | None) -> bool:
    """True iff the whole reply is ``STOP`` (surrounding whitespace, quotes, ``*``/``_``
    emphasis and one final period ignored; case-sensitive). ``"I will STOP now"`` is no stop."""
    if text is None:
        return False
    core = text.strip(_STOP_WRAP)
    if core.endswith("."):
        core = core[:-1].strip(_STOP_WRAP)
    return core == STOP


class UserTurn(BaseModel):
    """One user message with the Evaluator's verdict (None for a scripted user), the user
    model's token counts and wall time (s)."""

    text: str
    verdict: UserVerdict | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    errors: list[str] = Field(default_factory=list)

    @property
    def stop(self) -> bool:
        return is_stop(self.text)


class SimulatedUser(Protocol):
    """One episode's user. ``first()`` opens the dialogue; ``reply(agent_text, problem)``
    answers the agent's reply (``problem``: why that reply was malformed, or None)."""

    def first(self) -> UserTurn: ...

    def reply(self, agent_text: str, problem: str | None = None) -> UserTurn: ...


class ScriptedUser:
    """Plays ``messages`` in order, then ``STOP`` (for tests and the demo)."""

    def __init__(self, messages: list[str]):
        self.messages = list(messages)
        self.i = 0

    def _next(self) -> UserTurn:
        text = self.messages[self.i] if self.i < len(self.messages) else STOP
        self.i += 1
        return UserTurn(text=text)

    def first(self) -> UserTurn:
        return self._next()

    def reply(self, agent_text: str, problem: str | None = None) -> UserTurn:
        return self._next()


_USER_ID = re.compile(
    r"\buser(?:[ _]?id)?(?:\s+is|\s*[:=])?\s*[\"'`]?([A-Za-z]+_[A-Za-z0-9_\-]+)", re.I
)
_TODAY = re.compile(r"\btoday(?:'s date)? is [^.;]*?\d{4}", re.I)
SCRIPTED_REQUEST = "Please help me with what I am showing you."
"""The scripted user's request (``user.scripted_opening=request``): it names no step of the
hidden Instruction."""


def default_script(task: Task, opening: str = "request") -> list[str]:
    """The scripted user's messages when no script file names the task (then ``STOP``).

    ``opening="request"`` (default; SPEC-egobench §3: the Instruction is given only to the
    simulated user): the date sentence copied from the Instruction when it states one (the
    official user prompt's "First-Sentence Date Fidelity"), the user id ("Include your user_id
    somewhere in your first dialogue"), and :data:`SCRIPTED_REQUEST`, e.g. ``"Hello. Today is
    May 6, 2026. My user ID is cook_009. Please help me with what I am showing you."``.
    ``opening="instruction"``: the Instruction verbatim after ``"Hello. "`` (the whole hidden
    goal at once; the behaviour before the setting existed)."""
    if opening == "instruction":
        return [f"Hello. {task.instruction}"]
    parts = ["Hello."]
    if m := _TODAY.search(task.instruction):
        parts.append(m[0][0].upper() + m[0][1:] + ".")
    if m := _USER_ID.search(task.instruction):
        parts.append(f"My user ID is {m[1]}.")
    return [" ".join([*parts, SCRIPTED_REQUEST])]


def parse_verdict(text: str, turn: int) -> tuple[UserVerdict, str, str | None]:
    """(verdict, feedback, error) from the Evaluator's reply: the first JSON object, each
    criterion ``yes``/``no`` or a boolean. An unreadable reply fails every criterion (the turn
    was not verified) and returns an error line."""
    m = re.search(r"\{.*\}", text or "", re.DOTALL)
    try:
        obj = json.loads(m[0]) if m else None
    except json.JSONDecodeError:
        obj = None
    if not isinstance(obj, dict) or not all(c in obj for c in CRITERIA):
        fails = dict.fromkeys(CRITERIA, False)
        return UserVerdict(turn=turn, **fails), "", f"user turn {turn}: evaluator reply unreadable"

    def yes(v: Any) -> bool:
        return v is True or (isinstance(v, str) and v.strip().lower() in ("yes", "true", "y"))

    verdict = UserVerdict(turn=turn, **{c: yes(obj[c]) for c in CRITERIA})
    return verdict, str(obj.get("feedback") or ""), None


def _fill(template: str, **values: Any) -> str:
    return Template(template).safe_substitute({k: str(v) for k, v in values.items()})


class ModelUser:
    """Actor / Evaluator / Summarizer over one engine (docs/egobench.md).

    Args:
        engine: anything with ``chat(messages, tools=None, **generation) -> ChatResult``.
        task: the task (its instruction and image description are all the user knows).
        scenario: the variant's scenario (hard mode's chit-chat file).
        settings: the run's settings (``mode`` and ``user.*``).

    Raises:
        PromptError: missing prompt or chit-chat file (at construction).
        EngineError: from the engine, during ``first``/``reply``."""

    def __init__(self, engine: Any, task: Task, scenario: str, settings: EpisodeSettings):
        self.engine, self.task, self.s = engine, task, settings
        self.mode = settings.mode
        self.p = load_prompts("user", settings.user.prompt_version)
        self.chitchat = load_chitchat(scenario) if self.mode == "hard" else []
        self.dialogue: list[tuple[str, str]] = []  # ("user"|"agent", text)
        self.summary = "nothing done yet."
        self.turn = 0
        self._tok = [0, 0, 0.0]

    def _chat(self, messages: list[Message]) -> str:
        gen = {"max_new_tokens": self.s.user.max_new_tokens} if self.s.user.max_new_tokens else {}
        res: ChatResult = self.engine.chat(messages, None, **gen)
        self._tok[0] += res.prompt_tokens or 0
        self._tok[1] += res.completion_tokens or 0
        self._tok[2] += res.latency_s or 0.0
        return (res.text or "").strip()

    def _values(self) -> dict[str, str]:
        return {
            "instruction": self.task.instruction,
            "image_description": self.task.image_description or "(nothing described)",
            "summary": self.summary,
        }

    def _actor_system(self, problem: str | None, chitchat: str | None, feedback: str) -> str:
        a = self.p["actor"]
        parts = [a["common"]]
        if self.mode == "static":
            parts.append(a["static_first"] if self.turn == 1 else a["static_followup"])
        else:
            parts.append(a[self.mode])
        if self.mode == "hard" and chitchat and self.s.user.chitchat == "prompt":
            parts.append(a["hard_chitchat"])
        if self.mode == "hard" and problem:
            parts.append(a["hard_malformed"])
        if feedback:
            parts.append(a["rewrite"])
        text = "\n".join(parts)
        return _fill(
            text,
            **self._values(),
            chitchat=chitchat or "",
            problem=problem or "",
            feedback=feedback,
        )

    def _actor(self, problem: str | None, chitchat: str | None, feedback: str) -> str:
        msgs = [Message(role="system", content=self._actor_system(problem, chitchat, feedback))]
        # the Actor plays the user: the agent's lines are its input, its own lines its output
        for who, text in self.dialogue:
            msgs.append(Message(role="user" if who == "agent" else "assistant", content=text))
        if not self.dialogue:
            opening = OFFICIAL_OPENING if self.s.runner == "official" else OPENING
            msgs.append(Message(role="user", content=opening))
        return self._chat(msgs)

    def _evaluate(self, draft: str) -> tuple[UserVerdict, str, str | None]:
        e = self.p["evaluator"]
        shown = "\n".join(f"{who}: {text}" for who, text in self.dialogue) or "(empty)"
        msgs = [
            Message(role="system", content=_fill(e["system"], **self._values())),
            Message(role="user", content=_fill(e["user"], dialogue=shown, draft=draft)),
        ]
        return parse_verdict(self._chat(msgs), self.turn)

    def _chitchat(self) -> str | None:
        if not self.chitchat:
            return None
        rng = random.Random(f"{self.s.user.seed}:{self.task.task_id}:{self.turn}")
        return rng.choice(self.chitchat)

    def _static_followup(self, text: str) -> str:
        if is_stop(text):
            return STOP
        acks = self.p["acknowledgements"]
        return acks[(self.turn - 2) % len(acks)]

    def _turn(self, problem: str | None) -> UserTurn:
        self.turn += 1
        chitchat = self._chitchat()
        draft = self._actor(problem, chitchat, "")
        verdict, errors, rewrites = None, [], 0
        if self.s.user.evaluator:
            verdict, feedback, err = self._evaluate(draft)
            errors += [err] if err else []
            official = self.s.runner == "official"
            if official and not verdict.all_pass and self.s.user.max_rewrites and not err:
                # run/utils.py check_user_contradiction: one correction, not evaluated again
                rewrites = 1
                draft = self._actor(problem, chitchat, feedback or "a criterion failed")
            while (
                not official
                and not verdict.all_pass
                and rewrites < self.s.user.max_rewrites
                and not err
            ):
                rewrites += 1
                draft = self._actor(problem, chitchat, feedback or "a criterion failed")
                verdict, feedback, err = self._evaluate(draft)
                errors += [err] if err else []
            verdict = verdict.model_copy(update={"rewrites": rewrites})
        text = draft
        if self.mode == "static" and self.turn > 1:
            text = self._static_followup(draft)
        elif (
            self.mode == "hard"
            and chitchat
            and self.s.user.chitchat == "append"
            and not is_stop(draft)
        ):
            text = f"{draft} {chitchat}"
        self.dialogue.append(("user", text))
        return UserTurn(
            text=text,
            verdict=verdict,
            prompt_tokens=self._tok[0],
            completion_tokens=self._tok[1],
            latency_s=self._tok[2],
            errors=errors,
        )

    def _summarize(self) -> None:
        if not self.s.user.summarizer or len(self.dialogue) < 2:
            return
        sm = self.p["summarizer"]
        exchange = "\n".join(f"{who}: {text}" for who, text in self.dialogue[-2:])
        msgs = [
            Message(
                role="system",
                content=_fill(
                    sm["system"], **self._values(), sentences=self.s.user.summary_sentences
                ),
            ),
            Message(
                role="user", content=_fill(sm["user"], summary=self.summary, exchange=exchange)
            ),
        ]
        text = self._chat(msgs)
        if text:
            keep = _SENTENCE.split(text)[: self.s.user.summary_sentences]
            self.summary = " ".join(keep)

    def first(self) -> UserTurn:
        """The opening message (static mode: the whole request)."""
        self._tok = [0, 0, 0.0]
        return self._turn(None)

    def reply(self, agent_text: str, problem: str | None = None) -> UserTurn:
        """The next message after the agent's reply; the summary is updated first."""
        self._tok = [0, 0, 0.0]
        self.dialogue.append(("agent", agent_text))
        self._summarize()
        return self._turn(problem)
