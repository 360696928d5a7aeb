"""OVO-Bench (``data/ovo_bench_new.json``) -> interactions.

Two formats read the same file and keep different tasks:

- ``ovo-backward``: backward / real-time multiple-choice items (EPM, ASI, HLD, STU, OJR, ATR,
  ACR, OCR, FPD) -> T8-B, query and target at ``realtime``, reference ``options[gt]``.
- ``ovo-forward``: CRR -> T2 (target at ``clue_time``), REC -> T4 (one target per repetition end,
  reference the running count), SSR -> T8-C (one target per step start, reference the step).

All times are seconds from the source video file's start (docs/importers.md, OVO-Bench).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from interactscope.streaming.importers.common import (
    Conversion,
    Dropped,
    SourceItem,
    ignored_extras,
    parse_each,
    parse_item,
    stem,
)
from interactscope.streaming.schema import Interaction, Query, Target

BACKWARD_TASKS = ("EPM", "ASI", "HLD", "STU", "OJR", "ATR", "ACR", "OCR", "FPD")
FORWARD_TASKS = ("CRR", "SSR", "REC")


class BackwardSettings(BaseModel):
    """``options_in_query``: append the lettered options to the query text, as the peer's
    multiple-choice prompt does (needed by the ``ovo-letter`` peer scoring variant)."""

    model_config = ConfigDict(extra="forbid")
    options_in_query: bool = True


class ForwardSettings(BaseModel):
    """``query_time``: where REC and SSR queries are placed (the file has no ask time):
    ``zero`` — at 0 s; ``first_probe`` — at the first probe time (targets before it are dropped)."""

    model_config = ConfigDict(extra="forbid")
    query_time: Literal["zero", "first_probe"] = "zero"


class OVOItem(SourceItem):
    id: int
    task: str
    video: str


class BackwardItem(OVOItem):
    realtime: float = Field(ge=0)
    question: str
    options: list[str] = Field(min_length=1)
    gt: int


class Probe(SourceItem):
    realtime: float = Field(ge=0)


class CRRItem(OVOItem):
    question: str
    answer: str
    ask_time: float = Field(ge=0)
    clue_time: float = Field(ge=0)
    test_info: list[Probe] = Field(default_factory=list)


class SSRItem(OVOItem):
    tutorial: str
    all_steps: list[str] = Field(min_length=1)
    start_time: list[float]
    end_time: list[float]
    test_info: list[Probe] = Field(default_factory=list)


class RECItem(OVOItem):
    activity: str
    start_times: list[float]
    end_times: list[float] = Field(min_length=1)
    test_info: list[Probe] = Field(default_factory=list)


FORWARD_MODELS: dict[str, type[OVOItem]] = {"CRR": CRRItem, "SSR": SSRItem, "REC": RECItem}

IGNORED_BACKWARD = {
    "answer": "free-text answer; the peer scores options[gt], which is the reference "
    "(they differ for some items, see notes)",
}
IGNORED_FORWARD = {
    "test_info": "the peer's probe times; interactscope probes every decision point",
    "end_time": "SSR step ends: T8-C targets have a time, not an interval",
    "start_times": "REC repetition starts: a count is due when a repetition ends",
}


def letter(i: int) -> str:
    """Option letter of 0-based index ``i`` (the peer's ``chr(65 + gt)``)."""
    return chr(65 + i)


def lettered_options(options: list[str]) -> str:
    """``Options: A. x; B. y`` one per line, as the peer's prompt letters them."""
    return "\n".join(f"{letter(i)}. {o}" for i, o in enumerate(options))


def split_camel(name: str) -> str:
    """``PutOnHairExtensions`` -> ``put on hair extensions``."""
    return " ".join(w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", name))


def _video(conv: Conversion, item: OVOItem) -> str:
    vid = stem(item.video)
    conv.add_video(vid, item.video)
    return vid


def _parse(raw: list, tasks: tuple[str, ...], conv: Conversion, models: dict) -> list[OVOItem]:
    out: list[OVOItem] = []
    for pos, head in parse_each(conv, OVOItem, raw):
        sid = str(head.id)
        if head.task not in tasks:
            other = "ovo-forward" if head.task in FORWARD_TASKS else "ovo-backward"
            conv.dropped.append(Dropped(source_id=sid, reason=f"task {head.task} (use {other})"))
            continue
        item = parse_item(models[head.task], raw[pos], sid)
        if isinstance(item, Dropped):
            conv.dropped.append(item)
            continue
        out.append(item)
    return out


def convert_backward(raw: list, settings: BackwardSettings) -> Conversion:
    """Backward / real-time items -> T8-B interactions ``ovo-<id>``.

    Dropped: forward tasks, items that do not parse, ``gt`` outside the options."""
    conv = Conversion()
    items = _parse(raw, BACKWARD_TASKS, conv, {t: BackwardItem for t in BACKWARD_TASKS})
    differs: list[str] = []
    for it in items:
        sid = str(it.id)
        if not 0 <= it.gt < len(it.options):
            conv.dropped.append(
                Dropped(source_id=sid, reason=f"gt {it.gt} outside the {len(it.options)} options")
            )
            continue
        ref = it.options[it.gt]
        answer = (it.model_extra or {}).get("answer")
        if isinstance(answer, str) and answer.strip() != ref.strip():
            differs.append(sid)
        text = it.question
        if settings.options_in_query:
            text = f"{it.question}\n{lettered_options(it.options)}"
        iid = f"ovo-{it.id}"
        conv.interactions.append(
            Interaction(
                id=iid,
                video_id=_video(conv, it),
                task="T8-B",
                query=Query(time_s=it.realtime, text=text),
                targets=[Target(id="t0", reference=ref, time_s=it.realtime, evidence="visual")],
                notes=f"OVO-Bench {it.task}; correct option {letter(it.gt)}",
            )
        )
        conv.source_ids[iid] = sid
    conv.fields_ignored = dict(IGNORED_BACKWARD)
    for name in ignored_extras(items):
        conv.fields_ignored.setdefault(name, "not part of the mapping")
    if differs:
        conv.notes.append(
            f"{len(differs)} items whose 'answer' differs from options[gt] (reference = "
            f"options[gt], what the peer scores): ids {', '.join(differs)}"
        )
    return conv


def _interaction(
    conv: Conversion,
    it: CRRItem | RECItem | SSRItem,
    task: str,
    query: tuple[float, str],
    targets: list[Target],
    texts: tuple[str, str],
) -> Interaction | str:
    """The interaction of a forward item asked at ``query`` = (time_s, text); ``texts`` =
    (notes, why the item is dropped when ``targets`` is empty)."""
    if not targets:
        return texts[1]
    return Interaction(
        id=f"ovo-{it.id}",
        video_id=_video(conv, it),
        task=task,
        query=Query(time_s=query[0], text=query[1]),
        targets=targets,
        notes=texts[0],
    )


def _after(timed: list[tuple[float, str]], q: float) -> list[Target]:
    """One visual target ``t<i>`` per ``(time_s, reference)`` at or after ``q`` (``i`` counts
    the earlier ones too)."""
    return [
        Target(id=f"t{i}", reference=ref, time_s=t, evidence="visual")
        for i, (t, ref) in enumerate(timed)
        if t >= q
    ]


def _crr(conv: Conversion, it: CRRItem) -> Interaction | str:
    if it.clue_time < it.ask_time:
        return "clue_time before ask_time"
    target = Target(id="t0", reference=it.answer, time_s=it.clue_time, evidence="visual")
    notes = "OVO-Bench CRR: the answer is due when the clue appears"
    return _interaction(conv, it, "T2", (it.ask_time, it.question), [target], (notes, ""))


def _query_time(it: SSRItem | RECItem, settings: ForwardSettings) -> float:
    if settings.query_time == "first_probe" and it.test_info:
        return min(p.realtime for p in it.test_info)
    return 0.0


def _rec(conv: Conversion, it: RECItem, settings: ForwardSettings) -> Interaction | str:
    q = _query_time(it, settings)
    # count i+1 is due when the (i+1)-th repetition ends; ends before q cannot be targets
    ends = [(e, str(i + 1)) for i, e in enumerate(sorted(it.end_times))]
    text = f"Tell me each time they finish {it.activity}, with the running count."
    notes = "OVO-Bench REC: reference = repetitions completed so far"
    none = f"every repetition ends before the query time {q}"
    return _interaction(conv, it, "T4", (q, text), _after(ends, q), (notes, none))


def _ssr(conv: Conversion, it: SSRItem, settings: ForwardSettings) -> Interaction | str:
    if len(it.start_time) != len(it.all_steps):
        return f"{len(it.all_steps)} steps but {len(it.start_time)} start times"
    q = _query_time(it, settings)
    steps = sorted(zip(it.start_time, it.all_steps, strict=True), key=lambda x: x[0])
    text = f"Guide me step by step: I want to {split_camel(it.tutorial)}."
    texts = (
        f"OVO-Bench SSR tutorial {it.tutorial}",
        f"every step starts before the query time {q}",
    )
    return _interaction(conv, it, "T8-C", (q, text), _after(steps, q), texts)


def convert_forward(raw: list, settings: ForwardSettings) -> Conversion:
    """CRR/REC/SSR items -> T2/T4/T8-C interactions ``ovo-<id>``.

    Dropped: backward tasks, items that do not parse, a clue before the ask time, SSR step lists
    and start times of different lengths, items with no target at or after the query."""
    conv = Conversion()
    items = _parse(raw, FORWARD_TASKS, conv, FORWARD_MODELS)
    n_before = 0
    for it in items:
        if isinstance(it, CRRItem):
            res = _crr(conv, it)
        elif isinstance(it, RECItem):
            res = _rec(conv, it, settings)
            if isinstance(res, Interaction):
                n_before += len(it.end_times) - len(res.targets)
        else:
            res = _ssr(conv, it, settings)
            if isinstance(res, Interaction):
                n_before += len(it.all_steps) - len(res.targets)
        if isinstance(res, str):
            conv.dropped.append(Dropped(source_id=str(it.id), reason=res))
            continue
        conv.interactions.append(res)
        conv.source_ids[res.id] = str(it.id)
    conv.fields_ignored = dict(IGNORED_FORWARD)
    for name in ignored_extras(items):
        conv.fields_ignored.setdefault(name, "not part of the mapping")
    if n_before:
        conv.notes.append(f"{n_before} REC/SSR targets before the query time were left out")
    return conv
