"""The paper's tables from per-run metric rows (:func:`interactscope.streaming.analysis.compare.run_table`),
one function per table; the columns come from :data:`interactscope.streaming.scoring.metrics.METRICS`.

Each returns (display frame: one row per run, cells ``"est [lo, hi]"``; long frame of raw
numbers: ``run, metric, estimate, low, high, counts, n_clusters``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from interactscope.stats import BootstrapOptions, permutation_reference
from interactscope.streaming.analysis.runs import ScoredRun
from interactscope.streaming.scoring.metrics import Metric, table_columns
from interactscope.streaming.scoring.results import format_interval
from interactscope.streaming.tasks import OUTCOMES, SEQUENCE_TASKS, TASKS

__all__ = [
    "assistance_table",
    "explicit_table",
    "failure_table",
    "permutation",
    "sequence_outcomes",
    "volume_table",
]

Tables = tuple[pd.DataFrame, pd.DataFrame]


def _cell(row: pd.Series | None) -> str:
    return "—" if row is None else format_interval(row["estimate"], row["low"], row["high"])


def _wide(metrics: pd.DataFrame, columns: Sequence[Metric], runs: Sequence[str]) -> Tables:
    disp, long = [], []
    for label in runs:
        m = metrics[metrics["run"] == label].set_index("metric")
        row = {"Model": label}
        for col in columns:
            r = m.loc[col.name] if col.name in m.index else None
            row[col.display] = _cell(r)
            if r is not None:
                keep = ("estimate", "low", "high", "counts", "n_clusters")
                long.append({"run": label, "metric": col.name, **{k: r[k] for k in keep}})
        disp.append(row)
    return pd.DataFrame(disp), pd.DataFrame(long)


def explicit_table(metrics: pd.DataFrame, runs: Sequence[str]) -> Tables:
    """Paper Table 2: T1 on-time / joint / conditional, T2–T7, Avg(6) in % with intervals.

    ``metrics``: long frame (``run, metric, estimate, low, high, counts, n_clusters``) from
    :func:`interactscope.streaming.analysis.compare.run_table` per run."""
    return _wide(metrics, table_columns("explicit"), runs)


def failure_table(runs: Sequence[ScoredRun]) -> pd.DataFrame:
    """Failure breakdown per run and task, T1–T7 and T8 (docs/protocol.md, metrics): count of
    each outcome (hit / premature / wrong / late / missed / unjudged; ``infra_error`` as a column
    only when some run has one) and the number of targets. T8 targets are only hit / missed /
    unjudged, so their premature / wrong / late counts are 0."""
    present = {o for r in runs for o in r.targets["outcome"].astype(str)}
    outcomes = [o for o in OUTCOMES if o != "infra_error" or o in present]
    rows = []
    for r in runs:
        t = r.targets[r.targets["task"].isin(TASKS)]
        for task in [x for x in TASKS if x in set(t["task"])]:
            counts = t.loc[t["task"] == task, "outcome"].value_counts()
            rows.append(
                {
                    "Model": r.label,
                    "task": task,
                    **{o: int(counts.get(o, 0)) for o in outcomes},
                    "targets": int(counts.sum()),
                }
            )
    return pd.DataFrame(rows, columns=["Model", "task", *outcomes, "targets"])


def sequence_outcomes(run: ScoredRun, task: str) -> dict[int, np.ndarray]:
    """Step outcomes of multi-target episodes of ``task``: K → (n episodes × K) 0/1 array
    (episodes with an unjudged step are left out)."""
    t = run.targets[run.targets["task"] == task].sort_values(["interaction_id", "target_index"])
    out: dict[int, list[np.ndarray]] = {}
    for _, sub in t.groupby("interaction_id", sort=True):
        if (sub["outcome"] == "unjudged").any():
            continue
        out.setdefault(len(sub), []).append(sub["hit"].to_numpy(dtype=int))
    return {k: np.vstack(v) for k, v in sorted(out.items())}


def permutation(x: np.ndarray, options: BootstrapOptions) -> Any:
    """Permutation reference of complete sequences (B permutations, the options' seed)."""
    return permutation_reference(x, n_permutations=options.n_resamples, seed=options.seed)


def _complete_rows(run: ScoredRun, task: str, options: BootstrapOptions) -> tuple[str, list]:
    """(cell text, long rows) of complete sequences per length K against the permutation."""
    parts, long = [], []
    for k, x in sequence_outcomes(run, task).items():
        p = permutation(x, options)
        parts.append(
            f"{p.observed}/{p.n} (K={k}; perm. E={p.expected:.2f} [{p.low:g}, {p.high:g}])"
        )
        long.append(
            {
                "run": run.label,
                "metric": f"Complete {task} (K={k})",
                "estimate": p.observed,
                "low": p.low,
                "high": p.high,
                "counts": f"{p.observed}/{p.n}",
                "expected": p.expected,
            }
        )
    return ("; ".join(parts) if parts else "—"), long


def assistance_table(
    metrics: pd.DataFrame,
    runs: Sequence[ScoredRun],
    *,
    n_permutations: int | None = None,
    seed: int | None = None,
    options: BootstrapOptions | None = None,
) -> Tables:
    """Paper Table 3: T8-A, T8-B, T8-C step recall (%, intervals) and Complete T8-C as
    ``observed/n`` with the permutation expectation ``n·Π p_k`` and its 95 % reference
    interval (per sequence length K). ``n_permutations``/``seed`` override ``options``."""
    opts = BootstrapOptions.of(options, n_resamples=n_permutations, seed=seed)
    disp, long = _wide(metrics, table_columns("assistance"), [r.label for r in runs])
    for task in SEQUENCE_TASKS:
        cells, rows = [], []
        for r in runs:
            cell, extra = _complete_rows(r, task, opts)
            cells.append(cell)
            rows += extra
        disp[f"Complete {task}"] = cells
        long = pd.concat([long, pd.DataFrame(rows)], ignore_index=True) if rows else long
    return disp, long


def volume_table(metrics: pd.DataFrame, runs: Sequence[str]) -> Tables:
    """Output volume (responses per probed minute; paper appendix) beside output precision
    (matched outputs / non-silent outputs, %; beyond the paper)."""
    return _wide(metrics, table_columns("volume"), runs)
