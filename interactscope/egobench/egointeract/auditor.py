"""The EgoInteract auditor: a text-only model call that checks one proposal (a batch of calls
that includes a state-changing one, or a final reply) against the evidence ledger and answers
approve / reject / need_more_evidence / revise (replies only).

An answer that cannot be read (no JSON object, an unknown verdict, ``revise`` on a call batch,
``revise`` without a reply) counts as ``reject`` with ``unparseable: true``; it never approves."""

from __future__ import annotations

import json
import re
import time
from string import Template
from typing import Any

from pydantic import BaseModel

from interactscope.core.errors import InteractScopeError
from interactscope.egobench.agents.base import EpisodeContext
from interactscope.egobench.egointeract.config import EgoInteractSettings
from interactscope.egobench.egointeract.ledger import Ledger, Proposal
from interactscope.egobench.egointeract.rules import SceneRules
from interactscope.egobench.egointeract.texts import load_texts
from interactscope.engines import Message

VERDICTS = ("approve", "reject", "need_more_evidence", "revise")


class AuditorError(InteractScopeError, RuntimeError):
    """The auditor's engine failed; one line (the episode ends with ``error``)."""


class Decision(BaseModel):
    """A read auditor answer: verdict, short reason, revised reply, whether it was unreadable,
    the raw text (cut to 500 characters), and the call's tokens and time (s)."""

    verdict: str
    reason: str = ""
    revised: str | None = None
    unparseable: bool = False
    raw: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0


def _first_object(text: str) -> dict[str, Any] | None:
    dec = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = dec.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def parse_decision(text: str, kind: str) -> Decision:
    """The auditor's answer ``text`` on a proposal of ``kind`` (``calls`` or ``reply``).

    Returns a :class:`Decision`; anything unreadable is ``reject`` with ``unparseable``."""
    raw = (text or "")[:500]
    obj = _first_object(text or "")

    def bad(why: str) -> Decision:
        return Decision(
            verdict="reject", reason=f"unparseable auditor answer: {why}", unparseable=True, raw=raw
        )

    if obj is None:
        return bad("no JSON object")
    verdict = re.sub(r"[\s-]+", "_", str(obj.get("verdict", "")).strip().lower())
    if verdict not in VERDICTS:
        return bad(f"verdict {obj.get('verdict')!r} is not one of {', '.join(VERDICTS)}")
    reply = obj.get("reply")
    if verdict == "revise" and kind != "reply":
        return bad("revise applies to final replies only")
    if verdict == "revise" and not (isinstance(reply, str) and reply.strip()):
        return bad("revise without a reply")
    reason = str(obj.get("reason") or "").strip()
    return Decision(
        verdict=verdict,
        reason=reason[:300],
        revised=reply.strip() if verdict == "revise" else None,
        raw=raw,
    )


class Auditor:
    """The auditor over ``engine`` (temperature ``settings.auditor_temperature``); stateless
    between reviews: each review sends the system prompt and the ledger afresh."""

    def __init__(self, engine: Any, name: str, settings: EgoInteractSettings):
        self.engine, self.name, self.s = engine, name, settings

    def begin(self, ctx: EpisodeContext, rules: SceneRules | None) -> None:
        """Build the system prompt for this episode's scenario (with the rules when given)."""
        self.t = load_texts("auditor", self.s.prompt_version)
        sub = {"scenario": ctx.scenario}
        self.system = Template(self.t["system"]).safe_substitute(sub)
        if rules is not None:
            self.system += "\n" + Template(self.t["rules"]).safe_substitute(
                sub, rules=rules.guidance()
            )
        self.max_new_tokens = ctx.settings.agent.max_new_tokens

    def review(self, ledger: Ledger, proposal: Proposal) -> Decision:
        """One model call on ``proposal``.

        Raises:
            AuditorError: the engine failed (one line)."""
        body = (
            json.dumps([c.model_dump() for c in proposal.calls], ensure_ascii=False)
            if proposal.kind == "calls"
            else proposal.text
        )
        text = Template(self.t["request"]).safe_substitute(
            ledger=ledger.for_auditor(self.s.ledger_output_chars),
            kind="state-changing calls" if proposal.kind == "calls" else "final reply",
            proposal=body,
        )
        gen: dict[str, Any] = {"temperature": self.s.auditor_temperature}
        if self.max_new_tokens:
            gen["max_new_tokens"] = self.max_new_tokens
        messages = [Message(role="system", content=self.system), Message(role="user", content=text)]
        t0 = time.perf_counter()
        try:
            res = self.engine.chat(messages, None, **gen)
        except Exception as exc:  # noqa: BLE001 - any engine failure ends the episode in one line
            line = (str(exc).strip().splitlines() or [""])[0]
            raise AuditorError(f"auditor engine: {type(exc).__name__}: {line}") from None
        d = parse_decision(res.text or "", proposal.kind)
        return d.model_copy(
            update={
                "prompt_tokens": res.prompt_tokens or 0,
                "completion_tokens": res.completion_tokens or 0,
                "latency_s": res.latency_s
                if res.latency_s is not None
                else time.perf_counter() - t0,
            }
        )
