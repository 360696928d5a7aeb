"""Scene ablation: a ``scene=none`` run (request text only) against the full run of the same
model, paired, re-scored at tolerances δ ∈ {1, 2, 4} s (paper Figure 3: T1 joint −1.50 / −3.50 /
−13.00 pp), and the score-by-tolerance figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from interactscope.core.files import write_atomic
from interactscope.stats import BootstrapOptions
from interactscope.streaming.analysis.compare import paired_table, run_table
from interactscope.streaming.analysis.controls.base import (
    ControlResult,
    ReportInputs,
    ReportSink,
    other_differences,
    setting,
)
from interactscope.streaming.analysis.errors import AnalysisError
from interactscope.streaming.analysis.figures import tolerance_figure
from interactscope.streaming.analysis.runs import ScoredRun, check_comparable, rescore
from interactscope.streaming.scoring.results import format_interval
from interactscope.streaming.tasks import TOOL_TASKS

__all__ = ["TOLERANCES", "scene_ablation"]

TOLERANCES: tuple[float, ...] = (1.0, 2.0, 4.0)
_RENAME = {
    "a": "full",
    "a_low": "full_low",
    "a_high": "full_high",
    "a_counts": "full_counts",
    "b": "none",
    "b_low": "none_low",
    "b_high": "none_high",
    "b_counts": "none_counts",
}


def _check_pair(full: ScoredRun, none: ScoredRun) -> list[str]:
    if setting(none, "scene", "full") != "none":
        raise AnalysisError(f"{none.path} was not collected with --set scene=none")
    if setting(full, "scene", "full") != "full":
        raise AnalysisError(f"{full.path} is a scene=none run; give the full run first")
    check_comparable(full, none)
    return [f"settings differ besides scene: {d}" for d in other_differences(full, none, ["scene"])]


def _markdown(table: pd.DataFrame) -> str:
    rows = list(table.itertuples())
    return pd.DataFrame(
        {
            "δ (s)": table["tolerance_s"].map(lambda x: f"{x:g}"),
            "metric": table["metric"],
            "with scene": [format_interval(r.full, r.full_low, r.full_high) for r in rows],
            "request only (scene=none)": [
                format_interval(r.none, r.none_low, r.none_high) for r in rows
            ],
            "Δ none − full (pp)": [
                format_interval(r.diff, r.diff_low, r.diff_high, signed=True) for r in rows
            ],
        }
    ).to_markdown(index=False)


def scene_ablation(
    full: str | Path,
    none: str | Path,
    *,
    tolerances: Sequence[float] = TOLERANCES,
    metrics: Sequence[str] = ("T1 joint", "T1 on-time"),
    judge: str | None = None,
    options: BootstrapOptions | None = None,
    **bootstrap: Any,
) -> ControlResult:
    """Scene ablation at several tolerances: ``none − full`` paired, in percentage points.

    Both runs are re-scored in memory at each δ (seconds) with the judge they were scored with
    (or ``judge``); with only T1 metrics (the paper's Figure 3, the default) only the tool-call
    interactions are re-scored, by the tool-set check, so no judge is called. Other metric
    names (e.g. ``Avg(6)``) re-score every task. Rows: ``tolerance_s, metric, full, full_low,
    full_high, none, none_low, none_high, diff, diff_low, diff_high`` (% and pp).
    ``options``/``bootstrap``: :class:`~interactscope.stats.BootstrapOptions` fields.

    Raises:
        AnalysisError: ``none`` was not collected with ``scene=none`` (or ``full`` was), or the
            runs cover different benchmarks/interactions.
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    tasks = TOOL_TASKS if all(m.startswith("T1") for m in metrics) else None
    rows, notes, ra, rb = [], [], None, None
    for k, tol in enumerate(tolerances):
        ra = rescore(full, tolerance_s=float(tol), judge=judge, tasks=tasks)
        rb = rescore(none, tolerance_s=float(tol), judge=judge, tasks=tasks)
        if k == 0:
            notes = _check_pair(ra, rb)
        t = paired_table(
            (ra.targets, ra.interactions), (rb.targets, rb.interactions), only=metrics, options=opts
        )
        t.insert(0, "tolerance_s", float(tol))
        rows.append(t)
    if ra is None or rb is None:
        raise AnalysisError("scene ablation: give at least one tolerance")
    table = pd.concat(rows, ignore_index=True).rename(columns=_RENAME)
    meta = {
        "runs": {"full": ra.describe().model_dump(), "none": rb.describe().model_dump()},
        "tolerances_s": [float(x) for x in tolerances],
        "difference": "none - full, percentage points",
        "options": opts.kwargs(),
        "notes": notes,
    }
    return ControlResult("scene_ablation", table, _markdown(table), meta)


# ------------------------------------------------------------------------------ report section


def _joint_by_tolerance(inputs: ReportInputs) -> pd.DataFrame:
    """T1 joint (%, interval) at each tolerance for every main and scene=none run."""
    curves = []
    for r in inputs.with_role("main", "scene-none"):
        if not r.targets["task"].isin(TOOL_TASKS).any():
            continue
        for tol in inputs.tolerances:
            rs = rescore(r.path, tolerance_s=float(tol), judge=inputs.judge, tasks=TOOL_TASKS)
            t = run_table(rs, options=inputs.options)
            row = t[t["metric"] == "T1 joint"].iloc[0]
            curves.append(
                {
                    "model": r.label,
                    "run": r.label,
                    "scene": "none" if inputs.roles[r.label] == "scene-none" else "full",
                    "tolerance_s": float(tol),
                    "estimate": row["estimate"],
                    "low": row["low"],
                    "high": row["high"],
                }
            )
    cols = ["model", "run", "scene", "tolerance_s", "estimate", "low", "high"]
    return pd.DataFrame(curves, columns=cols)


def _report_display(st: pd.DataFrame) -> pd.DataFrame:
    rows = list(st.itertuples())
    return pd.DataFrame(
        {
            "with scene": st["full_run"],
            "request only": st["none_run"],
            "δ (s)": st["tolerance_s"].map(lambda x: f"{x:g}"),
            "metric": st["metric"],
            "with scene %": [format_interval(r.full, r.full_low, r.full_high) for r in rows],
            "request only %": [format_interval(r.none, r.none_low, r.none_high) for r in rows],
            "Δ none − full (pp)": [
                format_interval(r.diff, r.diff_low, r.diff_high, signed=True) for r in rows
            ],
        }
    )


def report_scene(inputs: ReportInputs, sink: ReportSink) -> None:
    """Figure 3 (T1 joint by tolerance, with and without scene) and the scene-ablation table."""
    curves = _joint_by_tolerance(inputs)
    tables = []
    for _role, main, ctl in inputs.pairs_of("scene-none"):
        # a request-only curve is drawn in the colour of its main run
        curves.loc[curves["run"] == ctl.label, "model"] = main.label
        sa = scene_ablation(
            main.path,
            ctl.path,
            tolerances=inputs.tolerances,
            judge=inputs.judge,
            options=inputs.options,
        )
        tables.append(sa.table.assign(full_run=main.label, none_run=ctl.label))
    paired = {p[2].label for p in inputs.pairs_of("scene-none")}
    for r in inputs.with_role("scene-none"):
        if r.label not in paired:
            sink.skip(f"scene ablation: no main run pairs with {r.label}")
    sink.add_files("fig_scene_tolerance", tolerance_figure(curves, inputs.out))
    write_atomic(
        inputs.out / "fig_scene_tolerance.csv", curves.to_csv(index=False, float_format="%.4f")
    )
    if not tables:
        sink.skip("scene_ablation: no (main, scene=none) pair of the same model")
        return
    st = pd.concat(tables, ignore_index=True)
    sink.add_table(
        "scene_ablation",
        "Scene ablation by tolerance (paired, pp [95% CI])",
        _report_display(st),
        st,
    )


def run_cli(args: Mapping[str, Any], options: BootstrapOptions) -> ControlResult:
    return scene_ablation(
        args["full"],
        args["none"],
        tolerances=args["tolerance"],
        judge=args["judge"],
        options=options,
    )
