"""The deterministic EgoBench scorer: ToolSucc, ResultSucc, JointSucc, MicroAcc per task and
per log (docs/egobench.md, "Scoring")."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Self

import pandas as pd
from pydantic import BaseModel

from interactscope.core.files import write_atomic
from interactscope.egobench.data import EgoBenchError
from interactscope.egobench.env import Environment
from interactscope.egobench.errors import CLASSES, classify
from interactscope.egobench.logs import load_log, log_format
from interactscope.egobench.matching import (
    ParamComparer,
    _OfficialCompareCrash,
    clean_calls,
    match_calls,
    merge_items,
)
from interactscope.egobench.records import AgentLog, Task, ToolCall, Variant
from interactscope.egobench.scenarios import SCENARIO_DEFS
from interactscope.egobench.settings import ScoreSettings

TASK_COLUMNS = [
    "task_id",
    "matched",
    "total_gt",
    "tool_succ",
    "result_succ",
    "joint_succ",
    "error_class",
    "gt_hash",
    "agent_hash",
    "note",
]
PRINTED_COLUMNS = TASK_COLUMNS[: TASK_COLUMNS.index("error_class") + 1]
"""The per-task columns ``ego score`` prints (the state hashes and the note stay in tasks.csv)."""


class TaskScore(BaseModel):
    """One task's verdict; ``error_class`` is empty for a JointSucc task."""

    task_id: int
    matched: int
    total_gt: int
    tool_succ: bool
    result_succ: bool
    joint_succ: bool
    error_class: str = ""
    gt_hash: str = ""
    agent_hash: str = ""
    note: str = ""
    logged: bool = True
    gt_failed_calls: int = 0
    """GT calls that failed when replayed under the tool rules (not a ``tasks.csv`` column;
    see :func:`gt_call_failures`)."""


class Ratios(BaseModel):
    """The ratios of a set of tasks (fractions 0-1): ToolSucc, ResultSucc, JointSucc over
    ``n_tasks``; ``micro_acc`` = Σ matched / Σ total_gt (pooled)."""

    n_tasks: int
    tool_succ: float
    result_succ: float
    joint_succ: float
    micro_acc: float
    matched: int
    total_gt: int

    @classmethod
    def of(cls, tasks: list[TaskScore], **fields: Any) -> Self:
        """The ratios of ``tasks`` (0.0 for an empty list), plus ``fields`` of a subclass."""
        n = len(tasks)
        m, g = sum(t.matched for t in tasks), sum(t.total_gt for t in tasks)
        return cls(
            n_tasks=n,
            tool_succ=_ratio(sum(t.tool_succ for t in tasks), n),
            result_succ=_ratio(sum(t.result_succ for t in tasks), n),
            joint_succ=_ratio(sum(t.joint_succ for t in tasks), n),
            micro_acc=_ratio(m, g),
            matched=m,
            total_gt=g,
            **fields,
        )


class ReferenceView(Ratios):
    """The ratios the reference evaluator reports: over the tasks with a log entry only.
    Field order is the file's key order."""

    label: str = "reference evaluator: tasks without a log left out"


class _Variant(BaseModel):
    variant: str
    scenario: str
    mode: str | None


class ScoreSummary(Ratios, _Variant):
    """``scores/<variant>/summary.json``: the ratios over the tasks of one log and the settings that produced them.

    Keys in file order: ``variant``, ``scenario``, ``mode`` (the base listed last comes first),
    the :class:`Ratios`, then the fields below. ``reference_view`` repeats the ratios the way
    the reference evaluator computes them (tasks without a log entry left out)."""

    n_logged: int
    error_classes: dict[str, int]
    settings: dict[str, Any]
    reference_view: ReferenceView


class ScoreResult(BaseModel):
    summary: ScoreSummary
    tasks: list[TaskScore]

    def frame(self) -> pd.DataFrame:
        """tasks.csv as a DataFrame (columns :data:`TASK_COLUMNS`)."""
        return pd.DataFrame([t.model_dump() for t in self.tasks], columns=TASK_COLUMNS)


def _replay(
    variant: Variant, task: Task, calls: list[ToolCall], s: ScoreSettings
) -> tuple[str, int]:
    """(state hash, calls that failed) after ``calls`` on a fresh database, under the profile's
    tool rules (the same rules ``ego run`` executes with)."""
    failed = 0
    with Environment.from_variant(variant, task, rules=s.tool_rules()) as env:
        for c in calls:
            args = merge_items(c.arguments) if s.merge_before_replay else c.arguments
            failed += not env.call(c.name, args).ok
        return env.state_hash(), failed


def gt_call_failures(variant: Variant, settings: ScoreSettings | None = None) -> dict[int, int]:
    """Ground-truth calls that fail when replayed under ``settings``' tool rules, per task id
    (tasks with none are left out). A failed GT write leaves its effect out of the GT state, so
    ResultSucc then compares against a partial state (kitchen1 under ``ours``: 3 calls, an empty
    user id and two reads with a wrong key; 76 under ``kitchen_numeric_strings=reject``, which
    rejects the GT's quantities given as strings, ``"5"``; docs/egobench.md, equality rules).
    Scoring counts the same on each :attr:`TaskScore.gt_failed_calls`."""
    s = settings or ScoreSettings()
    out: dict[int, int] = {}
    for task in variant.tasks:
        _, failed = _replay(variant, task, clean_calls(task.ground_truth, variant.tools, s), s)
        if failed:
            out[task.task_id] = failed
    return out


def _align(logs: list[AgentLog], variant: Variant, s: ScoreSettings) -> dict[int, AgentLog]:
    """Log entries by task id: by their own id (``log_alignment=id``), or the i-th entry for the
    i-th task (``position``, the EgoLink 2026 evaluator; entries past the last task are left
    out, tasks past the last entry have none)."""
    if s.log_alignment == "position":
        return {
            t.task_id: e.model_copy(update={"task_id": t.task_id})
            for t, e in zip(variant.tasks, logs, strict=False)
        }
    return {e.task_id: e for e in logs}


def score_task(
    variant: Variant, task: Task, log: AgentLog | None, s: ScoreSettings, cmp: ParamComparer
) -> TaskScore:
    """Verdict on one task. A missing log scores 0 with note "no log entry". An exception while
    comparing is recorded in ``note`` and the task keeps its GT calls in the denominator."""
    total = len(task.ground_truth)
    logged = log is not None
    log = log or AgentLog(task_id=task.task_id)
    note = "" if logged else "no log entry"
    gt = clean_calls(task.ground_truth, variant.tools, s)
    agent = clean_calls(log.calls, variant.tools, s)
    try:
        pairs = match_calls(gt, agent, cmp, s.matching)
        matched = sum(p is not None for p in pairs)
    except _OfficialCompareCrash as exc:
        # compare_errors=official: the reference evaluator returns (0, 0, 0) for the task
        matched, total, note = 0, 0, f"reference evaluator's comparison fails: {exc}"
    except Exception as exc:  # noqa: BLE001 - recorded on the task, never shrinks the denominator
        matched, note = 0, f"matching failed: {type(exc).__name__}: {exc}"
    try:
        gt_hash, gt_failed = _replay(variant, task, gt, s)
        agent_hash, _ = _replay(variant, task, agent, s)
        result = gt_hash == agent_hash
    except Exception as exc:  # noqa: BLE001
        gt_hash = agent_hash = ""
        gt_failed = 0
        result, note = (
            False,
            (note + "; " if note else "") + f"replay failed: {type(exc).__name__}: {exc}",
        )
    tool = total > 0 and matched == total
    joint = tool and result
    cls = ""
    if not joint:
        cls, why = classify(
            task, log, variant_def(variant), matched, total, result, s.error_classes
        )
        note = note or why
    return TaskScore(
        task_id=task.task_id,
        matched=matched,
        total_gt=total,
        tool_succ=tool,
        result_succ=result,
        joint_succ=joint,
        error_class=cls,
        gt_hash=gt_hash,
        agent_hash=agent_hash,
        note=note,
        logged=logged,
        gt_failed_calls=gt_failed,
    )


def variant_def(variant: Variant):

    return SCENARIO_DEFS[variant.scenario]


def _ratio(n: float, d: float) -> float:
    return n / d if d else 0.0


def score_log(
    log: str | Path | list[AgentLog],
    variant: Variant,
    *,
    settings: ScoreSettings | None = None,
    mode: str | None = None,
) -> ScoreResult:
    """Score one log against one variant, aligning by task id (or, with
    ``log_alignment=position``, a reference-runner list by position; AgentLogs passed directly
    are aligned as the settings say, episode-record files always by id).

    Args:
        log: a log file (reference-runner JSON list or episode-record JSON lines) or AgentLogs.
        variant: from :func:`~interactscope.egobench.load_variant`.
        settings: equality rules (defaults: :class:`ScoreSettings`).
        mode: easy|hard|static when known (else taken from the file name or records).

    Returns:
        :class:`ScoreResult`: one :class:`TaskScore` per task of the variant, in task order,
        and the summary (fractions). With ``missing_log="fail"`` every task counts; with
        ``"skip"`` unlogged tasks are left out of the ratios (the reference).

    Raises:
        EgoBenchError: unreadable log (one line naming the file)."""
    s = settings or ScoreSettings()
    if isinstance(log, (str, Path)):
        logs, file_mode = load_log(log, s.accept_arguments_key)
        mode = mode or file_mode
        if log_format(log) == "episodes":
            # episode records carry their own task ids; list position means nothing there
            s = s.model_copy(update={"log_alignment": "id"})
    else:
        logs = list(log)
    for entry in logs:
        mode = mode or entry.mode
    by_id = _align(logs, variant, s)
    unknown = sorted({e.task_id for e in logs} - {t.task_id for t in variant.tasks})
    sdef = variant_def(variant)
    with Environment.from_variant(variant) as seed_env:
        cmp = ParamComparer(sdef, seed_env.conn, s)
        tasks = [score_task(variant, t, by_id.get(t.task_id), s, cmp) for t in variant.tasks]
    counted = [t for t in tasks if t.logged or s.missing_log == "fail"]
    logged = [t for t in tasks if t.logged]

    classes = Counter(t.error_class for t in counted if t.error_class)
    settings_dump = s.model_dump()
    if unknown:
        settings_dump["_log_task_ids_not_in_variant"] = unknown
    summary = ScoreSummary.of(
        counted,
        variant=variant.name,
        scenario=variant.scenario,
        mode=mode,
        n_logged=len(logged),
        error_classes={c: classes.get(c, 0) for c in CLASSES},
        settings=settings_dump,
        reference_view=ReferenceView.of(logged),
    )
    return ScoreResult(summary=summary, tasks=tasks)


def write_score(result: ScoreResult, out: str | Path) -> Path:
    """Write ``OUT/tasks.csv`` and ``OUT/summary.json``; returns OUT."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "tasks.csv", result.frame().to_csv(index=False))
    write_atomic(
        (out / "summary.json"),
        json.dumps(result.summary.model_dump(), indent=2, ensure_ascii=False) + "\n",
    )
    return out


def read_score(out: str | Path) -> tuple[ScoreSummary, pd.DataFrame]:
    """Read a folder written by :func:`write_score`; EgoBenchError naming the file otherwise."""
    out = Path(out)
    try:
        summary = ScoreSummary.model_validate_json(
            (out / "summary.json").read_text(encoding="utf-8")
        )
        frame = pd.read_csv(out / "tasks.csv", keep_default_na=False)
    except FileNotFoundError as exc:
        raise EgoBenchError(
            f"{exc.filename}: not found; run `interactscope ego score` first"
        ) from None
    except ValueError as exc:
        raise EgoBenchError(
            f"{out / 'summary.json'}: not a score summary ({str(exc).splitlines()[0]})"
        ) from None
    return summary, frame


def gt_log(variant: Variant) -> list[AgentLog]:
    """The ground truth of every task as a log (the replay that must score 1/1/1)."""
    return [AgentLog(task_id=t.task_id, calls=list(t.ground_truth)) for t in variant.tasks]
