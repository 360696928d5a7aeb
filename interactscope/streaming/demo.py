"""``interactscope demo``: a panel of models on the bundled demo benchmark, one leaderboard.

The panel shows the evaluator discriminating: ``oracle`` (a perfect model), ``blind-fire`` (the
timing-prior control: one answer at q + delay whatever the scene), ``change-detector`` (the
signal-driven control: answers at visual change points and audio onsets of the causal prefix),
``silent`` (never answers) and
the CPU default model (``cascade``: ASR transcript + SmolLM2-135M, which sees no pixels). The
baselines are instant; the CPU model runs on the first ``cpu_limit`` interactions only (recorded
in its ``run.json`` as ``interaction_ids``) so the whole demo stays within minutes on 2 cores.

Flow: collect each run -> score it (``score_run``; environment interactions also by
``write_environment_scores``) -> the report (``build_report``) -> the leaderboard, read back from
the report's ``all_metrics.csv`` (plus the environment columns, beyond the paper, when the
benchmark declares environments) -> the viewer page of the panel.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from interactscope.core.text import one_decimal
from interactscope.streaming.adapters.registry import load_model_config
from interactscope.streaming.analysis.report import build_report
from interactscope.streaming.collect import run_collect
from interactscope.streaming.environments.scores import (
    EnvTotals,
    read_environment_scores,
    write_environment_scores,
)
from interactscope.streaming.judges import make_judge
from interactscope.streaming.judges.base import judge_note
from interactscope.streaming.runlog import RunFolder
from interactscope.streaming.scoring.run import score_run
from interactscope.view import ViewSettings, write_view

__all__ = ["DemoResult", "DemoSettings", "leaderboard", "run_panel"]

log = logging.getLogger(__name__)

BASELINES: tuple[str, ...] = ("oracle", "blind-fire", "change-detector", "silent")
LEADERBOARD_METRICS: tuple[tuple[str, str], ...] = (
    ("Overall", "Overall %"),
    ("Avg(6)", "Avg(6) %"),
    ("T1 joint", "T1 joint %"),
    ("T8-A", "T8-A %"),
    ("T8-B", "T8-B %"),
)
# beyond the paper (docs/protocol.md#environments): shown only when a run has such interactions
ENV_COLUMNS: tuple[str, ...] = ("T1 time-call", "state correct", "action precision")


class DemoSettings(BaseModel):
    """Settings of the panel demo.

    Attributes:
        models: the baseline models (every interaction each).
        cpu_model: the CPU default model, run on the first ``cpu_limit`` interactions
            (``None``: leave it out).
        cpu_limit: interactions given to the CPU model (benchmark order; ``None``: all).
        cpu_decision: ``adapter.decision`` of the CPU model when its backend is ``cascade``
            (``two_step``: a yes/no "speak now?" step first, so it can stay silent; recorded in
            its ``run.json``); other backends are left as their configs say.
        judge: ``--judge`` for T2–T8 (embedding and lexical are offline approximations).
        resamples: bootstrap resamples B of the report's intervals.
    """

    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(default_factory=lambda: list(BASELINES))
    cpu_model: str | None = "cascade"
    cpu_limit: int | None = Field(4, ge=1)
    cpu_decision: Literal["direct", "two_step"] = "two_step"
    judge: str = "embedding"
    resamples: int = Field(10_000, ge=100)
    cpu_progress: bool = True
    """A progress bar (stderr) while the CPU model collects, the demo's longest step."""


class DemoResult(BaseModel):
    """Where the demo wrote things, and the leaderboard it printed."""

    runs: dict[str, Path]
    report: Path
    view: Path
    leaderboard: str
    seconds: dict[str, float]
    judge_note: str | None = None
    """:func:`~interactscope.streaming.judges.base.judge_note` of the panel's judge (``None``:
    an exact judge)."""
    environment: dict[str, EnvTotals | None] = Field(default_factory=dict)
    """Per run, the environment columns' totals (``None``: it covers no environment
    interaction)."""


def _cell(row: pd.Series | None) -> str:
    if row is None or pd.isna(row["estimate"]):
        return "—"
    est, low, high = (one_decimal(row[k]) for k in ("estimate", "low", "high"))
    return f"{est} [{low}, {high}]"


def leaderboard(
    all_metrics: pd.DataFrame,
    interactions: Sequence[str],
    environment: Sequence[EnvTotals | None] = (),
) -> str:
    """One Markdown table: a row per run, the headline metrics with 95 % intervals.

    Args:
        all_metrics: the report's ``all_metrics.csv`` (run, metric, estimate, low, high, ...;
            percent for scores, responses/min for volume), runs in panel order.
        interactions: per run, in the same order, "n of N" interactions it covers.
        environment: per run, in the same order, the totals of its environment interactions
            (``environment_scores.json``; ``None``: none covered). When any run has them, the
            columns ``T1 time-call``, ``state correct`` and ``action precision`` (percent and
            the counts, no interval: ``EnvTotals.cells``; "—" for a run without) come before
            responses/min.
    """
    rows = []
    groups = list(all_metrics.groupby("run", sort=False))
    cover = list(interactions) if len(interactions) == len(groups) else [""] * len(groups)
    env = list(environment) if len(environment) == len(groups) else [None] * len(groups)
    show_env = any(e is not None for e in env)
    for (run, sub), n, e in zip(groups, cover, env, strict=True):
        by = {str(r["metric"]): r for _, r in sub.iterrows()}
        row = {"model": run, "interactions": n}
        for metric, title in LEADERBOARD_METRICS:
            row[title] = _cell(by.get(metric))
        if show_env:
            row.update(e.cells() if e is not None else dict.fromkeys(ENV_COLUMNS, "—"))
        vol = by.get("Output volume")
        row["responses/min"] = "—" if vol is None else f"{vol['estimate']:.1f}"
        rows.append(row)
    return pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True)


def _collect(
    name: str,
    bench: Path,
    out: Path,
    limit: int | None,
    command: list[str],
    overrides: dict[str, Any] | None = None,
    progress: bool = False,
) -> None:
    summary = run_collect(model=name, bench=bench, out=out, limit=limit, command=command,
                          overrides=overrides, progress=progress)  # fmt: skip
    log.info("%s: %s", out, summary.line())


def run_panel(
    bench: str | Path,
    out: str | Path,
    settings: DemoSettings | None = None,
    *,
    command: Sequence[str] = (),
    echo: Callable[[str], None] = print,
) -> DemoResult:
    """Collect, score and report the panel on ``bench`` under ``out``.

    Writes ``out/<model>/`` (one run folder each), ``out/report/`` (tables and figures) and
    ``out/view.html`` (the viewer page of the panel).

    Raises:
        interactscope.streaming.collect.CollectError: a run cannot be collected (unknown model, ...).
        interactscope.streaming.analysis.errors.CompareError: the report cannot be built.
        interactscope.streaming.judges.JudgeError: the judge is unavailable.
    """

    s = settings or DemoSettings()
    judge = make_judge(s.judge)  # loaded once for the panel
    bench, out = Path(bench), Path(out)
    plan = [(m, None, None, False) for m in s.models]
    if s.cpu_model:  # the longest step: a progress bar on stderr (the baselines are instant)
        plan.append((s.cpu_model, s.cpu_limit, _cpu_overrides(s.cpu_model, s), s.cpu_progress))
    runs: dict[str, Path] = {}
    envs: dict[str, EnvTotals | None] = {}
    seconds: dict[str, float] = {}
    for name, limit, over, bar in plan:
        t0 = time.perf_counter()
        share = "" if limit is None else f" (first {limit} interactions: its share is capped)"
        echo(f"collect {name}{share} ...")
        runs[name] = out / name
        _collect(name, bench, runs[name], limit, list(command), over, progress=bar)
        score_run(runs[name], judge=judge)
        envs[name] = _environment_totals(runs[name])
        seconds[name] = time.perf_counter() - t0
    t0 = time.perf_counter()
    rep = build_report(list(runs.values()), out / "report", n_resamples=s.resamples)
    seconds["report"] = time.perf_counter() - t0
    metrics = pd.read_csv(rep.out / "all_metrics.csv")
    table = leaderboard(metrics, _coverage(runs), list(envs.values()))
    t0 = time.perf_counter()
    view = write_view(list(runs.values()), out / "view.html", ViewSettings(resamples=s.resamples))
    seconds["view"] = time.perf_counter() - t0
    return DemoResult(runs=runs, report=rep.out / "report.md", view=view, leaderboard=table,
                      seconds=seconds, environment=envs,
                      judge_note=judge_note(judge.name, judge.approximation))  # fmt: skip


def _environment_totals(run: Path) -> EnvTotals | None:
    """Score the run's environment interactions (``RUN/scores/environment_scores.json``, as
    ``interactscope score`` does); ``None`` when the benchmark declares no environment or the
    run covers none of its environment interactions."""
    done = write_environment_scores(run, run / "scores")
    if done is None:
        return None
    doc = read_environment_scores(done[0])
    return doc.totals if doc.interactions else None


def _cpu_overrides(name: str, s: DemoSettings) -> dict[str, Any] | None:
    """``adapter.decision`` for the CPU model when its backend is ``cascade``, else None."""

    try:
        backend = load_model_config(name)[1].get("backend")
    except Exception:  # noqa: BLE001 - run_collect reports a bad model name
        return None
    return {"adapter.decision": s.cpu_decision} if backend == "cascade" else None


def _coverage(runs: dict[str, Path]) -> list[str]:

    out = []
    for path in runs.values():
        m = RunFolder(path).manifest
        out.append(f"{len(m.interaction_ids or [])} of {m.benchmark.n_interactions}")
    return out
