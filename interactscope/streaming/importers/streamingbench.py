"""StreamingBench Proactive Output (``src/data/questions_proactive.json``) -> T2 interactions.

Each question "When <event>, output "<text>"." becomes one event-notification interaction: query
at ``time_stamp``, one target at ``ground_truth_time_stamp`` whose reference is
``ground_truth_output``. Times are whole seconds from the video file's start
(docs/importers.md, StreamingBench).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict

from interactscope.streaming.importers.common import (
    Conversion,
    Dropped,
    SourceItem,
    hms_to_s,
    ignored_extras,
    parse_item,
)
from interactscope.streaming.schema import Interaction, Query, Target

FORMAT = "streamingbench-po"
TASK_TYPE = "Proactive Output"


class Settings(BaseModel):
    """No settings: the mapping is fixed."""

    model_config = ConfigDict(extra="forbid")


class SBQuestion(SourceItem):
    task_type: str
    question: str
    time_stamp: str
    ground_truth_time_stamp: str
    ground_truth_output: str


class SBEntry(SourceItem):
    questions: list[dict]
    video_path: str


IGNORED = {
    "time": "a descriptive segment of the source video; the pipeline never reads it",
    "video_categories": "content category; no field for it (the video id is the cluster)",
    "required_ability": "always 'working memory'",
    "task_type": "always 'Proactive Output' (checked; other values are dropped)",
}


def video_id_of(video_path: str) -> str:
    """``./videos/sample_17_proactive.mp4`` -> ``sample_17_proactive``."""
    return PurePosixPath(video_path).stem


def question_times(q: SBQuestion) -> tuple[int, int]:
    """(query time q, event time g) in whole seconds. Raises ValueError on a bad time string."""
    return hms_to_s(q.time_stamp), hms_to_s(q.ground_truth_time_stamp)


def iter_questions(raw: list) -> list[tuple[str, SBEntry | None, SBQuestion | Dropped]]:
    """(source id ``<entry>-<question>``, entry, question or why it does not parse) per question."""
    out: list[tuple[str, SBEntry | None, SBQuestion | Dropped]] = []
    for i, item in enumerate(raw):
        entry = parse_item(SBEntry, item, str(i))
        if isinstance(entry, Dropped):
            out.append((str(i), None, entry))
            continue
        for j, qraw in enumerate(entry.questions):
            sid = f"{i}-{j}"
            out.append((sid, entry, parse_item(SBQuestion, qraw, sid)))
    return out


def convert(raw: list, settings: Settings) -> Conversion:
    """Convert the entries of ``questions_proactive.json``.

    Returns one T2 interaction ``streamingbench-po-<entry>-<question>`` per question (ids are
    positions: the file has none). Dropped: entries or questions that do not parse, a task type
    other than Proactive Output, a bad time string, an event before the query."""
    conv = Conversion()
    parsed: list = []
    for sid, entry, q in iter_questions(raw):
        if isinstance(q, Dropped):
            conv.dropped.append(q)
            continue
        if entry is not None and all(entry is not e for e in parsed):
            parsed.append(entry)
        parsed.append(q)
        if q.task_type != TASK_TYPE:
            conv.dropped.append(Dropped(source_id=sid, reason=f"task_type {q.task_type!r}"))
            continue
        try:
            t_query, t_event = question_times(q)
        except ValueError as exc:
            conv.dropped.append(Dropped(source_id=sid, reason=str(exc)))
            continue
        if t_event < t_query:
            conv.dropped.append(
                Dropped(source_id=sid, reason="ground_truth_time_stamp before time_stamp")
            )
            continue
        iid = f"{FORMAT}-{sid}"
        vid = video_id_of(entry.video_path)
        conv.add_video(vid, PurePosixPath(entry.video_path).name)
        conv.interactions.append(
            Interaction(
                id=iid,
                video_id=vid,
                task="T2",
                query=Query(time_s=float(t_query), text=q.question),
                targets=[
                    Target(
                        id="t0",
                        reference=q.ground_truth_output,
                        time_s=float(t_event),
                        evidence="visual",
                    )
                ],
            )
        )
        conv.source_ids[iid] = sid
    conv.fields_ignored = dict(IGNORED)
    for name in ignored_extras(parsed):
        conv.fields_ignored.setdefault(name, "not part of the mapping")
    conv.notes.append(
        "the peer's yes/no polling suffix (which contains the reference) is not part of the query"
    )
    return conv
