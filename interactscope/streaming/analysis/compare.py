"""Comparisons of scored runs: every metric with its cluster-bootstrap interval, paired
differences of two runs over the same clusters (``interactscope compare RUN_A RUN_B``).

The metrics come from :data:`interactscope.streaming.scoring.metrics.METRICS` (Σ numerators / Σ
denominators per (cluster, task) row); this module only resamples them (docs/protocol.md,
uncertainty). Units: ``percent`` metrics are reported in % (fractions × 100) and their paired
differences in percentage points; ``rate`` metrics (output volume) in non-silent responses per
probed minute, differences too.

Refusals (:class:`~interactscope.streaming.analysis.errors.AnalysisError`): a run folder without scores;
two runs over different benchmarks (``run.json`` fingerprint) or different interaction sets.
Runs scored with a different tolerance, merge span or judge are compared with a note.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interactscope.stats import (
    BootstrapOptions,
    BootstrapResult,
    Ratio,
    StatsWarning,
    bootstrap_metrics,
    paired_metrics,
)
from interactscope.streaming.analysis.runs import ScoredRun, check_comparable, resolve
from interactscope.streaming.scoring.frames import cluster_table
from interactscope.streaming.scoring.metrics import Metric, metric
from interactscope.streaming.scoring.metrics import metric_ratios as _cluster_ratios
from interactscope.streaming.scoring.results import Interval

__all__ = [
    "Comparison",
    "compare_runs",
    "frames_cluster_table",
    "metric_ratios",
    "paired_table",
    "run_table",
]

Frames = tuple[pd.DataFrame, pd.DataFrame]

# Columns a hand-made or older targets/interactions frame may lack, with neutral values.
_TARGET_DEFAULTS: dict[str, Any] = {"scored": 1, "on_time": np.nan, "outcome": ""}
_INTERACTION_DEFAULTS: dict[str, Any] = {
    "complete": np.nan,
    "responses": 0,
    "probed_s": 0.0,
    "infrastructure_errors": 0,
}


def frames_cluster_table(targets: pd.DataFrame, interactions: pd.DataFrame) -> pd.DataFrame:
    """The cluster table (per (cluster, task) sums) of a targets and an interactions frame."""
    t = targets.assign(**{k: v for k, v in _TARGET_DEFAULTS.items() if k not in targets})
    i = interactions.assign(
        **{k: v for k, v in _INTERACTION_DEFAULTS.items() if k not in interactions}
    )
    t = t.assign(cluster=t["cluster"].astype(str), hit=pd.to_numeric(t["hit"]).fillna(0))
    i = i.assign(cluster=i["cluster"].astype(str))
    return cluster_table(t, i)


def _as_ratio(x: Any) -> Ratio | dict[str, Ratio]:
    if isinstance(x, Mapping):
        return {k: _as_ratio(v) for k, v in x.items()}
    return Ratio(*x)


def metric_ratios(
    targets: pd.DataFrame, interactions: pd.DataFrame, *, beyond: bool = True
) -> dict[str, Ratio | dict[str, Ratio]]:
    """One clustered :class:`~interactscope.stats.Ratio` per reported metric present in
    the frames (a balanced mean: task → Ratio), in :data:`~interactscope.streaming.scoring.metrics.METRICS`
    order. ``beyond=False`` leaves out output precision (beyond the paper)."""
    clusters = frames_cluster_table(targets, interactions)
    return {k: _as_ratio(v) for k, v in _cluster_ratios(clusters, beyond=beyond).items()}


def _scale(m: Metric) -> float:
    return 100.0 if m.kind == "percent" else 1.0


def _unit(m: Metric) -> str:
    return "%" if m.kind == "percent" else "responses/min"


def _counts(r: Any) -> str:
    if isinstance(r, Mapping):
        return f"{len(r)} tasks"
    num, den = float(r.numerators.sum()), float(r.denominators.sum())
    if float(num).is_integer() and float(den).is_integer():
        return f"{int(num)}/{int(den)}"
    return f"{num:g}/{den:.2f}"


def interval(result: BootstrapResult, m: Metric) -> Interval:
    """A bootstrap result in the metric's display units (% or responses/min)."""
    s = _scale(m)
    return Interval(estimate=s * result.estimate, low=s * result.low, high=s * result.high)


def _quiet_bootstrap(ratios: Mapping[str, Any], options: BootstrapOptions) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        return bootstrap_metrics(ratios, undefined="nan", **options.kwargs())


def run_table(
    run: ScoredRun | Frames,
    *,
    options: BootstrapOptions | None = None,
    beyond: bool = True,
    **bootstrap: Any,
) -> pd.DataFrame:
    """Every metric of one run with its cluster-bootstrap interval.

    Args:
        run: a scored run, or its (targets, interactions) frames.
        options: bootstrap options; ``bootstrap`` (``n_resamples=``, ``seed=``,
            ``confidence=``) overrides single fields.
        beyond: include the metrics beyond the paper (output precision).

    Returns:
        One row per metric: ``metric, kind, section, unit, estimate, low, high, counts,
        n_clusters, note``; ``estimate/low/high`` in % for percent metrics, responses/min for
        rates; NaN where a ratio is undefined (``note`` says so).
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    t, i = (run.targets, run.interactions) if isinstance(run, ScoredRun) else run
    ratios = metric_ratios(t, i, beyond=beyond)
    res = _quiet_bootstrap(ratios, opts)
    rows = []
    for name, ratio in ratios.items():
        m, r = metric(name), res[name]
        iv = interval(r, m)
        rows.append(
            {
                "metric": name,
                "kind": m.kind,
                "section": m.section,
                "unit": _unit(m),
                "estimate": iv.estimate,
                "low": iv.low,
                "high": iv.high,
                "counts": _counts(ratio),
                "n_clusters": r.n_clusters,
                "note": r.note or "",
            }
        )
    return pd.DataFrame(rows)


def _paired_row(m: Metric, ra: Any, rb: Any, ba: Any, bb: Any, d: Any) -> dict[str, Any]:
    a, b = interval(ba, m), interval(bb, m)
    # paired_metrics reports percentage points (× 100); a rate's difference is per minute.
    ds = 1.0 if m.kind == "percent" else 0.01
    return {
        "metric": m.name,
        "kind": m.kind,
        "unit": _unit(m),
        "a": a.estimate,
        "a_low": a.low,
        "a_high": a.high,
        "a_counts": _counts(ra),
        "b": b.estimate,
        "b_low": b.low,
        "b_high": b.high,
        "b_counts": _counts(rb),
        "diff": ds * d.estimate,
        "diff_low": ds * d.low,
        "diff_high": ds * d.high,
        "diff_unit": "pp" if m.kind == "percent" else "responses/min",
        "n_clusters": d.n_clusters,
        "note": d.note or "",
    }


def paired_table(
    a: Frames,
    b: Frames,
    *,
    options: BootstrapOptions | None = None,
    beyond: bool = True,
    only: Sequence[str] | None = None,
    **bootstrap: Any,
) -> pd.DataFrame:
    """Per-metric values of two runs and their paired differences ``b − a`` (same clusters).

    ``a``/``b``: (targets, interactions) frames over the same interactions. ``only`` keeps the
    named metrics. Returns columns ``metric, kind, unit, a, a_low, a_high, a_counts, b, b_low,
    b_high, b_counts, diff, diff_low, diff_high, diff_unit, n_clusters, note``.
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    ra = metric_ratios(*a, beyond=beyond)
    rb = metric_ratios(*b, beyond=beyond)
    names = [n for n in ra if n in rb and (only is None or n in only)]
    ra = {n: ra[n] for n in names}
    rb = {n: rb[n] for n in names}
    ba = _quiet_bootstrap(ra, opts)
    bb = _quiet_bootstrap(rb, opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        diffs = paired_metrics(ra, rb, strict=False, undefined="nan", **opts.kwargs())
    rows = [_paired_row(metric(n), ra[n], rb[n], ba[n], bb[n], diffs[n]) for n in names]
    return pd.DataFrame(rows)


@dataclass
class Comparison:
    """Result of :func:`compare_runs`: ``table`` (one row per metric), ``notes`` (caveats),
    ``runs`` (what was compared: ``a``/``b`` → run description), ``options`` (B, seed,
    confidence, clusters)."""

    table: pd.DataFrame
    notes: list[str]
    runs: dict[str, Any]
    options: dict[str, Any]

    def markdown(self) -> str:
        """The comparison as a Markdown table, cells ``estimate [low, high]``."""
        rows = list(self.table.itertuples())
        df = pd.DataFrame(
            {
                "metric": self.table["metric"],
                "A: " + self.runs["a"]["label"]: [
                    Interval(estimate=r.a, low=r.a_low, high=r.a_high).format() for r in rows
                ],
                "B: " + self.runs["b"]["label"]: [
                    Interval(estimate=r.b, low=r.b_low, high=r.b_high).format() for r in rows
                ],
                "B − A (pp or /min) [95% CI]": [
                    Interval(estimate=r.diff, low=r.diff_low, high=r.diff_high).format(signed=True)
                    for r in rows
                ],
            }
        )
        return df.to_markdown(index=False)


def compare_runs(
    run_a: str | Path | ScoredRun,
    run_b: str | Path | ScoredRun,
    *,
    options: BootstrapOptions | None = None,
    beyond: bool = True,
    **bootstrap: Any,
) -> Comparison:
    """Every metric of two scored runs with paired differences ``b − a``.

    Clusters are matched by id: each resample draws the same clusters for both runs. Percent
    metrics: values in %, differences in percentage points; output volume: responses/min.
    ``options``/``bootstrap``: as in :func:`run_table`.

    Raises:
        AnalysisError: unscored run, different benchmarks or different interaction sets.
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    a, b = resolve(run_a), resolve(run_b)
    notes = check_comparable(a, b)
    table = paired_table(
        (a.targets, a.interactions), (b.targets, b.interactions), options=opts, beyond=beyond
    )
    n_cl = a.interactions["cluster"].nunique()
    if n_cl < 2:
        notes.append(f"only {n_cl} cluster: intervals are the point estimates")
    return Comparison(
        table=table,
        notes=notes,
        runs={"a": a.describe().model_dump(), "b": b.describe().model_dump()},
        options={**opts.kwargs(), "clusters": int(n_cl), "difference": "b - a"},
    )
