"""The ablation table: Joint / Micro / Result / Tool per policy (each EgoBench run folder is one
policy: the full EgoInteract, an ablation, or any other agent), each with its 95 %
cluster-bootstrap interval, and the paired cluster-bootstrap difference of every policy against
the reference (the full policy), in percentage points, as Markdown, LaTeX and CSV.

Pairing: every run is scored on the tasks all runs share (``variant:task_id``; tasks missing
from a run are left out and noted). Cluster (a named setting, ``cluster``): ``task`` (default)
resamples tasks, each task played by every policy, so the pair differences are per task; with
``variant`` whole variants are resampled (tasks of one variant share a video and a database),
the conservative choice once a study covers five or more variants."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from interactscope.core.files import write_atomic
from interactscope.core.text import plural
from interactscope.egobench.run_folder import load_run
from interactscope.egobench.run_score import score_run
from interactscope.stats import StatsWarning, bootstrap_metrics, paired_metrics

METRICS = ("Joint", "Micro", "Result", "Tool")
REPORTED_JOINT = {"full": 0.844, "no_auditor": 0.781, "no_rules": 0.646, "neither": 0.635}
"""The source's Joint on its 96 final tasks (official evaluator), for the note under the table."""

Cluster = Literal["task", "variant"]


class PolicyScores(BaseModel):
    """One run's per-task scores: its label, folder, and rows ``(variant, task_id, joint,
    tool, result, matched, total_gt)``."""

    label: str
    run: str
    rows: list[tuple[str, int, bool, bool, bool, int, int]]


def policy_label(agent: dict) -> str:
    """``full`` / ``no_auditor`` / ``no_rules`` / ``neither`` for an EgoInteract run (from its
    ``run.json``), else the agent's name."""
    if agent.get("kind") == "egointeract" and agent.get("label"):
        return str(agent["label"])
    return str(agent.get("name") or "agent")


def load_policy(run: str | Path) -> PolicyScores:
    """Score ``run`` (writes ``RUN/scores`` as ``ego score`` does) and collect its tasks.

    Raises:
        EgoRunError / EgoBenchError: not a run folder, or its data cannot be loaded."""
    manifest, _ = load_run(run)
    score = score_run(run)
    rows = [
        (name, t.task_id, t.joint_succ, t.tool_succ, t.result_succ, t.matched, t.total_gt)
        for name, res in score.results.items()
        for t in res.tasks
    ]
    return PolicyScores(label=policy_label(manifest.agent), run=str(run), rows=rows)


def _labelled(policies: list[PolicyScores]) -> list[PolicyScores]:
    seen: dict[str, int] = {}
    for p in policies:
        seen[p.label] = seen.get(p.label, 0) + 1
    return [
        p.model_copy(update={"label": f"{p.label} ({Path(p.run).name})"})
        if seen[p.label] > 1
        else p
        for p in policies
    ]


def _frame(p: PolicyScores, keys: list[str], cluster: Cluster) -> dict[str, tuple]:
    """The four metrics of ``p`` over ``keys`` (in that order) as bootstrap ratios."""
    by = {f"{r[0]}:{r[1]}": r for r in p.rows}
    rows = [by[k] for k in keys]
    c = np.array([k if cluster == "task" else k.rsplit(":", 1)[0] for k in keys])
    col = lambda i: np.array([float(r[i]) for r in rows])  # noqa: E731
    return {
        "Joint": (col(2), None, c),
        "Micro": (col(5), col(6), c),
        "Result": (col(4), None, c),
        "Tool": (col(3), None, c),
    }


def _common(policies: list[PolicyScores], notes: list[str]) -> list[str]:
    sets = [{f"{r[0]}:{r[1]}" for r in p.rows} for p in policies]
    common = set.intersection(*sets)
    for p, s in zip(policies, sets, strict=True):
        if s - common:
            notes.append(f"{p.label}: {plural(len(s - common), 'task')} not in every run left out")
    if not common:
        raise ValueError("the runs share no task; an ablation compares runs over the same tasks")
    return sorted(common, key=lambda k: (k.rsplit(":", 1)[0], int(k.rsplit(":", 1)[1])))


def ablation_table(
    policies: list[PolicyScores],
    *,
    reference: str | None = None,
    cluster: Cluster = "task",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> tuple[pd.DataFrame, list[str]]:
    """One row per policy: ``n_tasks``, each metric's estimate and interval (fractions), and
    ``d_<metric>`` with ``d_<metric>_low/_high`` (percentage points, policy − reference; NaN
    on the reference row). ``reference`` is a label (default ``full``, else the first run).

    Raises:
        ValueError: no runs, an unknown reference, or runs without a common task (one line)."""
    if not policies:
        raise ValueError("name at least one run folder")
    policies, notes = _labelled(policies), []
    labels = [p.label for p in policies]
    ref = reference or ("full" if "full" in labels else labels[0])
    if ref not in labels:
        raise ValueError(f"--reference {ref!r}: no run has that label; labels: {', '.join(labels)}")
    keys = _common(policies, notes)
    metrics = {p.label: _frame(p, keys, cluster) for p in policies}
    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StatsWarning)
        for p in policies:
            est = bootstrap_metrics(
                metrics[p.label], n_resamples=n_resamples, seed=seed, undefined="nan"
            )
            row: dict = {"policy": p.label, "n_tasks": len(keys), "run": p.run}
            for m in METRICS:
                row[m], row[f"{m}_low"], row[f"{m}_high"] = est[m].estimate, est[m].low, est[m].high
            diff = (
                paired_metrics(
                    metrics[ref],
                    metrics[p.label],
                    n_resamples=n_resamples,
                    seed=seed,
                    undefined="nan",
                )
                if p.label != ref
                else {}
            )
            for m in METRICS:
                d = diff.get(m)
                row[f"d_{m}"] = d.estimate if d else float("nan")
                row[f"d_{m}_low"] = d.low if d else float("nan")
                row[f"d_{m}_high"] = d.high if d else float("nan")
            rows.append(row)
    notes += sorted({str(w.message) for w in caught})
    table = pd.DataFrame(rows)
    table.attrs.update(reference=ref, cluster=cluster, n_clusters=len({*metrics[ref]["Joint"][2]}))
    return table, notes


def _cell(v: float, lo: float, hi: float, scale: float, sign: bool = False) -> str:
    if pd.isna(v):
        return "—"
    f = "{:+.1f}" if sign else "{:.1f}"
    ci = "" if pd.isna(lo) else f" [{f.format(scale * lo)}, {f.format(scale * hi)}]"
    return f.format(scale * v) + ci


def markdown(table: pd.DataFrame) -> str:
    """Percent with 95 % intervals; Δ columns in points against the reference."""
    head = ["policy", "tasks", *METRICS, *(f"Δ{m}" for m in METRICS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in table.iterrows():
        cells = [_cell(r[m], r[f"{m}_low"], r[f"{m}_high"], 100) for m in METRICS]
        cells += [_cell(r[f"d_{m}"], r[f"d_{m}_low"], r[f"d_{m}_high"], 1, True) for m in METRICS]
        lines.append(f"| {r.policy} | {r.n_tasks} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def in_percent(table: pd.DataFrame) -> pd.DataFrame:
    """The table for a file: each metric's estimate and interval (fractions in
    :func:`ablation_table`) in percent, like the ``d_`` columns (percentage points), so every
    number of a row is on the same 0-100 scale; the frame itself is left as it is."""
    out = table.copy()
    for m in METRICS:
        for c in (m, f"{m}_low", f"{m}_high"):
            if c in out:
                out[c] = 100 * out[c]
    return out


def write_ablation(table: pd.DataFrame, notes: list[str], dest: str | Path) -> list[Path]:
    """Write ``ablation.md``, ``ablation.tex`` and ``ablation.csv`` into ``dest`` (percent
    and percentage points throughout, :func:`in_percent`)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    a = table.attrs
    reported = ", ".join(f"{k} {100 * v:.1f}" for k, v in REPORTED_JOINT.items())
    md = (
        "# EgoInteract ablation\n\nPercent; 95 % cluster-bootstrap intervals (cluster = "
        f"{a['cluster']}, {a['n_clusters']} clusters). Δ: paired cluster-bootstrap difference "
        f"against `{a['reference']}` in points (same resampled clusters for both runs).\n\n"
        + markdown(table)
        + f"\nThe source reports Joint {reported} (96 final tasks, official evaluator; other "
        "tasks and models than these).\n"
    )
    if notes:
        md += "\nNotes:\n" + "".join(f"- {n}\n" for n in notes)
    paths = [dest / "ablation.md", dest / "ablation.tex", dest / "ablation.csv"]
    write_atomic(paths[0], md)
    pct = in_percent(table)
    cols = [c for c in pct.columns if c != "run"]
    write_atomic(paths[1], pct[cols].to_latex(index=False, float_format="%.1f", na_rep=""))
    write_atomic(paths[2], pct.to_csv(index=False))
    return paths
