"""Judge interface, the versioned judge prompt and the strict verdict parser (docs/protocol.md#judges-and-caching).

A judge answers, for (request, reference, candidate) triples, whether the candidate conveys the
reference. Model judges (``openai:``, ``local:``) send :func:`judge_messages` and parse the answer
with :func:`parse_verdict`; offline judges (``lexical``, ``embedding``) decide directly and carry an
``approximation`` label; the ``file:`` judge looks verdicts up per (interaction, target, time).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interactscope.core.errors import InteractScopeError

__all__ = [
    "JUDGE_PROMPT_VERSION",
    "Judge",
    "JudgeError",
    "JudgeItem",
    "Verdict",
    "judge_messages",
    "judge_note",
    "parse_verdict",
]

PAPER_JUDGE = "openai:gpt-4o"
"""The ``--judge`` string of the paper's judge (GPT-4o)."""


def judge_note(name: str, approximation: str | None) -> str | None:
    """The line every output (``score``'s NOTE, the demo leaderboard, ``report.md``) gives an
    approximate judge: its name, that it stands in for the paper's GPT-4o judge, and its
    ``approximation`` label; ``None`` for an exact judge."""
    if not approximation:
        return None
    return (
        f"judge '{name}' is an approximation of the paper's GPT-4o judge "
        f"(--judge {PAPER_JUDGE}): {approximation}"
    )


JUDGE_PROMPT_VERSION = "judge-v1"
"""Version of :data:`JUDGE_SYSTEM` / :data:`JUDGE_USER`; part of every cache key. Bump it whenever
either text changes."""

JUDGE_SYSTEM = (
    "You grade the replies of an always-on audio-visual assistant. You are given the user's "
    "request, a reference reply written by an annotator for one moment of the stream, and the "
    "assistant's candidate reply at that moment. Decide whether the candidate conveys the "
    "essential content of the reference: the same event, state, answer, warning or guidance "
    "step. Wording, length and extra harmless detail do not matter; a contradiction, a different "
    "event or a missing essential fact makes it wrong. Answer with a single word first: yes or no."
)
JUDGE_USER = (
    "User request:\n{request}\n\n"
    "Reference reply:\n{reference}\n\n"
    "Candidate reply:\n{candidate}\n\n"
    "Does the candidate convey the reference? Answer yes or no."
)


class JudgeError(InteractScopeError, RuntimeError):
    """A judge could not be built or could not be reached (after its retries)."""


@dataclass(frozen=True)
class JudgeItem:
    """One (target, response) pair to judge. ``t`` is the response time (s).

    The last three fields are for judges that look at the media (``+frames``); text judges
    ignore them, so they are not part of a text judge's cache key:

    * ``video_id``: the interaction's media file (resolved by :meth:`Judge.bind_media`);
    * ``window_s``: the target's closed window [lo, hi] in s (τ ± δ, or the annotated interval);
    * ``evidence``: the target's ``visual`` / ``auditory`` / ``other``.
    """

    interaction_id: str
    target_id: str
    t: float
    request: str
    reference: str
    candidate: str
    video_id: str | None = None
    window_s: tuple[float, float] | None = None
    evidence: str | None = None

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.request, self.reference, self.candidate)

    @property
    def pair_key(self) -> tuple[str, str, int]:
        """(interaction id, target id, response time in integer ms)."""
        return (self.interaction_id, self.target_id, int(round(self.t * 1000)))


@dataclass(frozen=True)
class Verdict:
    """``value``: True (yes) / False (no) / None (unparseable, or an error).

    ``raw`` is the judge's answer (model text, or a score such as ``"f1=0.667"``); ``error`` is a
    transport or infrastructure failure: such a verdict is not cached and stops scoring."""

    value: bool | None
    raw: str = ""
    error: str | None = None

    @property
    def label(self) -> str:
        if self.error:
            return "error"
        return {True: "yes", False: "no", None: "unparseable"}[self.value]


class Judge:
    """Base class. Subclasses set the attributes and implement :meth:`judge`.

    Attributes:
        name: the ``--judge`` string, e.g. ``openai:gpt-4o``.
        backend: ``openai`` / ``local`` / ``embedding`` / ``lexical`` / ``file``.
        model: model name or path (part of the cache key).
        prompt_version: :data:`JUDGE_PROMPT_VERSION` for model judges; the method version for
            offline ones (part of the cache key).
        approximation: a label printed with every result of an offline stand-in, else ``None``.
        per_item: verdicts are keyed by (interaction, target, time), not by triple
            (``file:``): no deduplication by triple and no cache.
        settings: extra recorded settings (threshold, concurrency, ...).
    """

    name: str = ""
    backend: str = ""
    model: str = ""
    prompt_version: str = JUDGE_PROMPT_VERSION
    approximation: str | None = None
    per_item: bool = False

    @property
    def settings(self) -> dict[str, Any]:
        return {}

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        """Verdicts for (request, reference, candidate) triples, in order."""
        raise NotImplementedError

    def unit(self, item: JudgeItem) -> tuple[str, str, str]:
        """What this judge is asked about ``item``: the unit of deduplication and caching. The
        text triple here; a judge that looks at the media returns the triple with what it will
        see attached (a tuple subclass, see :mod:`interactscope.streaming.judges.frames`)."""
        return item.triple

    def unit_key(self, unit: tuple[str, str, str]) -> str:
        """Cache key of a unit: :func:`~interactscope.streaming.judges.cache.cache_key` of (backend,
        model, prompt version, request, reference, candidate), plus the content hash of the media
        a looking judge attaches (``unit.media_sha256``)."""
        # circular: judges.cache stores this module's Verdict
        from interactscope.streaming.judges.cache import cache_key

        media = getattr(unit, "media_sha256", None)
        return cache_key(self.backend, self.model, self.prompt_version, *unit[:3], media=media)

    def bind_media(self, paths: Mapping[str, Path]) -> None:
        """Tell a judge that looks at the media where each video id's file is (no-op for text
        judges). Scoring calls it with the benchmark's ``video id -> file`` map."""

    def judge_items(self, items: list[JudgeItem]) -> list[Verdict]:
        """Verdicts for items; per-triple judges delegate to :meth:`judge`."""
        return self.judge([it.triple for it in items])

    def describe(self) -> dict[str, Any]:
        """What ``summary.json`` records about the judge."""
        return {
            "name": self.name,
            "backend": self.backend,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "approximation": self.approximation,
            **({"settings": self.settings} if self.settings else {}),
        }


def judge_messages(request: str, reference: str, candidate: str) -> list[dict[str, str]]:
    """Chat messages of the judge prompt :data:`JUDGE_PROMPT_VERSION`."""
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {
            "role": "user",
            "content": JUDGE_USER.format(
                request=request.strip() or "(no request: general assistance need)",
                reference=reference.strip(),
                candidate=candidate.strip(),
            ),
        },
    ]


_LEADING = re.compile(r"^[\W_]*(yes|no)\b", re.IGNORECASE)
_FIELDS = ("verdict", "answer", "correct", "judgement", "judgment", "label")


def _field_value(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        s = v.strip().casefold()
        if s in ("yes", "true"):
            return True
        if s in ("no", "false"):
            return False
    return None


def parse_verdict(text: str | None) -> bool | None:
    """Strict yes/no parser (docs/protocol.md#judges-and-caching).

    1. A structured field: the answer is a JSON object (optionally in a code fence) with one of
       ``verdict``/``answer``/``correct``/``judgement``/``label`` equal to yes/no/true/false.
    2. Otherwise the leading token: the first word, after leading punctuation/markup such as
       ``**`` or quotes, must be ``yes`` or ``no`` as a whole word, case-insensitive.

    Anything else (``"Answer: yes"``, ``"yesterday"``, ``"Y"``, empty) is unparseable: ``None``.
    """
    if text is None:
        return None
    s = text.strip()
    if not s:
        return None
    body = re.sub(r"^```[A-Za-z]*\s*|\s*```$", "", s)
    if body.startswith("{"):
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            for key in obj:
                if key.casefold() in _FIELDS:
                    return _field_value(obj[key])
            return None
    m = _LEADING.match(s)
    if not m:
        return None
    return m.group(1).casefold() == "yes"
