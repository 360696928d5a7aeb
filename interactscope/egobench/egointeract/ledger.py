"""The evidence ledger: everything the EgoInteract policy knows in one episode, in order. The
service agent plans from it and the auditor judges proposals against it; it is written into the
episode's log (``EpisodeRecord.ledger``) so a reader can see why a call was blocked.

Entries (``seq`` counts from 0 in the order they happened; ``turn`` is the user turn, from 1):
``user`` (a user message), ``reply`` (an agent message the user saw), ``hypothesis`` (a visual
hypothesis of the service agent), ``branch`` (the branch it says it follows), ``frames`` (it
asked for the video), ``call`` (an executed tool call with its result and class), ``verdict``
(the auditor's decision on a proposal, with its reason), ``deferred`` (calls handed back
unexecuted) and ``limit`` (the correction limit was reached and what was done)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from interactscope.egobench.records import ToolCall, ToolResult

FORMAT = "interactscope.egointeract.ledger/1"
Verdict = Literal["approve", "reject", "need_more_evidence", "revise"]


class _Entry(BaseModel):
    seq: int = 0
    turn: int = 0


class TextEntry(_Entry):
    """A user message, a reply shown to the user, a visual hypothesis, or the active branch."""

    kind: Literal["user", "reply", "hypothesis", "branch"]
    text: str


class FramesEntry(_Entry):
    """The service agent asked for the video; ``n_frames`` were shown (0 without pixels)."""

    kind: Literal["frames"] = "frames"
    n_frames: int = 0
    sees_pixels: bool = False


class CallEntry(_Entry):
    """One executed tool call and its result; ``tool_class`` is read / compute / write;
    ``audited`` says whether an approved (or forced) proposal contained it."""

    kind: Literal["call"] = "call"
    call: ToolCall
    tool_class: Literal["read", "compute", "write"]
    result: ToolResult
    audited: bool = False


class Proposal(BaseModel):
    """What the service agent proposed: a batch of calls or a final reply."""

    kind: Literal["calls", "reply"]
    calls: list[ToolCall] = Field(default_factory=list)
    text: str = ""


class VerdictEntry(_Entry):
    """The auditor's verdict on ``proposal`` (``attempt`` counts from 1 per proposal).
    ``unparseable`` marks an answer that could not be read (it counts as ``reject``);
    ``revised`` is the auditor's replacement reply for ``revise``."""

    kind: Literal["verdict"] = "verdict"
    proposal: Proposal
    attempt: int
    verdict: Verdict
    reason: str = ""
    revised: str | None = None
    unparseable: bool = False
    raw: str = ""


class DeferredEntry(_Entry):
    """Calls of a batch handed back to the service agent unexecuted (they followed reads)."""

    kind: Literal["deferred"] = "deferred"
    calls: list[ToolCall]
    reason: str


class LimitEntry(_Entry):
    """The correction limit was reached on ``proposal``; ``action`` is what the policy did."""

    kind: Literal["limit"] = "limit"
    proposal: Proposal
    action: Literal["execute", "stop"]


Entry = Annotated[
    TextEntry | FramesEntry | CallEntry | VerdictEntry | DeferredEntry | LimitEntry,
    Field(discriminator="kind"),
]


class Ledger(BaseModel):
    """The ledger of one episode: who played (models), the policy's settings and the entries.

    Views: :attr:`calls`, :attr:`verdicts`, :attr:`state_changes` (executed writes that
    succeeded), :attr:`computed` (compute-tool results), :attr:`branch` (the latest one)."""

    format: Literal["interactscope.egointeract.ledger/1"] = FORMAT
    scenario: str = ""
    service_model: str = ""
    auditor_model: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    entries: list[Entry] = Field(default_factory=list)

    def add(self, entry: Any) -> Any:
        """Append ``entry`` with the next ``seq``; returns it."""
        entry.seq = len(self.entries)
        self.entries.append(entry)
        return entry

    def of(self, kind: str) -> list[Any]:
        """The entries of one kind, in order."""
        return [e for e in self.entries if e.kind == kind]

    @property
    def calls(self) -> list[CallEntry]:
        return self.of("call")

    @property
    def verdicts(self) -> list[VerdictEntry]:
        return self.of("verdict")

    @property
    def state_changes(self) -> list[CallEntry]:
        return [c for c in self.calls if c.tool_class == "write" and c.result.ok]

    @property
    def computed(self) -> list[CallEntry]:
        return [c for c in self.calls if c.tool_class == "compute" and c.result.ok]

    @property
    def branch(self) -> str | None:
        found = [e.text for e in self.of("branch")]
        return found[-1] if found else None

    def for_auditor(self, output_chars: int) -> str:
        """The ledger as text lines for the auditor (no pixels: it never sees images); each
        tool output is cut to ``output_chars`` characters."""
        lines = []
        for e in self.entries:
            if isinstance(e, TextEntry):
                lines.append(f"[{e.seq}] {e.kind} (turn {e.turn}): {e.text}")
            elif isinstance(e, CallEntry):
                r = e.result
                body = json.dumps(r.output if r.ok else r.error, ensure_ascii=False, default=str)
                if len(body) > output_chars:
                    body = body[:output_chars] + f"... ({len(body)} chars)"
                lines.append(
                    f"[{e.seq}] {e.tool_class} call {e.call.name}"
                    f"({json.dumps(e.call.arguments, ensure_ascii=False)}) -> "
                    f"{'ok' if r.ok else 'failed'}: {body}"
                )
            elif isinstance(e, VerdictEntry):
                lines.append(
                    f"[{e.seq}] auditor {e.verdict} on {e.proposal.kind}: {e.reason or '-'}"
                )
            elif isinstance(e, FramesEntry):
                lines.append(f"[{e.seq}] the service agent looked at the video")
            elif isinstance(e, DeferredEntry):
                lines.append(f"[{e.seq}] deferred {[c.name for c in e.calls]}: {e.reason}")
        return "\n".join(lines) or "(empty)"
