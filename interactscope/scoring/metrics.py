"""Metrics of SPEC §3.3 from tidy tables, with numerators/denominators kept per video cluster.

Three tables (pandas DataFrames) carry everything:

* **targets** — one row per target: ``interaction_id, task, panel, video_id, cluster, target_id,
  target_index, evidence, anchor_s, window_lo_s, window_hi_s, outcome, hit, scored, on_time,
  group_open_s, group_size, response_t, response_text, response_tools, verdict``;
* **interactions** — one row per interaction: ``targets, scored, hits, records, responses,
  probed_s, infrastructure_errors, suppressed, parse_errors, complete`` (T8-C: 1/0, else NA);
* **clusters** — :func:`cluster_table`: per (cluster, task) sums of every numerator and
  denominator. :func:`compute_metrics` reads only this table, so a cluster bootstrap resamples its
  rows by ``cluster`` and calls :func:`compute_metrics` again (SPEC §3.4).

Ratios (SPEC §3.3):

* task score = Σ hits / Σ scored targets (``unjudged`` targets excluded from both);
* T1 on-time = Σ on_time / Σ targets; joint = Σ hits / Σ targets; conditional = joint / on-time
  = Σ hits / Σ on_time;
* six-task balanced mean = unweighted mean of the T1, T2, T3, T4, T6, T7 scores present;
* T8-A / T8-B / T8-C step recall = Σ hits / Σ scored; Complete T8-C = Σ complete of n episodes;
* output volume = Σ non-silent responses / Σ probed minutes (probed span = last decision time −
  q, per interaction).

A ratio with a zero denominator is ``None`` (``null`` in JSON).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from interactscope.schema import TASKS

__all__ = [
    "CLUSTER_COLUMNS",
    "SIX_TASKS",
    "cluster_table",
    "compute_metrics",
    "format_tables",
    "interactions_frame",
    "metric_ratios",
    "targets_frame",
]

SIX_TASKS: tuple[str, ...] = ("T1", "T2", "T3", "T4", "T6", "T7")
OUTCOME_COLUMNS = ("hit", "premature", "wrong", "late", "missed", "unjudged")
TARGET_COLUMNS = [
    "interaction_id",
    "task",
    "panel",
    "video_id",
    "cluster",
    "target_id",
    "target_index",
    "evidence",
    "anchor_s",
    "window_lo_s",
    "window_hi_s",
    "outcome",
    "hit",
    "scored",
    "on_time",
    "group_open_s",
    "group_size",
    "response_t",
    "response_text",
    "response_tools",
    "verdict",
]
INTERACTION_COLUMNS = [
    "interaction_id",
    "task",
    "panel",
    "video_id",
    "cluster",
    "targets",
    "scored",
    "hits",
    "records",
    "responses",
    "probed_s",
    "infrastructure_errors",
    "suppressed",
    "parse_errors",
    "complete",
]
CLUSTER_COLUMNS = [
    "cluster",
    "task",
    "targets",
    "scored",
    "hits",
    "on_time",
    "premature",
    "wrong",
    "late",
    "missed",
    "unjudged",
    "interactions",
    "episodes",
    "complete",
    "responses",
    "probed_s",
    "infrastructure_errors",
]


def targets_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Target rows -> DataFrame sorted by (interaction_id, target_index), nullable integer columns."""
    df = pd.DataFrame(list(rows), columns=TARGET_COLUMNS)
    for col in ("target_index", "hit", "scored", "on_time", "group_size"):
        df[col] = df[col].astype("Int64")
    for col in ("anchor_s", "window_lo_s", "window_hi_s", "group_open_s", "response_t"):
        df[col] = df[col].astype("float64")
    return df.sort_values(["interaction_id", "target_index"], kind="stable").reset_index(drop=True)


def interactions_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(list(rows), columns=INTERACTION_COLUMNS)
    for col in INTERACTION_COLUMNS[5:]:
        if col != "probed_s":
            df[col] = df[col].astype("Int64")
    df["probed_s"] = df["probed_s"].astype("float64")
    return df.sort_values("interaction_id", kind="stable").reset_index(drop=True)


def cluster_table(targets: pd.DataFrame, interactions: pd.DataFrame) -> pd.DataFrame:
    """Per (cluster, task) sums of every numerator and denominator (columns :data:`CLUSTER_COLUMNS`)."""
    t = targets.assign(
        targets=1,
        on_time=targets["on_time"].fillna(0),
        **{f"_{o}": (targets["outcome"] == o).astype(int) for o in OUTCOME_COLUMNS},
    )
    tsum = (
        t.groupby(["cluster", "task"], sort=True)
        .agg(
            targets=("targets", "sum"),
            scored=("scored", "sum"),
            hits=("hit", "sum"),
            on_time=("on_time", "sum"),
            **{o: (f"_{o}", "sum") for o in OUTCOME_COLUMNS[1:]},
        )
        .reset_index()
    )
    i = interactions.assign(
        interactions=1,
        episodes=interactions["complete"].notna().astype(int),
        complete=interactions["complete"].fillna(0),
    )
    isum = (
        i.groupby(["cluster", "task"], sort=True)
        .agg(
            interactions=("interactions", "sum"),
            episodes=("episodes", "sum"),
            complete=("complete", "sum"),
            responses=("responses", "sum"),
            probed_s=("probed_s", "sum"),
            infrastructure_errors=("infrastructure_errors", "sum"),
        )
        .reset_index()
    )
    out = tsum.merge(isum, on=["cluster", "task"], how="outer").fillna(0)
    for col in CLUSTER_COLUMNS[2:]:
        out[col] = out[col].astype("float64" if col == "probed_s" else "int64")
    out["probed_s"] = out["probed_s"].round(3)
    return out[CLUSTER_COLUMNS].sort_values(["cluster", "task"]).reset_index(drop=True)


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else float(num) / float(den)


def compute_metrics(clusters: pd.DataFrame) -> dict[str, Any]:
    """Every SPEC §3.3 metric from a cluster table (see the module docstring for the formulas).

    Returns a nested dict: ``tasks`` (per task: counts, ``score``, failure breakdown, volume),
    ``T1`` (on-time / joint / conditional), ``six_task_mean`` (+ the tasks it averaged),
    ``T8`` (recall per subgroup, ``complete_T8C`` count of n), ``overall`` and ``output_volume``.
    """
    by_task = clusters.groupby("task", sort=True)[CLUSTER_COLUMNS[2:]].sum()
    tasks: dict[str, Any] = {}
    for task in [t for t in TASKS if t in by_task.index]:
        r = by_task.loc[task]
        minutes = float(r["probed_s"]) / 60.0
        tasks[task] = {
            "targets": int(r["targets"]),
            "scored": int(r["scored"]),
            "hits": int(r["hits"]),
            "score": _ratio(r["hits"], r["scored"]),
            "failures": {o: int(r[o]) if o != "hit" else int(r["hits"]) for o in OUTCOME_COLUMNS},
            "interactions": int(r["interactions"]),
            "responses": int(r["responses"]),
            "probed_min": minutes,
            "responses_per_min": _ratio(r["responses"], minutes),
        }
    out: dict[str, Any] = {"tasks": tasks}
    if "T1" in by_task.index:
        r = by_task.loc["T1"]
        out["T1"] = {
            "targets": int(r["targets"]),
            "on_time_count": int(r["on_time"]),
            "joint_count": int(r["hits"]),
            "on_time": _ratio(r["on_time"], r["targets"]),
            "joint": _ratio(r["hits"], r["targets"]),
            "conditional": _ratio(r["hits"], r["on_time"]),
        }
    six = [t for t in SIX_TASKS if t in tasks and tasks[t]["score"] is not None]
    out["six_task_mean"] = sum(tasks[t]["score"] for t in six) / len(six) if six else None
    out["six_task_mean_tasks"] = six
    t8: dict[str, Any] = {}
    for task in ("T8-A", "T8-B", "T8-C"):
        if task in tasks:
            t8[task] = {"recall": tasks[task]["score"], "hits": tasks[task]["hits"]}
            t8[task]["scored"] = tasks[task]["scored"]
    if "T8-C" in by_task.index:
        r = by_task.loc["T8-C"]
        t8["complete_T8C"] = {
            "count": int(r["complete"]),
            "n": int(r["episodes"]),
            "rate": _ratio(r["complete"], r["episodes"]),
        }
    out["T8"] = t8
    total = by_task.sum()
    minutes = float(total["probed_s"]) / 60.0 if len(by_task) else 0.0
    out["overall"] = {
        "targets": int(total.get("targets", 0)),
        "scored": int(total.get("scored", 0)),
        "hits": int(total.get("hits", 0)),
        "score": _ratio(total.get("hits", 0), total.get("scored", 0)),
        "unjudged": int(total.get("unjudged", 0)),
    }
    volume: dict[str, Any] = {
        "responses": int(total.get("responses", 0)),
        "probed_min": minutes,
        "per_min": _ratio(total.get("responses", 0), minutes),
    }
    for panel, members in (("explicit", TASKS[:7]), ("assistance", TASKS[7:])):
        sub = by_task.loc[[t for t in members if t in by_task.index]]
        m = float(sub["probed_s"].sum()) / 60.0
        volume[panel] = {
            "responses": int(sub["responses"].sum()),
            "probed_min": m,
            "per_min": _ratio(sub["responses"].sum(), m),
        }
    out["output_volume"] = volume
    out["infrastructure_errors"] = int(total.get("infrastructure_errors", 0))
    return out


RatioArrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def metric_ratios(clusters: pd.DataFrame) -> dict[str, RatioArrays | dict[str, RatioArrays]]:
    """The SPEC §3.3 ratios as ``(numerators, denominators, cluster labels)`` arrays, one entry per
    (cluster, task) row — the input of :func:`interactscope.stats.bootstrap_metrics` /
    ``paired_metrics``. The six-task mean is a mapping task -> ratio (a balanced mean).

    Names: ``T1 on-time``, ``T1 joint``, ``T1 conditional``, each task's score (``T1`` … ``T7``,
    ``T8-A``, ``T8-B``, ``T8-C``; T8 scores are timely recall), ``six-task mean``,
    ``Complete T8-C`` (complete / episodes), ``overall`` and ``responses/min``.
    Only tasks present in the table appear.
    """

    def arrays(rows: pd.DataFrame, num: str, den: str, scale: float = 1.0) -> RatioArrays:
        return (
            rows[num].to_numpy(dtype=np.float64),
            rows[den].to_numpy(dtype=np.float64) * scale,
            rows["cluster"].astype(str).to_numpy(),
        )

    out: dict[str, RatioArrays | dict[str, RatioArrays]] = {}
    present = [t for t in TASKS if t in set(clusters["task"])]
    if "T1" in present:
        t1 = clusters[clusters["task"] == "T1"]
        out["T1 on-time"] = arrays(t1, "on_time", "targets")
        out["T1 joint"] = arrays(t1, "hits", "targets")
        out["T1 conditional"] = arrays(t1, "hits", "on_time")
    for task in present:
        out[task] = arrays(clusters[clusters["task"] == task], "hits", "scored")
    six = [t for t in SIX_TASKS if t in present]
    if six:
        out["six-task mean"] = {t: out[t] for t in six}  # type: ignore[misc]
    if "T8-C" in present:
        out["Complete T8-C"] = arrays(clusters[clusters["task"] == "T8-C"], "complete", "episodes")
    if len(clusters):
        out["overall"] = arrays(clusters, "hits", "scored")
        out["responses/min"] = arrays(clusters, "responses", "probed_s", 1.0 / 60.0)
    return out


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100.0 * x:.2f}"


def format_tables(metrics: dict[str, Any], *, model: str = "run", judge: str = "") -> str:
    """The paper's layout (Table 2: T1 on-time / joint / conditional, T2–T7, six-task mean;
    Table 3: T8-A, T8-B, T8-C steps, Complete T8-C), a failure breakdown and the volume, as text.
    Percentages with two decimals; ``—`` where a task has no scored target."""
    tasks = metrics.get("tasks", {})
    t1 = metrics.get("T1", {})

    def score(t: str) -> str:
        return _pct(tasks[t]["score"]) if t in tasks else "—"

    t2 = pd.DataFrame(
        [
            {
                "Model": model,
                "T1 On-time": _pct(t1.get("on_time")),
                "T1 Joint": _pct(t1.get("joint")),
                "T1 Cond.": _pct(t1.get("conditional")),
                **{t: score(t) for t in ("T2", "T3", "T4", "T5", "T6", "T7")},
                "Avg(6)": _pct(metrics.get("six_task_mean")),
            }
        ]
    )
    t8 = metrics.get("T8", {})
    comp = t8.get("complete_T8C")
    t3 = pd.DataFrame(
        [
            {
                "Model": model,
                "T8-A": _pct(t8.get("T8-A", {}).get("recall")),
                "T8-B": _pct(t8.get("T8-B", {}).get("recall")),
                "T8-C steps": _pct(t8.get("T8-C", {}).get("recall")),
                "Complete T8-C": f"{comp['count']}/{comp['n']}" if comp else "—",
            }
        ]
    )
    fail = pd.DataFrame(
        [{"task": t, **tasks[t]["failures"], "targets": tasks[t]["targets"]} for t in tasks]
    )
    vol = metrics.get("output_volume", {})
    lines = [
        "Explicit-request tasks (T1–T7), % of targets" + (f" — judge: {judge}" if judge else ""),
        t2.to_string(index=False),
        "",
        "Assistance tasks (T8), timely recall %",
        t3.to_string(index=False),
        "",
        "Failure breakdown (counts)",
        fail.to_string(index=False) if len(fail) else "(no targets)",
        "",
        f"Output volume: {vol.get('responses', 0)} non-silent responses over "
        f"{vol.get('probed_min', 0.0):.2f} probed min = "
        + ("—" if vol.get("per_min") is None else f"{vol['per_min']:.2f}/min"),
    ]
    return "\n".join(lines)
