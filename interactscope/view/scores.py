"""The summary's score table: every reported metric of the metric table
(:data:`interactscope.streaming.scoring.metrics.METRICS`, same names and formulas as
``summary.json``, compare and report) with its 95 % cluster-bootstrap interval, read from
``scores/clusters.csv`` and resampled with :func:`interactscope.stats.bootstrap_metrics`."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from interactscope.stats import bootstrap_metrics
from interactscope.streaming.scoring.metrics import metric, metric_ratios
from interactscope.view.model import ScoreCell

__all__ = ["score_cells"]


def _counts(name: str, arrays) -> str:
    if isinstance(arrays, dict):
        return f"{len(arrays)} tasks"
    num, den = float(np.sum(arrays[0])), float(np.sum(arrays[1]))
    if metric(name).kind == "rate":
        return f"{int(num)} responses / {den:.2f} min"
    return f"{int(num)}/{int(den)}"


def _pct(value: float, scale: float) -> float | None:
    return None if math.isnan(value) else scale * value


def score_cells(clusters: pd.DataFrame, *, n_resamples: int, seed: int) -> list[ScoreCell]:
    """Score cells of one scored run, one per reported metric present, in METRICS order.

    Args:
        clusters: ``scores/clusters.csv`` as a DataFrame (one row per cluster and task).
        n_resamples: bootstrap resamples B. seed: bootstrap seed.

    Returns:
        Cells in percent (``kind`` percent) or responses per probed minute (``kind`` rate),
        each with the percentile interval and the counts behind it (``hits/scored``).
    """
    ratios = metric_ratios(clusters)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fewer than 2 clusters: a zero-width interval, noted
        res = bootstrap_metrics(ratios, n_resamples=n_resamples, seed=seed, undefined="nan")
    cells = []
    for name, r in res.items():
        scale = 100.0 if metric(name).kind == "percent" else 1.0
        cells.append(ScoreCell(metric=name, estimate=_pct(r.estimate, scale),
                               low=_pct(r.low, scale), high=_pct(r.high, scale),
                               counts=_counts(name, ratios[name]), note=r.note or ""))  # fmt: skip
    return cells
