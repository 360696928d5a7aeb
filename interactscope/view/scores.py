"""The summary's score table: per-task scores with 95 % cluster-bootstrap intervals, read from
``scores/clusters.csv`` (per cluster and task: hits, scored, on_time, targets, responses,
probed_s) and resampled with :func:`interactscope.stats.bootstrap_metrics`."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd

from interactscope.stats import Ratio, bootstrap_metrics
from interactscope.view.model import ScoreCell

__all__ = ["score_cells"]

SIX = ("T1", "T2", "T3", "T4", "T6", "T7")


def _ratio(df: pd.DataFrame, num: str, den: str) -> Ratio | None:
    if df.empty or float(df[den].sum()) <= 0:
        return None
    return Ratio(df[num].to_numpy(float), df[den].to_numpy(float), df["cluster"].astype(str))


def _metrics(clusters: pd.DataFrame) -> dict[str, Any]:
    tasks = [t for t in sorted(clusters["task"].unique()) if t]
    out: dict[str, Any] = {}
    for task in tasks:
        sub = clusters[clusters["task"] == task]
        if task == "T1":
            out["T1 on-time"] = _ratio(sub, "on_time", "targets")
        out[task if task != "T1" else "T1 joint"] = _ratio(sub, "hits", "scored")
    six = {t: _ratio(clusters[clusters["task"] == t], "hits", "scored") for t in SIX}
    six = {k: v for k, v in six.items() if v is not None}
    if six:
        out["Avg(6)"] = six
    out["Overall"] = _ratio(clusters, "hits", "scored")
    return {k: v for k, v in out.items() if v is not None}


def score_cells(clusters: pd.DataFrame, *, n_resamples: int, seed: int) -> list[ScoreCell]:
    """Score cells (percent, 95 % percentile interval) of one scored run.

    Args:
        clusters: ``scores/clusters.csv`` as a DataFrame.
        n_resamples: bootstrap resamples B. seed: bootstrap seed.

    Returns:
        One cell per task present (T1 as on-time and joint), the six-task balanced mean over the
        tasks present, the overall target score, and the output volume (responses per probed
        minute, point estimate only).
    """
    metrics = _metrics(clusters)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fewer than 2 clusters: a zero-width interval, noted
        res = bootstrap_metrics(metrics, n_resamples=n_resamples, seed=seed, undefined="nan")
    cells = []
    for name, r in res.items():
        m = metrics[name]
        counts = (
            f"{int(m.numerators.sum())}/{int(m.denominators.sum())}"
            if isinstance(m, Ratio)
            else f"{len(m)} tasks"
        )
        est = None if r.estimate != r.estimate else 100 * r.estimate
        low = None if r.low != r.low else 100 * r.low
        high = None if r.high != r.high else 100 * r.high
        cells.append(ScoreCell(metric=name, estimate=est, low=low, high=high, counts=counts,
                               note=r.note or ""))  # fmt: skip
    minutes = float(clusters["probed_s"].sum()) / 60.0
    responses = int(clusters["responses"].sum())
    cells.append(
        ScoreCell(
            metric="Output volume (/min)",
            estimate=responses / minutes if minutes > 0 else None,
            counts=f"{responses} responses / {minutes:.2f} min",
        )
    )
    return cells
