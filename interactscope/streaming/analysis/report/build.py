"""``interactscope report RUN... --out DIR``: every table and figure the given scored runs allow.

Paper layouts: Table 2 (explicit-request results, with a failure breakdown), Table 3
(assistance, Complete T8-C against its permutation reference), the output volume, Figure 6
(step coverage and complete sequences), then one section per registered control
(:func:`interactscope.streaming.analysis.controls.registered`: Table 8 priors, scene ablation with Figure 3,
Table 10 policy controls, decision schedule), then the beyond-the-paper table. Every percentage
carries its 95 % cluster-bootstrap interval. Tables that need a missing partner run are skipped
and listed in ``report.json``.

Every table is written as ``NAME.md``, ``NAME.tex`` and ``NAME.csv`` (raw numbers: estimate /
low / high); every figure as ``NAME.png`` and ``NAME.pdf``. ``report.md`` collects the Markdown
tables and ``report.json`` lists the runs, their roles and pairings, options, skipped items and
files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from interactscope.core.files import write_atomic
from interactscope.stats import BootstrapOptions
from interactscope.streaming.analysis.beyond_paper import beyond_table
from interactscope.streaming.analysis.compare import run_table
from interactscope.streaming.analysis.controls.base import ReportInputs
from interactscope.streaming.analysis.controls.priors import BLIND_FIRE_DELAYS
from interactscope.streaming.analysis.controls.registry import registered
from interactscope.streaming.analysis.controls.scene import TOLERANCES
from interactscope.streaming.analysis.errors import AnalysisError
from interactscope.streaming.analysis.figures import sequence_figure
from interactscope.streaming.analysis.output import Report, write_table
from interactscope.streaming.analysis.report.roles import pair_runs, unique_labels
from interactscope.streaming.analysis.report.tables import (
    assistance_table,
    explicit_table,
    failure_table,
    permutation,
    sequence_outcomes,
    volume_table,
)
from interactscope.streaming.analysis.runs import ScoredRun, load_scored
from interactscope.streaming.judges.base import judge_note
from interactscope.streaming.tasks import SEQUENCE_TASKS

__all__ = ["Report", "build_report"]


def _load(runs: Sequence[str | Path]) -> tuple[list[ScoredRun], dict[str, Any]]:
    scored = [load_scored(r) for r in runs]
    if not scored:
        raise AnalysisError("no runs given")
    unique_labels(scored)
    pairing = pair_runs(scored)
    # main runs first (given order), then the control runs
    scored.sort(key=lambda r: pairing["roles"][r.label] != "main")
    return scored, pairing


def _paper_tables(rep: Report, scored: list[ScoredRun], opts: BootstrapOptions) -> None:
    """all_metrics, Table 2, the failure breakdown, Table 3 and the output volume."""
    frames = [run_table(r, options=opts).assign(run=r.label) for r in scored]
    metrics = pd.concat(frames, ignore_index=True)
    metrics = metrics[["run", *[c for c in metrics.columns if c != "run"]]]
    labels = [r.label for r in scored]
    write_table(metrics, rep.out, "all_metrics")
    rep.add_files("all_metrics", [rep.out / "all_metrics.csv", rep.out / "all_metrics.md"])
    disp, raw = explicit_table(metrics, labels)
    rep.add_table(
        "table2_explicit",
        "Explicit-request tasks (T1–T7), % of targets [95% CI]",
        disp,
        raw,
        note="T1 Cond. = joint / on-time; Avg(6) = unweighted mean of T1, T2, T3, T4, T6, T7 "
        "present; T5 reported apart. — = no targets.",
    )
    rep.add_table(
        "failure_breakdown", "Failure breakdown (counts of targets)", failure_table(scored)
    )
    disp, raw = assistance_table(metrics, scored, options=opts)
    rep.add_table("table3_assistance", "Assistance tasks (T8), timely recall % [95% CI]", disp, raw)
    disp, raw = volume_table(metrics, labels)
    rep.add_table(
        "output_volume",
        "Output volume (responses per probed minute) and output precision (beyond the paper)",
        disp,
        raw,
        note="Output precision = matched outputs / non-silent outputs (beyond the paper; "
        "reported beside the volume, never instead of recall).",
    )


def _sequence_panels(mains: list[ScoredRun], opts: BootstrapOptions) -> list[dict[str, Any]]:
    panels = []
    for r in mains:
        present = set(r.targets["task"])
        seq = [t for t in SEQUENCE_TASKS if t in present]
        for task in seq or sorted(present):
            for k, x in sequence_outcomes(r, task).items():
                if k >= 2:
                    panels.append(
                        {
                            "run": r.label,
                            "task": task,
                            "k": k,
                            "outcomes": x,
                            "perm": permutation(x, opts),
                        }
                    )
    return panels


def _sequence_figure(rep: Report, mains: list[ScoredRun], opts: BootstrapOptions) -> None:
    """Figure 6 and its numbers (fig_sequences.csv)."""
    panels = _sequence_panels(mains, opts)
    rep.add_files("fig_sequences", sequence_figure(panels, rep.out))
    if panels:
        write_atomic(
            rep.out / "fig_sequences.csv",
            pd.DataFrame(
                [
                    {
                        "run": p["run"],
                        "task": p["task"],
                        "K": p["k"],
                        "episodes": p["outcomes"].shape[0],
                        **{f"step{j + 1}": int(v) for j, v in enumerate(p["outcomes"].sum(axis=0))},
                        "complete": p["perm"].observed,
                        "expected": p["perm"].expected,
                        "ref_low": p["perm"].low,
                        "ref_high": p["perm"].high,
                    }
                    for p in panels
                ]
            ).to_csv(index=False, float_format="%.4f"),
        )
    if not any(p["task"] in SEQUENCE_TASKS for p in panels):
        rep.skip(
            "fig_sequences: no T8-C episodes; the figure shows the multi-target episodes of "
            "other tasks"
        )


def _beyond(rep: Report, mains: list[ScoredRun], judge: str | None, opts: BootstrapOptions):

    try:
        bt = beyond_table(mains, judge=judge, options=opts)
    except Exception as exc:  # noqa: BLE001 - the paper's tables stand without these
        rep.skip(f"beyond: {exc}")
        return
    rep.add_table(
        "beyond_paper",
        "Beyond the paper: lenient allocation and latency-aware timing vs the paper's rule",
        bt.display,
        bt.raw,
        note=bt.note,
    )


def _judge_lines(runs: Sequence[ScoredRun]) -> str:
    """``Judge: `NAME`.`` (with the runs of each when they differ), then the NOTE of every
    approximate judge (:func:`judge_note`, the line ``score`` prints)."""
    by: dict[tuple[str, str | None], list[str]] = {}
    for r in runs:
        by.setdefault((r.scoring.judge_name or "?", r.summary.approximation), []).append(r.label)
    if len(by) == 1:
        line = f"Judge: `{next(iter(by))[0]}`."
    else:
        line = "Judges: " + "; ".join(
            f"`{name}` ({', '.join(f'`{x}`' for x in labels)})" for (name, _), labels in by.items()
        )
    notes = [n for n in (judge_note(name, a) for name, a in by) if n]
    return "\n".join([line, *(f"NOTE: {n}" for n in notes)]) if notes else line


def _write_index(rep: Report, inputs: ReportInputs, pairing: dict[str, Any]) -> None:
    """report.json (runs, roles, pairs, skipped, options, files) and report.md."""
    roles = inputs.roles
    rep.meta = {
        "runs": [{**r.describe().model_dump(), "role": roles[r.label]} for r in inputs.runs],
        "pairs": [{"role": ro, "main": m.label, "control": c.label} for ro, m, c in inputs.pairs],
        "unpaired": pairing["unpaired"],
        "skipped": rep.skipped,
        "options": {
            **inputs.options.kwargs(),
            "tolerances_s": list(inputs.tolerances),
            "delays_s": list(inputs.delays),
        },
        "files": {k: [p.name for p in v] for k, v in rep.files.items()},
    }
    write_atomic(
        (rep.out / "report.json"), json.dumps(rep.meta, indent=2, ensure_ascii=False) + "\n"
    )
    head = "# interactscope report\n\nRuns: " + ", ".join(
        f"`{r.label}` ({roles[r.label]})" for r in inputs.runs
    )
    head += "\n\n" + _judge_lines(inputs.runs)
    figs = (
        "\n\n## Figures\n\n![score by tolerance](fig_scene_tolerance.png)\n\n"
        "![sequences](fig_sequences.png)\n"
    )
    skipped = "\n".join(f"- {s}" for s in rep.skipped)
    write_atomic(
        (rep.out / "report.md"),
        head
        + "\n\n"
        + "\n".join(rep.markdown)
        + figs
        + ("\n## Skipped\n\n" + skipped + "\n" if rep.skipped else ""),
    )


def build_report(
    runs: Sequence[str | Path],
    out: str | Path,
    *,
    options: BootstrapOptions | None = None,
    tolerances: Sequence[float] = TOLERANCES,
    delays: Sequence[float] = BLIND_FIRE_DELAYS,
    judge: str | None = None,
    beyond: bool = True,
    **bootstrap: Any,
) -> Report:
    """Write every table and figure the given scored runs allow into ``out``.

    Args:
        runs: scored run folders (``interactscope score``), any mix of main and control runs.
        options, bootstrap: bootstrap (and permutation) options, or their fields
            (``n_resamples=``, ``seed=``, ``confidence=``).
        tolerances: δ values (s) for the tolerance figure and the scene ablation.
        delays: d values (s) for the blind-fire control.
        judge: ``--judge`` for re-scoring at other tolerances (default: each run's own).
        beyond: also write the beyond-the-paper table (lenient allocation, latency-aware
            timing; output precision is always beside output volume).

    Raises:
        AnalysisError: a folder is not a scored run, or no runs.
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    scored, pairing = _load(runs)
    inputs = ReportInputs(
        scored,
        pairing["roles"],
        pairing["pairs"],
        opts,
        tuple(tolerances),
        tuple(delays),
        judge,
        out,
    )
    rep = Report(out)
    benches = sorted({str(r.fingerprint) for r in scored})
    if len(benches) > 1:
        rep.skip(
            f"note: the runs cover {len(benches)} benchmarks (fingerprints {', '.join(benches)}); "
            "rows of different benchmarks are not comparable"
        )
    _paper_tables(rep, scored, opts)
    mains = inputs.with_role("main")
    _sequence_figure(rep, mains, opts)
    for spec in registered():
        section = spec.reporter()
        if section is not None:
            section(inputs, rep)
    if beyond:
        _beyond(rep, mains, judge, opts)
    _write_index(rep, inputs, pairing)
    return rep
