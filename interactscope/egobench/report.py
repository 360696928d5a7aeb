"""Tables over scored logs: per scenario x mode JointSucc / MicroAcc / ToolSucc / ResultSucc
with 95 % cluster-bootstrap intervals (cluster = variant), error classes, Markdown/LaTeX/CSV."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from interactscope.core.files import write_atomic
from interactscope.egobench.errors import CLASSES
from interactscope.egobench.scorer import read_score
from interactscope.stats import StatsWarning, bootstrap_metrics

METRICS = ("JointSucc", "MicroAcc", "ToolSucc", "ResultSucc")


def _rows(frame: pd.DataFrame) -> dict[str, tuple]:
    c = frame["variant"].to_numpy()
    return {
        "JointSucc": (frame["joint_succ"].astype(float).to_numpy(), None, c),
        "MicroAcc": (
            frame["matched"].astype(float).to_numpy(),
            frame["total_gt"].astype(float).to_numpy(),
            c,
        ),
        "ToolSucc": (frame["tool_succ"].astype(float).to_numpy(), None, c),
        "ResultSucc": (frame["result_succ"].astype(float).to_numpy(), None, c),
    }


def build_table(
    outs: list[str | Path], n_resamples: int = 10_000, seed: int = 0
) -> tuple[pd.DataFrame, list[str]]:
    """One row per scenario x mode (plus each scenario's cross-mode mean when it has several
    modes): each metric's estimate and 95 % interval (fractions), task and variant counts,
    error-class counts, the pooled MicroAcc and the reference's per-file task-weighted figure.

    Raises:
        EgoBenchError: a folder without a score (one line naming the file)."""
    parts, files, notes = [], [], []
    for out in outs:
        summary, frame = read_score(out)
        frame = frame.assign(
            variant=summary.variant, scenario=summary.scenario, mode=summary.mode or "unknown"
        )
        frame["tool_succ"] = frame["tool_succ"].astype(str).str.lower().eq("true")
        frame["result_succ"] = frame["result_succ"].astype(str).str.lower().eq("true")
        frame["joint_succ"] = frame["joint_succ"].astype(str).str.lower().eq("true")
        parts.append(frame)
        ref = summary.reference_view
        files.append(
            {
                "scenario": summary.scenario,
                "mode": summary.mode or "unknown",
                "n_valid": ref["n_tasks"],
                "micro": ref["micro_acc"],
            }
        )
    tasks = pd.concat(parts, ignore_index=True)
    files_df = pd.DataFrame(files)
    rows = []
    for (scen, mode), g in tasks.groupby(["scenario", "mode"], sort=True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StatsWarning)
            res = bootstrap_metrics(_rows(g), n_resamples=n_resamples, seed=seed, undefined="nan")
        for w in caught:
            notes.append(f"{scen}/{mode}: {w.message}")
        f = files_df[(files_df.scenario == scen) & (files_df["mode"] == mode)]
        weighted = (
            (f.micro * f.n_valid).sum() / f.n_valid.sum() if f.n_valid.sum() else float("nan")
        )
        row = {"scenario": scen, "mode": mode, "n_tasks": len(g), "n_variants": g.variant.nunique()}
        for m in METRICS:
            row[m], row[f"{m}_low"], row[f"{m}_high"] = res[m].estimate, res[m].low, res[m].high
        row["MicroAcc_pooled"] = row["MicroAcc"]
        row["MicroAcc_reference_per_file_weighted"] = weighted
        counts = g["error_class"].replace("", pd.NA).dropna().value_counts()
        for c in CLASSES:
            row[f"err_{c}"] = int(counts.get(c, 0))
        rows.append(row)
    table = pd.DataFrame(rows)
    means = []
    for scen, g in table.groupby("scenario", sort=True):
        if len(g) > 1:
            means.append(
                {
                    "scenario": scen,
                    "mode": "mean of modes",
                    "n_tasks": int(g.n_tasks.sum()),
                    "n_variants": int(g.n_variants.max()),
                    **{m: g[m].mean() for m in METRICS},
                }
            )
    if means:
        table = pd.concat([table, pd.DataFrame(means)], ignore_index=True)
    return table, notes


def markdown(table: pd.DataFrame) -> str:
    """Percent table with intervals: one line per scenario x mode."""
    lines = [
        "| scenario | mode | tasks | variants | "
        + " | ".join(METRICS)
        + " | MicroAcc ref. per-file |",
        "|" + "---|" * (5 + len(METRICS)),
    ]
    for _, r in table.iterrows():
        cells = []
        for m in METRICS:
            lo = r.get(f"{m}_low")
            cells.append(
                f"{100 * r[m]:.1f}"
                + ("" if pd.isna(lo) else f" [{100 * lo:.1f}, {100 * r[f'{m}_high']:.1f}]")
            )
        ref = r.get("MicroAcc_reference_per_file_weighted")
        lines.append(
            f"| {r.scenario} | {r['mode']} | {r.n_tasks} | {r.n_variants} | "
            + " | ".join(cells)
            + " | "
            + ("" if pd.isna(ref) else f"{100 * ref:.1f}")
            + " |"
        )
    return "\n".join(lines) + "\n"


def write_report(
    outs: list[str | Path], dest: str | Path, n_resamples: int = 10_000, seed: int = 0
) -> tuple[pd.DataFrame, list[Path], list[str]]:
    """Write ``report.md``, ``report.tex``, ``report.csv`` into ``dest``."""
    table, notes = build_table(outs, n_resamples=n_resamples, seed=seed)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    md = (
        "# EgoBench results\n\nPercent; 95 % cluster-bootstrap intervals (cluster = variant). "
        "MicroAcc is pooled (Σ matched / Σ GT); the last column is the reference evaluator's "
        "task-weighted mean of per-file values.\n\n" + markdown(table)
    )
    if notes:
        md += "\nNotes:\n" + "".join(f"- {n}\n" for n in notes)
    paths = [dest / "report.md", dest / "report.tex", dest / "report.csv"]
    write_atomic(paths[0], md)
    write_atomic(paths[1], table.to_latex(index=False, float_format="%.3f", na_rep=""))
    write_atomic(paths[2], table.to_csv(index=False))
    return table, paths, notes
