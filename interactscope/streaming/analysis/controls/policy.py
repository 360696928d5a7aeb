"""History and cooldown controls (paper Table 10): does recall come from the response policy?

History (``history.n`` = 5) and cooldown (``cooldown_s`` = 10) runs against the plain run on
T8-A: recall, output count, output volume, paired intervals, and the targets gained/lost
(paper: 22/122 → 22/122 with 58.09 % fewer outputs; cooldown 10/122, −9.84 pp [−17.24, −2.46]).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interactscope.stats import (
    BootstrapOptions,
    Ratio,
    StatsWarning,
    UndefinedRatioError,
    bootstrap_metrics,
    cluster_bootstrap,
)
from interactscope.streaming.analysis.compare import paired_table
from interactscope.streaming.analysis.controls.base import (
    ControlResult,
    ReportInputs,
    ReportSink,
    other_differences,
)
from interactscope.streaming.analysis.errors import AnalysisError
from interactscope.streaming.analysis.output import latex_table, write_table
from interactscope.streaming.analysis.runs import (
    ScoredRun,
    check_comparable,
    non_default_settings,
    resolve,
)
from interactscope.streaming.scoring.results import format_interval

__all__ = ["POLICY_KEYS", "POLICY_TASK", "policy_controls"]

POLICY_KEYS = ("history.n", "cooldown_s")
"""The settings a policy control run changes."""
POLICY_TASK = "T8-A"
"""The paper's task for the policy controls (query-free reminders)."""


def _count_ratio(
    a: pd.DataFrame, b: pd.DataFrame, col: str, opts: BootstrapOptions
) -> tuple[float, float, float]:
    """Σ b / Σ a of a per-interaction count over matched interactions, cluster bootstrap."""
    m = a[["interaction_id", "cluster", col]].merge(
        b[["interaction_id", col]], on="interaction_id", suffixes=("_a", "_b")
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatsWarning)
            r = cluster_bootstrap(
                m[f"{col}_b"].to_numpy(float),
                m[f"{col}_a"].to_numpy(float),
                m["cluster"].astype(str).to_numpy(),
                **opts.kwargs(),
            )
        return r.estimate, r.low, r.high
    except UndefinedRatioError:
        return np.nan, np.nan, np.nan


def _control_name(plain: ScoredRun, ctl: ScoredRun) -> str:
    base = non_default_settings(plain.settings)
    diff = {k: v for k, v in non_default_settings(ctl.settings).items() if base.get(k) != v}
    if not diff:
        return ctl.label
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in diff.items())


def _base_row(name: str, r: ScoredRun, t: pd.DataFrame, i: pd.DataFrame) -> dict[str, Any]:
    """Recall, output count, volume and precision of one run on the task's rows."""
    hits, scored = int(t["hit"].sum()), int(t["scored"].sum())
    resp = int(i["responses"].sum())
    minutes = float(i["probed_s"].sum()) / 60.0
    return {
        "condition": name,
        "run": str(r.path),
        "recall_hits": hits,
        "targets": scored,
        "recall": 100 * hits / scored if scored else np.nan,
        "outputs": resp,
        "per_min": resp / minutes if minutes else np.nan,
        "precision": 100 * hits / resp if resp else np.nan,
    }


def _task_rows(run: ScoredRun, task: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (
        run.targets[run.targets["task"] == task],
        run.interactions[run.interactions["task"] == task],
    )


def _overlap(pt: pd.DataFrame, ct: pd.DataFrame) -> dict[str, int]:
    """Targets hit in both runs (``shared``), only in the control (``gained``), only plain."""
    key = ["interaction_id", "target_id"]
    both = pt[[*key, "hit"]].merge(ct[[*key, "hit"]], on=key, suffixes=("_p", "_c"))
    hp, hc = both["hit_p"] == 1, both["hit_c"] == 1
    return {
        "shared": int((hp & hc).sum()),
        "gained": int((~hp & hc).sum()),
        "lost": int((hp & ~hc).sum()),
    }


def _control_row(p: ScoredRun, c: ScoredRun, task: str, opts: BootstrapOptions) -> dict[str, Any]:
    """One control run against the plain run: paired recall and volume, output change."""
    pt, pi = _task_rows(p, task)
    ct, ci = _task_rows(c, task)
    row = _base_row(_control_name(p, c), c, ct, ci)
    paired = paired_table(
        (pt, pi), (ct, ci), only=(task, "Output volume", "Output precision"), options=opts
    ).set_index("metric")
    rec, vol = paired.loc[task], paired.loc["Output volume"]
    cnt = _count_ratio(pi, ci, "responses", opts)
    row.update(
        recall_low=rec["b_low"],
        recall_high=rec["b_high"],
        d_recall=rec["diff"],
        d_recall_low=rec["diff_low"],
        d_recall_high=rec["diff_high"],
        d_outputs_pct=100 * (cnt[0] - 1),
        d_outputs_low=100 * (cnt[1] - 1),
        d_outputs_high=100 * (cnt[2] - 1),
        d_per_min=vol["diff"],
        d_per_min_low=vol["diff_low"],
        d_per_min_high=vol["diff_high"],
        **_overlap(pt, ct),
        other_differences="; ".join(other_differences(p, c, POLICY_KEYS)),
    )
    return row


def _signed(r: Any, col: str) -> str:
    return format_interval(
        getattr(r, col, np.nan),
        getattr(r, f"{col}_low", np.nan),
        getattr(r, f"{col}_high", np.nan),
        signed=True,
    )


def _policy_markdown(table: pd.DataFrame, task: str) -> str:
    rows = list(table.itertuples())
    return pd.DataFrame(
        {
            "condition": table["condition"],
            f"{task} recall": [
                f"{r.recall_hits}/{r.targets} = "
                + format_interval(r.recall, r.recall_low, r.recall_high)
                for r in rows
            ],
            "Δ recall (pp)": [_signed(r, "d_recall") for r in rows],
            "outputs": table["outputs"],
            "Δ outputs (%)": [
                format_interval(
                    getattr(r, "d_outputs_pct", np.nan),
                    getattr(r, "d_outputs_low", np.nan),
                    getattr(r, "d_outputs_high", np.nan),
                    signed=True,
                )
                for r in rows
            ],
            "per min": [format_interval(r.per_min) for r in rows],
            "Δ per min": [_signed(r, "d_per_min") for r in rows],
            "precision % (beyond)": [format_interval(r.precision) for r in rows],
            "shared / gained / lost": [
                "—" if k == 0 else f"{int(r.shared)} / {int(r.gained)} / {int(r.lost)}"
                for k, r in enumerate(rows)
            ],
        }
    ).to_markdown(index=False)


def policy_controls(
    plain: str | Path | ScoredRun,
    controls: Sequence[str | Path | ScoredRun],
    *,
    task: str = POLICY_TASK,
    options: BootstrapOptions | None = None,
    **bootstrap: Any,
) -> ControlResult:
    """History and cooldown controls against the plain run on one task (paper Table 10).

    For each control run (same benchmark and interactions; typically ``history.n=5`` or
    ``cooldown_s=10``): recall (hits / scored targets of ``task``) with the paired difference
    (pp), output count (non-silent responses on the task's interactions) with its relative
    change Σ control / Σ plain − 1 (%, cluster-bootstrap interval), output volume (responses per
    probed minute) with its paired difference, output precision (hits / responses, beyond the
    paper), and the target overlap: ``shared`` (hit in both), ``gained``, ``lost``.
    The plain run is the first row. ``options``/``bootstrap``: bootstrap options (fields).

    Raises:
        AnalysisError: runs over different benchmarks/interactions, or no ``task`` targets.
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    p = resolve(plain)
    ctl = [resolve(c) for c in controls]
    pt, pi = _task_rows(p, task)
    if pt.empty:
        raise AnalysisError(f"{p.path}: no {task} targets")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        boot = bootstrap_metrics({"recall": Ratio.from_frame(pt, "hit", "scored")}, **opts.kwargs())
    row = _base_row("plain", p, pt, pi)
    row.update(recall_low=100 * boot["recall"].low, recall_high=100 * boot["recall"].high)
    rows, notes = [row], []
    for c in ctl:
        notes += [f"{c.path}: {n}" for n in check_comparable(p, c)]
        rows.append(_control_row(p, c, task, opts))
    table = pd.DataFrame(rows)
    meta = {
        "runs": {
            "plain": p.describe().model_dump(),
            "controls": [c.describe().model_dump() for c in ctl],
        },
        "task": task,
        "difference": "control - plain",
        "options": opts.kwargs(),
        "notes": notes,
    }
    return ControlResult("policy_controls", table, _policy_markdown(table, task), meta)


# ------------------------------------------------------------------------------ report section


def report_policy(inputs: ReportInputs, sink: ReportSink) -> None:
    """Table 10: every history/cooldown run against its main run on T8-A."""
    groups: dict[str, tuple[ScoredRun, list[ScoredRun]]] = {}
    for _role, main, ctl in inputs.pairs_of("history", "cooldown"):
        groups.setdefault(main.label, (main, []))[1].append(ctl)
    tables = []
    for main, ctls in groups.values():
        if not (main.targets["task"] == POLICY_TASK).any():
            sink.skip(f"table10_policy: {main.label} has no {POLICY_TASK} targets")
            continue
        tables.append(policy_controls(main, ctls, options=inputs.options))
    if not tables:
        sink.skip("table10_policy: no history/cooldown run paired with a main run")
        return
    raw = pd.concat([p.table for p in tables], ignore_index=True)
    disp = "\n\n".join(p.markdown for p in tables)
    title = f"History and cooldown controls on {POLICY_TASK}"
    paths = write_table(
        raw,
        inputs.out,
        "table10_policy",
        markdown=f"### {title}\n\n{disp}\n",
        latex=latex_table(raw.round(2), title),
        meta={"controls": [p.meta for p in tables]},
    )
    sink.add_files(
        "table10_policy", sorted(paths.values()), f"## {title} (control − plain)\n\n{disp}\n"
    )


def run_cli(args: Mapping[str, Any], options: BootstrapOptions) -> ControlResult:
    return policy_controls(args["plain"], args["controls"], task=args["task"], options=options)
