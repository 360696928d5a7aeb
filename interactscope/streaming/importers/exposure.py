"""Causal-exposure audit: how many seconds of media after the query (or probe) time each peer's
own input pipeline gives the model, and whether the reference answer is in its prompt.

Rules, one per format (the peers' code as described in docs/importers.md):

- ``streamingbench-po``: one clip [q, t] per poll t = q+1 … g+4 -> 0 s; the reference string is
  in every polling prompt.
- ``ovo-backward`` / ``ovo-forward``: clip [0, min(ceil(t), D)] per item / probe -> min(ceil(t),
  D) − t. D (duration) is only known when the videos are probed; without it ceil(t) − t is an
  upper bound (the cap can only lower it).
- ``omnimmi-pa``: frames fed one by one after the query -> 0 s.
- ``omnimmi-si``: ``offline`` (the peer's offline models) — the whole video, D − t; without D the
  largest ``timestamp`` on the same video is a lower bound of D. ``online`` -> 0 s.
- ``proassist``: frames [previous turn's index, index) at 2 fps before each turn, index =
  floor(2t), moved one frame past the previous turn's index when it would not be after it; the
  last frame shown has nominal time (index − 1)/2 -> max(0, (index − 1)/2 − t).

All times are seconds; exposures are rounded to milliseconds.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from interactscope.core.files import write_atomic
from interactscope.media import MediaError, probe
from interactscope.streaming.importers import omnimmi, ovo, proassist, streamingbench
from interactscope.streaming.importers.common import (
    ImporterError,
    parse_item,
    read_json_array,
    stem,
)

RefInPrompt = Literal["no", "verbatim", "among_options"]
Bound = Literal["exact", "upper", "lower"]


class ExposureRow(BaseModel):
    """One decision of the peer's pipeline (an item, a probe or a dialog turn)."""

    format: str
    source_id: str
    interaction_id: str
    task: str
    decision_s: float
    """The query / probe / turn time t (s)."""
    media_end_s: float | None
    """End of the media the pipeline shows for that decision (s); None when unknown."""
    exposure_s: float
    """Seconds of media after t the model is given (≥ 0)."""
    bound: Bound
    """``exact``, or ``upper`` / ``lower`` when the video duration was not measured."""
    reference_in_prompt: RefInPrompt
    pipeline: str


class TaskExposure(BaseModel):
    """Exposure figures over a set of rows."""

    task: str
    n: int
    mean_s: float
    max_s: float
    n_affected: int
    """Rows with exposure > 0."""
    share_affected: float
    mean_affected_s: float | None
    reference_in_prompt: int
    """Rows whose prompt holds the reference (verbatim or among options; the sum of the two
    below)."""
    reference_verbatim: int = 0
    """Rows whose prompt holds the reference answer itself (a leak of the answer)."""
    reference_among_options: int = 0
    """Rows whose prompt lists the reference as one multiple-choice option (the format, not a
    leak: every option is shown)."""


class ExposureSummary(BaseModel):
    """The audit of one source file: all rows together and per peer task."""

    model_config = ConfigDict(extra="forbid")
    format: str
    source: str
    unit: str
    settings: dict[str, str]
    overall: TaskExposure
    per_task: list[TaskExposure]
    bounds: dict[str, int]


def _ms(x: float) -> float:
    return round(x + 0.0, 3)


def ceil_cut(t: float, duration: float | None) -> tuple[float, float, Bound]:
    """(media end, exposure, bound) of a clip [0, ceil(t)] capped at the duration: OVO-Bench's
    ``subclip(0, math.ceil(realtime))``. Example: t = 4.04 -> end 5, exposure 0.96; t = 3.0 -> 0."""
    end = float(math.ceil(t))
    if duration is not None:
        end = min(end, duration)
        return end, _ms(max(0.0, end - t)), "exact"
    return end, _ms(end - t), "upper"


def _row(
    fmt: str,
    ids: tuple[str, str],
    task: str,
    times: tuple[float, float | None, float],
    bound: Bound,
    ref: RefInPrompt,
    pipeline: str,
) -> ExposureRow:
    """The row of one decision of format ``fmt``: ``ids`` = (source id, interaction id),
    ``times`` = (decision, media end, exposure) in s."""
    (source_id, interaction_id), (decision_s, media_end_s, exposure_s) = ids, times
    return ExposureRow(
        format=fmt,
        source_id=source_id,
        interaction_id=interaction_id,
        task=task,
        decision_s=decision_s,
        media_end_s=media_end_s,
        exposure_s=exposure_s,
        bound=bound,
        reference_in_prompt=ref,
        pipeline=pipeline,
    )


def audit_streamingbench(raw: list, durations: dict[str, float]) -> list[ExposureRow]:
    """One row per question: the clip of every poll ends at the poll time -> 0 s."""
    rows = []
    for sid, _entry, q in streamingbench.iter_questions(raw):
        if not isinstance(q, streamingbench.SBQuestion):
            continue
        try:
            t_query, t_event = streamingbench.question_times(q)
        except ValueError:
            continue
        polls = max(0, t_event + 4 - t_query)
        end = float(t_query + 1) if polls else float(t_query)
        how = f"{polls} polls t=q+1..g+4, clip [q, t] each"
        ids = (sid, f"streamingbench-po-{sid}")
        rows.append(
            _row(
                "streamingbench-po", ids, "PO", (float(t_query), end, 0.0), "exact", "verbatim", how
            )
        )
    return rows


def _ovo_rows(
    raw: list, tasks: tuple[str, ...], durations: dict[str, float], fmt: str
) -> list[ExposureRow]:
    rows = []
    for obj in raw:
        head = parse_item(ovo.OVOItem, obj, "?")
        if not isinstance(head, ovo.OVOItem) or head.task not in tasks:
            continue
        d = durations.get(stem(head.video))
        if head.task in ovo.BACKWARD_TASKS:
            it = parse_item(ovo.BackwardItem, obj, str(head.id))
            if not isinstance(it, ovo.BackwardItem):
                continue
            times = [("", it.realtime)]
            ref: RefInPrompt = "among_options"
        else:
            it = parse_item(ovo.FORWARD_MODELS[head.task], obj, str(head.id))
            if not isinstance(it, ovo.OVOItem):
                continue
            times = [(f"/{j}", p.realtime) for j, p in enumerate(it.test_info)]
            ref = "verbatim" if head.task == "SSR" else "no"
        for suffix, t in times:
            end, exp, bound = ceil_cut(t, d)
            ids = (f"{head.id}{suffix}", f"ovo-{head.id}")
            rows.append(_row(fmt, ids, head.task, (t, end, exp), bound, ref, "clip [0, ceil(t)]"))
    return rows


def audit_ovo_backward(raw: list, durations: dict[str, float]) -> list[ExposureRow]:
    """One row per backward / real-time item: min(ceil(t), D) − t."""
    return _ovo_rows(raw, ovo.BACKWARD_TASKS, durations, "ovo-backward")


def audit_ovo_forward(raw: list, durations: dict[str, float]) -> list[ExposureRow]:
    """One row per forward probe (``test_info``): min(ceil(t), D) − t."""
    return _ovo_rows(raw, ovo.FORWARD_TASKS, durations, "ovo-forward")


def _omnimmi_row(
    task: str, pos: int, times: tuple[float, float, float], bound: str, pipeline: str
) -> ExposureRow:
    """The row of OmniMMI item ``pos`` of ``task`` (PA / SI); ``times`` = (decision, media end,
    exposure) in s. The reference is never in the prompt."""
    fmt = f"omnimmi-{task.lower()}"
    return _row(fmt, (str(pos), f"{fmt}-{pos}"), task, times, bound, "no", pipeline)


def audit_omnimmi_pa(raw: list, durations: dict[str, float]) -> list[ExposureRow]:
    """One row per item: the online feed shows frame i before the decision at i s -> 0 s."""
    rows = []
    for pos, obj in enumerate(raw):
        it = parse_item(omnimmi.PAItem, obj, str(pos))
        if not isinstance(it, omnimmi.PAItem):
            continue
        how = "online: frames one by one after the query, soundtrack removed"
        rows.append(_omnimmi_row("PA", pos, (0.0, 0.0, 0.0), "exact", how))
    return rows


def audit_omnimmi_si(
    raw: list, durations: dict[str, float], pipeline: str = "offline"
) -> list[ExposureRow]:
    """One row per item. ``offline``: the whole video, D − t (lower bound without D: the
    largest timestamp on the same video − t). ``online``: 0 s."""
    items = []
    for pos, obj in enumerate(raw):
        it = parse_item(omnimmi.SIItem, obj, str(pos))
        if isinstance(it, omnimmi.SIItem):
            items.append((pos, it))
    last: dict[str, float] = defaultdict(float)
    for _, it in items:
        last[stem(it.video)] = max(last[stem(it.video)], it.timestamp)
    rows = []
    for pos, it in items:
        vid = stem(it.video)
        if pipeline == "online":
            end, exp, bound, how = it.timestamp, 0.0, "exact", "online: query at int(t*fps)/fps"
        elif vid in durations:
            end, bound, how = durations[vid], "exact", "offline: whole video"
            exp = _ms(max(0.0, end - it.timestamp))
        else:
            end, bound, how = last[vid], "lower", "offline: whole video (D >= last timestamp)"
            exp = _ms(end - it.timestamp)
        rows.append(_omnimmi_row("SI", pos, (it.timestamp, end, exp), bound, how))
    return rows


def proassist_frame_indices(times: list[float]) -> list[int]:
    """Frame index (2 fps) of each turn in order, as ProAssist's
    ``convert_conversation_time_to_index``: floor(2t), or one past the previous turn's index when
    it would not be after it. The frames shown before turn k are [index_{k−1}, index_k)."""
    out: list[int] = []
    for t in times:
        idx = math.floor(2 * t)
        if out and idx <= out[-1]:
            idx = out[-1] + 1
        out.append(idx)
    return out


def audit_proassist(raw: list, durations: dict[str, float]) -> list[ExposureRow]:
    """One row per assistant turn: max(0, (index − 1)/2 − t), index from
    ``proassist_frame_indices`` over all turns of the dialog in order."""
    rows = []
    for pos, obj in enumerate(raw):
        v = parse_item(proassist.VideoDialogs, obj, str(pos))
        if not isinstance(v, proassist.VideoDialogs):
            continue
        for d in v.conversations:
            base = f"{v.parsed_video_anns.dataset}-{v.video_uid}-{d.user_type}"
            turns = [t for t in d.conversation if t.role in ("user", "assistant")]
            for k, (turn, idx) in enumerate(
                zip(turns, proassist_frame_indices([t.time for t in turns]), strict=True)
            ):
                if turn.role != "assistant":
                    continue
                last_frame = (idx - 1) / 2.0
                times = (turn.time, last_frame, _ms(max(0.0, last_frame - turn.time)))
                how = "frames [previous turn, floor(2t)) at 2 fps"
                ids = (f"{base}/{k}", base)
                rows.append(_row("proassist", ids, d.user_type, times, "exact", "no", how))
    return rows


AUDITS = {
    "streamingbench-po": (audit_streamingbench, "question"),
    "ovo-backward": (audit_ovo_backward, "item"),
    "ovo-forward": (audit_ovo_forward, "probe"),
    "omnimmi-pa": (audit_omnimmi_pa, "item"),
    "omnimmi-si": (audit_omnimmi_si, "item"),
    "proassist": (audit_proassist, "assistant turn"),
}


def video_files(format_name: str, raw: list) -> dict[str, str]:
    """Video id -> file name as the peer names it (relative to its videos folder)."""
    out: dict[str, str] = {}
    for obj in raw:
        if not isinstance(obj, dict):
            continue
        if format_name == "streamingbench-po" and isinstance(obj.get("video_path"), str):
            name = Path(obj["video_path"]).name
            out[Path(name).stem] = name
        elif format_name == "proassist" and isinstance(obj.get("video_uid"), str):
            ds = (obj.get("parsed_video_anns") or {}).get("dataset", "unknown")
            out[obj["video_uid"]] = f"{ds}/{obj['video_uid']}.mp4"
        elif isinstance(obj.get("video"), str):
            out[stem(obj["video"])] = obj["video"]
    return out


def measure_durations(videos: Path, files: dict[str, str]) -> dict[str, float]:
    """Durations (s) of the videos present under ``videos``, measured from the decoded streams;
    absent or unreadable files are left out."""

    out = {}
    for vid, name in files.items():
        p = videos / name
        if p.is_file():
            try:
                out[vid] = probe(p).duration_s
            except MediaError:
                continue
    return out


def summarize(rows: list[ExposureRow], task: str) -> TaskExposure:
    """Mean, max, share of rows with exposure > 0, and rows whose prompt holds the reference."""
    n = len(rows)
    exp = [r.exposure_s for r in rows]
    hit = [x for x in exp if x > 0]
    return TaskExposure(
        task=task,
        n=n,
        mean_s=_ms(sum(exp) / n) if n else 0.0,
        max_s=max(exp) if n else 0.0,
        n_affected=len(hit),
        share_affected=round(len(hit) / n, 4) if n else 0.0,
        mean_affected_s=_ms(sum(hit) / len(hit)) if hit else None,
        reference_in_prompt=sum(r.reference_in_prompt != "no" for r in rows),
        reference_verbatim=sum(r.reference_in_prompt == "verbatim" for r in rows),
        reference_among_options=sum(r.reference_in_prompt == "among_options" for r in rows),
    )


def audit_exposure(
    format_name: str,
    src: str | Path,
    *,
    videos: str | Path | None = None,
    pipeline: str = "offline",
) -> tuple[list[ExposureRow], ExposureSummary]:
    """Audit the peer file ``src`` of ``format_name``.

    Args:
        videos: the peer's videos folder; present files are probed for their duration D (exact
            figures for OVO-Bench's cap and OmniMMI SI's offline whole-video input).
        pipeline: ``offline`` or ``online`` (OmniMMI SI only; the other peers have one pipeline).

    Returns:
        (one row per decision, the summary overall and per peer task).

    Raises:
        ImporterError: unknown format or pipeline, unreadable source, no item audited.
    """
    if format_name not in AUDITS:
        raise ImporterError(f"unknown format {format_name!r}; choose one of: {', '.join(AUDITS)}")
    if pipeline not in ("offline", "online"):
        raise ImporterError(f"--pipeline {pipeline!r}: use offline or online")
    raw = read_json_array(src)
    durations = measure_durations(Path(videos), video_files(format_name, raw)) if videos else {}
    fn, unit = AUDITS[format_name]
    if format_name == "omnimmi-si":
        rows = audit_omnimmi_si(raw, durations, pipeline)
    else:
        rows = fn(raw, durations)
    if not rows:
        raise ImporterError(f"{src}: no item of format {format_name} could be audited")
    tasks = sorted({r.task for r in rows})
    bounds: dict[str, int] = defaultdict(int)
    for r in rows:
        bounds[r.bound] += 1
    summary = ExposureSummary(
        format=format_name,
        source=str(src),
        unit=unit,
        settings={"pipeline": pipeline} if format_name == "omnimmi-si" else {},
        overall=summarize(rows, "all"),
        per_task=[summarize([r for r in rows if r.task == t], t) for t in tasks]
        if len(tasks) > 1
        else [],
        bounds=dict(bounds),
    )
    return rows, summary


def write_csv(rows: list[ExposureRow], path: str | Path) -> None:
    """One line per ``ExposureRow`` (header = its field names)."""
    fh = io.StringIO(newline="")
    w = csv.DictWriter(fh, fieldnames=list(ExposureRow.model_fields))
    w.writeheader()
    for r in rows:
        w.writerow(r.model_dump(mode="json"))
    write_atomic(path, fh.getvalue())


_BOUND_NOTE = (
    "a lower bound counts only the media up to the last annotated time on the same video (the "
    "clip's real end D is later, so the true exposure is larger: other sources that know D give "
    "more); an upper bound ignores the cap at D; pass --videos DIR to probe D for exact figures"
)


def format_table(summary: ExposureSummary) -> str:
    """A Markdown table of the summary (overall row first)."""
    head = f"causal exposure, {summary.format} ({summary.source}), one row per {summary.unit}" + (
        f", {summary.settings}" if summary.settings else ""
    )
    lines = [
        head,
        "",
        "| task | n | mean (s) | max (s) | affected (> 0 s) | mean over affected (s) "
        "| reference verbatim in prompt | reference among options |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for t in [summary.overall, *summary.per_task]:
        aff = "–" if t.mean_affected_s is None else f"{t.mean_affected_s:.3f}"
        lines.append(
            f"| {t.task} | {t.n} | {t.mean_s:.3f} | {t.max_s:.3f} | {t.n_affected} "
            f"({100 * t.share_affected:.1f} %) | {aff} | {t.reference_verbatim} | "
            f"{t.reference_among_options} |"
        )
    not_exact = {k: v for k, v in summary.bounds.items() if k != "exact"}
    if not_exact:
        lines.append("")
        lines.append(
            "bounds: "
            + ", ".join(
                f"{v} rows {k} bound (video duration not measured)" for k, v in not_exact.items()
            )
        )
        lines.append(_BOUND_NOTE)
    return "\n".join(lines)
