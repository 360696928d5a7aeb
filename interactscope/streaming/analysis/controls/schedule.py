"""Decision-schedule control: the same model on the per-second grid and a sparser one
(``grid.step_s``), every metric paired (paper: six-task mean 26.80 → 19.17 %)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from interactscope.stats import BootstrapOptions
from interactscope.streaming.analysis.compare import paired_table
from interactscope.streaming.analysis.controls.base import (
    ControlResult,
    ReportInputs,
    ReportSink,
    other_differences,
    setting,
)
from interactscope.streaming.analysis.errors import AnalysisError
from interactscope.streaming.analysis.output import latex_table
from interactscope.streaming.analysis.runs import ScoredRun, check_comparable, resolve
from interactscope.streaming.scoring.results import format_interval

__all__ = ["schedule_control"]


def _markdown(t: pd.DataFrame, sa: float, sb: float) -> str:
    rows = list(t.itertuples())
    return pd.DataFrame(
        {
            "metric": t["metric"],
            f"step {sa:g} s": [format_interval(r.a, r.a_low, r.a_high) for r in rows],
            f"step {sb:g} s": [format_interval(r.b, r.b_low, r.b_high) for r in rows],
            "Δ sparse − dense": [
                format_interval(r.diff, r.diff_low, r.diff_high, signed=True) for r in rows
            ],
        }
    ).to_markdown(index=False)


def _dense_first(a: ScoredRun, b: ScoredRun) -> tuple[ScoredRun, ScoredRun, float, float]:
    sa, sb = float(setting(a, "grid.step_s", 1.0)), float(setting(b, "grid.step_s", 1.0))
    if sa == sb:
        raise AnalysisError(
            f"both runs use grid.step_s={sa:g}; the schedule control needs two grids"
        )
    return (a, b, sa, sb) if sa < sb else (b, a, sb, sa)


def schedule_control(
    dense: str | Path | ScoredRun,
    sparse: str | Path | ScoredRun,
    *,
    options: BootstrapOptions | None = None,
    **bootstrap: Any,
) -> ControlResult:
    """Decision-schedule control: every metric of the run on the denser grid (``grid.step_s``,
    usually 1 s) against the sparser one, paired (``sparse − dense``; the runs may be given in
    either order). ``options``/``bootstrap``: bootstrap options (fields).

    Raises:
        AnalysisError: both runs on the same grid, or not comparable.
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    a, b, sa, sb = _dense_first(resolve(dense), resolve(sparse))
    notes = check_comparable(a, b)
    notes += [
        f"settings differ besides grid.step_s: {d}"
        for d in other_differences(a, b, ["grid.step_s"])
    ]
    t = paired_table((a.targets, a.interactions), (b.targets, b.interactions), options=opts)
    meta = {
        "runs": {"dense": a.describe().model_dump(), "sparse": b.describe().model_dump()},
        "steps_s": [sa, sb],
        "difference": "sparse - dense (pp; output volume in responses/min)",
        "options": opts.kwargs(),
        "notes": notes,
    }
    return ControlResult("schedule", t, _markdown(t, sa, sb), meta)


def report_schedule(inputs: ReportInputs, sink: ReportSink) -> None:
    """One decision-schedule table per (main, sparser-grid) pair."""
    sched = [
        schedule_control(m, c, options=inputs.options) for _r, m, c in inputs.pairs_of("schedule")
    ]
    if not sched:
        sink.skip("schedule: no run with another grid.step_s paired with a main run")
    for k, s in enumerate(sched):
        name = "schedule" if len(sched) == 1 else f"schedule_{k + 1}"
        paths = s.write(
            inputs.out, latex=latex_table(s.table.round(2), "Decision-schedule control")
        )
        runs = s.meta["runs"]
        title = f"Decision schedule: {runs['sparse']['label']} vs {runs['dense']['label']}"
        sink.add_files(name, sorted(paths.values()), f"## {title}\n\n{s.markdown}\n")


def run_cli(args: Mapping[str, Any], options: BootstrapOptions) -> ControlResult:
    return schedule_control(args["dense"], args["sparse"], options=options)
