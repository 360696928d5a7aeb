"""The streaming (Omni-InteractScope) page: run summaries, one section per interaction with one
timeline per run, and, for two runs, the targets gained and lost (B against A)."""

from __future__ import annotations

from collections.abc import Sequence

from interactscope.core.text import plural
from interactscope.streaming.schema import Interaction
from interactscope.view.classify import classify_interaction
from interactscope.view.environment import env_cells
from interactscope.view.frames import FrameSource
from interactscope.view.model import (
    InteractionPage,
    PageData,
    RunSummary,
    RunTimeline,
    TargetInfo,
    ViewSettings,
    isolate,
)
from interactscope.view.runs import LoadedRun
from interactscope.view.scores import score_cells

__all__ = ["build_streaming_page"]

_NOT_RESPONSES = ("error", "suppressed", "ignored")
"""Mark classes that are no response after q (a run with none of the others was silent)."""


def _coverage(run: LoadedRun) -> str:
    """ "4 of 11 interactions": what the run covers of its benchmark (``run.json``), as the
    demo leaderboard's ``interactions`` column counts it."""
    m = run.manifest
    total = m.benchmark.n_interactions
    n = len(m.interaction_ids) if m.interaction_ids is not None else total
    return f"{n} of {plural(total, 'interaction')}"


def _summary(run: LoadedRun, view: ViewSettings) -> RunSummary:
    s = run.summary
    judge = s.get("settings", {}).get("judge", {})
    out = RunSummary(
        label=run.label,
        path=str(run.path),
        model=run.manifest.model,
        protocol=run.manifest.protocol,
        judge=str(judge.get("name", "")) if isinstance(judge, dict) else str(judge),
        approximation=s.get("approximation"),
        scored=run.scored,
        interactions=_coverage(run),
        settings=run.manifest.settings.model_dump(mode="json"),
        health=s.get("health", {}),
    )
    if run.clusters is not None:
        out.scores = score_cells(run.clusters, n_resamples=view.resamples, seed=view.seed)
        if run.environment is not None:
            out.environment = env_cells(run.environment, run.environment_source)
        elif run.environment_source:
            out.warnings.append(run.environment_source)
    return out


def _targets(inter: Interaction, tolerance_s: float) -> list[TargetInfo]:
    return [
        TargetInfo(
            id=t.id,
            reference=t.reference,
            tools=t.tools,
            anchor_s=t.anchor_s,
            window_s=t.window(tolerance_s),
            interval=t.interval_s is not None,
            evidence=t.evidence,
        )
        for t in inter.targets
    ]


def _timeline(run: LoadedRun, inter: Interaction, frames: FrameSource) -> RunTimeline:
    if inter.id not in set(run.interaction_ids):
        return RunTimeline(present=False, notes=[f"{run.label}: interaction not in this run"])
    recs = run.records.get(inter.id, [])
    rows = run.targets.get(inter.id, {}) if run.scored else None
    marks, outcomes, regions = classify_interaction(
        inter, recs, rows, tolerance_s=run.tolerance_s, merge_s=run.merge_s
    )
    grid = [r.t for r in recs]
    tl = RunTimeline(
        scored=run.scored,
        responses=sum(m.cls not in _NOT_RESPONSES for m in marks),
        outcomes=outcomes,
        regions=regions,
        marks=marks,
        grid=grid,
        environment=run.environment_rows.get(inter.id),
    )
    video = run.bench.videos.get(inter.video_id)
    if video is not None and grid:
        tl.frames = frames.at_points(
            inter.video_id, run.bench.media_path(video), run.settings, grid
        )
    if not recs:
        tl.notes.append("no records for this interaction (not collected yet?)")
    return tl


def _end_s(inter: Interaction, runs: Sequence[LoadedRun], timelines: list[RunTimeline]) -> float:
    ends = [max(tl.grid) for tl in timelines if tl.grid]
    ends += [t.window(2.0)[1] for t in inter.targets]
    video = runs[0].bench.videos.get(inter.video_id)
    if video is not None and video.duration_s:
        ends.append(float(video.duration_s))
    return max(ends + [inter.q + 1.0])


def _diff(page: InteractionPage) -> None:
    a, b = page.runs[0], page.runs[1]
    # An unscored run has no outcomes to compare: nothing is gained or lost against it.
    if not (a.present and b.present and a.scored and b.scored):
        return
    for tid, oa in a.outcomes.items():
        ob = b.outcomes.get(tid, "")
        if oa != "hit" and ob == "hit":
            page.gained.append(tid)
        elif oa == "hit" and ob != "hit":
            page.lost.append(tid)


def build_streaming_page(runs: Sequence[LoadedRun], view: ViewSettings) -> PageData:
    """Assemble the page of one or more runs of the same benchmark.

    Interactions are those of the first run's benchmark that any run covers, in benchmark
    order. With exactly two runs, each interaction lists the targets gained (missed in A, hit in
    B) and lost (hit in A, missed in B), and the page collects them as ``interaction/target``.
    """
    frames = FrameSource(view)
    covered = set().union(*(r.interaction_ids for r in runs))
    inters = [i for i in runs[0].bench.interactions if i.id in covered]
    pages: list[InteractionPage] = []
    for inter in inters:
        timelines = [_timeline(r, inter, frames) for r in runs]
        page = InteractionPage(
            id=inter.id,
            task=inter.task,
            video_id=inter.video_id,
            q=inter.q,
            end_s=_end_s(inter, runs, timelines),
            query=inter.query.text,
            targets=_targets(inter, runs[0].tolerance_s),
            runs=timelines,
        )
        if len(runs) == 2:
            _diff(page)
        pages.append(page)
    title = (
        " vs ".join(isolate(r.label) for r in runs)
        + f" — {isolate(runs[0].manifest.benchmark.name)}"
    )
    data = PageData(
        title=title,
        runs=[_summary(r, view) for r in runs],
        interactions=pages,
        thumbs=frames.thumbs,
        lazy=len(pages) > view.lazy_threshold,
        settings=view,
    )
    data.gained = [f"{p.id}/{t}" for p in pages for t in p.gained]
    data.lost = [f"{p.id}/{t}" for p in pages for t in p.lost]
    if frames.cap_reached:
        data.runs[0].warnings.append(
            f"thumbnail cap reached (max_thumbnails={view.max_thumbnails}): later decision "
            "points list no frames; raise it with --max-thumbs"
        )
    return data
