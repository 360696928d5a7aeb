"""Tidy tables of a scored run: one row per target, per interaction, per (cluster, task).

* **targets** — one row per target: ``interaction_id, task, panel, video_id, cluster, target_id,
  target_index, evidence, anchor_s, window_lo_s, window_hi_s, outcome, hit, scored, on_time,
  group_open_s, group_size, response_t, response_text, response_tools, verdict``;
* **interactions** — one row per interaction: ``targets, scored, hits, records, responses,
  probed_s, infrastructure_errors, suppressed, parse_errors, complete`` (sequence tasks: 1/0,
  else NA);
* **clusters** — :func:`cluster_table`: per (cluster, task) sums of every numerator and
  denominator; ``targets`` counts the targets that were scored or unjudged (``infra_error``
  targets, whose decision points all failed, are only counted in their own column). Every metric (:mod:`interactscope.streaming.scoring.metrics`) reads only this table, so a
  cluster bootstrap resamples its rows by ``cluster``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from interactscope.streaming.tasks import OUTCOMES

__all__ = [
    "CLUSTER_COLUMNS",
    "INTERACTION_COLUMNS",
    "TARGET_COLUMNS",
    "cluster_table",
    "interactions_frame",
    "targets_frame",
]

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
    *OUTCOMES[1:],  # one count per failure outcome (premature ... infra_error)
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
    """Interaction rows -> DataFrame sorted by interaction_id, nullable integer counts."""
    df = pd.DataFrame(list(rows), columns=INTERACTION_COLUMNS)
    for col in INTERACTION_COLUMNS[5:]:
        if col != "probed_s":
            df[col] = df[col].astype("Int64")
    df["probed_s"] = df["probed_s"].astype("float64")
    return df.sort_values("interaction_id", kind="stable").reset_index(drop=True)


def cluster_table(targets: pd.DataFrame, interactions: pd.DataFrame) -> pd.DataFrame:
    """Per (cluster, task) sums of every numerator and denominator (columns :data:`CLUSTER_COLUMNS`)."""
    # An infra_error target is not a target of the score: it leaves every denominator (the
    # T1 ones divide by ``targets``) and is counted in its own column.
    t = targets.assign(
        targets=(targets["outcome"] != "infra_error").astype(int),
        on_time=targets["on_time"].fillna(0),
        **{f"_{o}": (targets["outcome"] == o).astype(int) for o in OUTCOMES},
    )
    tsum = (
        t.groupby(["cluster", "task"], sort=True)
        .agg(
            targets=("targets", "sum"),
            scored=("scored", "sum"),
            hits=("hit", "sum"),
            on_time=("on_time", "sum"),
            **{o: (f"_{o}", "sum") for o in OUTCOMES[1:]},
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
