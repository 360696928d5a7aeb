"""Scoring an EgoBench run folder: the deterministic scorer per variant over the run's episode
records, and the simulated user's health beside it (per-criterion pass rates over user turns
and the trajectory all-pass rate; docs/egobench.md, "Scoring a run")."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pydantic import BaseModel

from interactscope.core.files import write_atomic
from interactscope.core.text import plural
from interactscope.egobench.data import load_variant
from interactscope.egobench.logs import from_episode
from interactscope.egobench.profiles import run_profile
from interactscope.egobench.records import EpisodeRecord
from interactscope.egobench.run_folder import fingerprint, load_run
from interactscope.egobench.scorer import ScoreResult, score_log, write_score
from interactscope.egobench.settings import ScoreSettings
from interactscope.egobench.trials import pass_k
from interactscope.egobench.user_sim import CRITERIA

log = logging.getLogger(__name__)


class UserHealth(BaseModel):
    """Evaluator verdicts over a run: ``rates[criterion]`` = fraction of user turns passing it;
    ``all_pass`` = fraction of trajectories whose every turn passed all four criteria (only
    episodes with verdicts count; None when there are none, e.g. a scripted user)."""

    turns: int
    trajectories: int
    rates: dict[str, float | None]
    all_pass: float | None
    rewrites: int


def user_health(records: list[EpisodeRecord]) -> UserHealth:
    """:class:`UserHealth` of ``records``."""
    verdicts = [v for r in records for v in r.user_verdicts]
    judged = [r for r in records if r.user_verdicts]
    n = len(verdicts)
    rates = {c: (sum(getattr(v, c) for v in verdicts) / n if n else None) for c in CRITERIA}
    ok = sum(all(v.all_pass for v in r.user_verdicts) for r in judged)
    return UserHealth(
        turns=n,
        trajectories=len(judged),
        rates=rates,
        all_pass=ok / len(judged) if judged else None,
        rewrites=sum(v.rewrites for v in verdicts),
    )


class RunScore(BaseModel):
    """Scores of one run: one :class:`ScoreResult` per variant and the user's health."""

    mode: str
    results: dict[str, ScoreResult]
    health: UserHealth
    sees_pixels: dict[str, int]
    trials: int = 1
    pass_k: dict[int, dict] = {}
    """pass^k for k = 1..trials (:func:`interactscope.egobench.trials.pass_k`)."""
    gt_failures: dict[str, int] = {}
    """Variant -> ground-truth calls of its scored tasks that fail under the run's tool rules
    (:func:`~interactscope.egobench.scorer.gt_call_failures`); absent when none fail."""


def score_run(
    run: str | Path,
    out: str | Path | None = None,
    *,
    settings: ScoreSettings | None = None,
    data: str | Path | None = None,
) -> RunScore:
    """Score every variant of a run folder over the tasks the run selected; a selected task
    without an episode fails. Writes ``OUT/<variant>/tasks.csv`` + ``summary.json`` (as
    ``ego score``) and ``OUT/user_health.json``; OUT defaults to ``RUN/scores``.

    Raises:
        EgoRunError: not an EgoBench run folder. EgoBenchError: the data cannot be loaded."""
    manifest, records = load_run(run)
    out = Path(out) if out else Path(run) / "scores"
    data_dir = data or manifest.data["path"]
    results: dict[str, ScoreResult] = {}
    outcomes: dict[tuple[str, int], list[bool]] = {}
    gt_failures: dict[str, int] = {}
    for name, ids in manifest.tasks.items():
        variant = load_variant(data_dir, name)
        if fingerprint(variant) != manifest.data["variants"].get(name):
            log.warning("%s: the data of %s changed since the run", run, name)
        wanted = set(ids)
        variant = variant.model_copy(
            update={"tasks": [t for t in variant.tasks if t.task_id in wanted]}
        )
        # the run's own tool rules unless told otherwise: scored state == run-time state
        s = settings or run_profile(manifest.settings)
        s = s.model_copy(update={"log_alignment": "id"})  # episodes carry their task ids
        for k in range(1, manifest.trials + 1):
            logs = [from_episode(r) for r in records if r.variant == name and r.trial == k]
            res = score_log(logs, variant, settings=s, mode=manifest.mode)
            for t in res.tasks:
                outcomes.setdefault((name, t.task_id), []).append(bool(t.joint_succ))
            if k == 1:
                results[name] = res
                if failed := sum(t.gt_failed_calls for t in res.tasks):
                    gt_failures[name] = failed
            write_score(res, out / name / (f"trial-{k}" if k > 1 else ""))
    health = user_health(records)
    pixels = {
        "true": sum(r.sees_pixels is True for r in records),
        "false": sum(r.sees_pixels is not True for r in records),
    }
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(
        (out / "user_health.json"),
        json.dumps({**health.model_dump(), "sees_pixels": pixels}, indent=2) + "\n",
    )
    pk = pass_k(outcomes, manifest.trials) if outcomes else {}
    (out / "pass_k.json").write_text(
        json.dumps({"trials": manifest.trials, "pass_k": pk}, indent=2) + "\n", encoding="utf-8"
    )
    return RunScore(
        mode=manifest.mode,
        results=results,
        health=health,
        sees_pixels=pixels,
        trials=manifest.trials,
        pass_k=pk,
        gt_failures=gt_failures,
    )


def headline(score: RunScore) -> str:
    """One line: pooled JointSucc / MicroAcc / ToolSucc / ResultSucc over the run's variants,
    with the user's all-pass rate and how many episodes saw pixels."""
    tasks = [t for r in score.results.values() for t in r.tasks]
    n = len(tasks) or 1
    m, g = sum(t.matched for t in tasks), sum(t.total_gt for t in tasks)
    h = score.health
    health = f"user all-pass {h.all_pass:.3f}" if h.all_pass is not None else "user scripted"
    return (
        f"{plural(len(tasks), 'task')} ({score.mode}) | JointSucc {sum(t.joint_succ for t in tasks) / n:.3f}"
        f"  MicroAcc {m / g if g else 0:.3f} ({m}/{g})  ToolSucc "
        f"{sum(t.tool_succ for t in tasks) / n:.3f}  ResultSucc "
        f"{sum(t.result_succ for t in tasks) / n:.3f} | {health} | sees_pixels: "
        f"{score.sees_pixels['true']} yes, {score.sees_pixels['false']} no"
    )
