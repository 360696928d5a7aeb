"""OmniMMI proactive alerting (``omnimmi/proactive_alerting.json``) and speaker identification
(``omnimmi/speaker_identification.json``) -> interactions.

- ``omnimmi-pa``: "Signal me when ..." over a 150-s clip; the event interval ``answer`` = [s, e]
  is in seconds from the clip's start. Query at 0 s (the peer injects it before the first frame).
- ``omnimmi-si``: "Who ...?" at ``timestamp`` (seconds from the video file's start) -> T8-B,
  reference the speaker's name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from interactscope.streaming.importers.common import (
    Conversion,
    Dropped,
    SourceItem,
    ignored_extras,
    parse_each,
    stem,
)
from interactscope.streaming.schema import Interaction, Query, Target

SPEECH_WORDS = re.compile(
    r"\b(mention\w*|talk\w*|say\w*|said|speak\w*|discuss\w*)\b",
    re.I,
)
"""Questions citing speech get ``auditory`` evidence."""

_REQUEST = re.compile(
    r"^.*?\b(?:when|where)\s+(?:(?:the\s+)?video\s+"
    r"(?:shows|focuses on|describes|illustrates|shifts to)\s+)?",
    re.I,
)
"""Leading request phrase ("Notify me when the video shows ") stripped to derive a reference."""


class PASettings(BaseModel):
    """``target``: ``onset`` — task T2 with ``time_s`` = s (event notification with a request);
    ``interval`` — task T8-A with ``interval_s`` = [s, e], how the peer scores (needed by the
    ``omnimmi-pa`` peer scoring variant). ``reference``: ``derived`` — the question without its
    request phrase ("the woman ... grooming a horse"); ``question`` — the question itself."""

    model_config = ConfigDict(extra="forbid")
    target: Literal["onset", "interval"] = "onset"
    reference: Literal["derived", "question"] = "derived"


class SISettings(BaseModel):
    """No settings: the mapping is fixed."""

    model_config = ConfigDict(extra="forbid")


class PAItem(SourceItem):
    video: str
    question: str
    answer: tuple[float, float]


class SIItem(SourceItem):
    video: str
    question: str
    answer: str
    timestamp: float = Field(ge=0)


def source_of_clip(video: str) -> str:
    """``x4kKIm8WWOA_360.0_510.0.mp4`` -> ``x4kKIm8WWOA`` (the source video: the cluster)."""
    m = re.match(r"^(.*)_\d+(?:\.\d+)?_\d+(?:\.\d+)?$", stem(video))
    return m.group(1) if m else stem(video)


def derive_reference(question: str) -> str:
    """The event a PA question asks about, without the request phrase and final period.
    ``"Signal me when the video shows the woman grooming a horse."`` ->
    ``"the woman grooming a horse"``; a question without when/where is kept whole (without
    its final period)."""
    body = _REQUEST.sub("", question, count=1).strip().rstrip(".").strip()
    return body or question.strip()


def _parsed(
    conv: Conversion, model: type[SourceItem], raw: list, items: list
) -> Iterator[tuple[int, str, Any]]:
    """(position, source id, item) of every entry of ``raw`` that parses as ``model`` (each also
    appended to ``items``); an entry that does not parse is dropped on ``conv``."""
    for pos, it in parse_each(conv, model, raw, str):
        items.append(it)
        yield pos, str(pos), it


def _note_ignored(conv: Conversion, items: list[SourceItem]) -> None:
    for name in ignored_extras(items):
        conv.fields_ignored.setdefault(name, "not part of the mapping")


def convert_pa(raw: list, settings: PASettings) -> Conversion:
    """PA items -> ``omnimmi-pa-<position>`` interactions (T2 or T8-A, see ``PASettings``).

    Dropped: items that do not parse, an interval with s > e."""
    conv = Conversion()
    items: list[PAItem] = []
    for pos, sid, it in _parsed(conv, PAItem, raw, items):
        s, e = it.answer
        if s > e:
            conv.dropped.append(Dropped(source_id=sid, reason=f"answer interval [{s}, {e}]: s > e"))
            continue
        vid = stem(it.video)
        conv.add_video(vid, it.video, cluster=source_of_clip(it.video))
        ref = derive_reference(it.question) if settings.reference == "derived" else it.question
        evidence = "auditory" if SPEECH_WORDS.search(it.question) else "visual"
        if settings.target == "onset":
            task, tgt = "T2", Target(id="t0", reference=ref, time_s=s, evidence=evidence)
        else:
            task, tgt = "T8-A", Target(id="t0", reference=ref, interval_s=(s, e), evidence=evidence)
        iid = f"omnimmi-pa-{pos}"
        conv.interactions.append(
            Interaction(
                id=iid,
                video_id=vid,
                task=task,
                query=Query(time_s=0.0, text=it.question),
                targets=[tgt],
                notes=f"OmniMMI PA event interval [{s:g}, {e:g}] s",
            )
        )
        conv.source_ids[iid] = sid
    if settings.target == "onset":
        conv.fields_ignored["answer[1]"] = (
            "event end: a T2 target has one time (set target=interval to keep it)"
        )
    _note_ignored(conv, items)
    conv.notes.append("the peer has no reference text; references are derived from the question")
    return conv


def convert_si(raw: list, settings: SISettings) -> Conversion:
    """SI items -> T8-B interactions ``omnimmi-si-<position>``, evidence auditory.

    Dropped: items that do not parse."""
    conv = Conversion()
    items: list[SIItem] = []
    for pos, sid, it in _parsed(conv, SIItem, raw, items):
        vid = stem(it.video)
        conv.add_video(vid, it.video)
        iid = f"omnimmi-si-{pos}"
        t = round(it.timestamp, 3)  # e.g. 6.399000000000001 -> 6.399
        conv.interactions.append(
            Interaction(
                id=iid,
                video_id=vid,
                task="T8-B",
                query=Query(time_s=t, text=it.question),
                targets=[Target(id="t0", reference=it.answer, time_s=t, evidence="auditory")],
            )
        )
        conv.source_ids[iid] = sid
    _note_ignored(conv, items)
    return conv
