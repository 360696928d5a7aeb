"""The EgoBench page of an ``ego run`` folder (``run.json`` + ``episodes.jsonl``): the run's
summary and scores per variant, and per task the dialogue, every tool call with its result, the
auditor verdicts (EgoInteract ledger), stop reason, error class and the final state diff against
the ground-truth state.

Scores come from the run's ``scores/`` when they cover the tasks the run selected, else from
:func:`interactscope.egobench.run_score.score_run` into a temporary folder (the run folder is
never written). The diff replays the task's GT calls on a fresh :class:`Environment` and the
episode's calls on another, with the scorer's argument rules, and compares ``env.state()``
table by table: rows only in one state, and the fields of a row that differ (list items keyed
by their name field, else by their whole content)."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from interactscope.egobench.data import EgoBenchError, load_variant
from interactscope.egobench.env import Environment
from interactscope.egobench.logs import from_episode
from interactscope.egobench.records import EpisodeRecord, Task, ToolCall, Variant
from interactscope.egobench.run_folder import EPISODES, EgoRunError, EgoRunManifest, load_run
from interactscope.egobench.run_score import score_run, user_health
from interactscope.egobench.scorer import TaskScore, read_score
from interactscope.egobench.settings import ScoreSettings
from interactscope.view.ego_model import (
    AuditVerdict,
    EgoCall,
    EgoPageData,
    EgoRunInfo,
    EgoTask,
    FieldChange,
    TableDiff,
    VariantScore,
)
from interactscope.view.model import isolate
from interactscope.view.runs import ViewError

__all__ = ["build_ego_comparison", "build_ego_page", "is_ego_run", "state_diff"]

NAME_KEYS = (
    "product_name", "name", "dish_name", "set_meal_name", "recipe_name", "ingredient_name",
    "equipment", "item_name",
)  # fmt: skip
"""Fields that name a list item (cart items, order lines, menu entries), in preference order."""


def is_ego_run(path: str | Path) -> bool:
    """A folder written by ``ego run`` (it holds ``episodes.jsonl``)."""
    return (Path(path) / EPISODES).is_file()


# --- state diff ------------------------------------------------------------------------------


def _item_key(gt: list[Any], agent: list[Any]) -> str | None:
    """The name field that identifies every item of both lists uniquely, if any."""
    items = gt + agent
    if not items or not all(isinstance(x, dict) for x in items):
        return None
    for k in NAME_KEYS:
        if all(k in x for x in items) and all(
            len({str(x[k]).lower() for x in side}) == len(side) for side in (gt, agent)
        ):
            return k
    return None


def _label(item: Any, key: str | None) -> str:
    if key is not None:
        return str(item[key]).lower()
    return json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _join(path: str, part: str, item: bool = False) -> str:
    if item:
        return f"{path}[{part}]"
    return f"{path}.{part}" if path else part


def _diff_lists(gt: list, agent: list, row: str, path: str, out: list[FieldChange]) -> None:
    key = _item_key(gt, agent)
    if key is None and not all(isinstance(x, dict) for x in gt + agent):
        if gt != agent:
            out.append(FieldChange(row=row, field=path, gt=gt, agent=agent))
        return
    g = Counter(_label(x, key) for x in gt) if key is None else None
    a = Counter(_label(x, key) for x in agent) if key is None else None
    if g is not None and a is not None:  # no name field: items compare whole
        for lab in g - a:
            out.append(
                FieldChange(
                    row=row, field=_join(path, lab, True), gt=json.loads(lab), missing="agent"
                )
            )
        for lab in a - g:
            out.append(
                FieldChange(
                    row=row, field=_join(path, lab, True), agent=json.loads(lab), missing="gt"
                )
            )
        return
    _diff_dicts(
        {_label(x, key): x for x in gt}, {_label(x, key): x for x in agent}, row, path, out, True
    )


def _diff_dicts(
    gt: dict, agent: dict, row: str, path: str, out: list[FieldChange], items: bool = False
) -> None:
    for k in list(gt) + [k for k in agent if k not in gt]:
        p = _join(path, str(k), items)
        if k not in agent:
            out.append(FieldChange(row=row, field=p, gt=gt[k], missing="agent"))
        elif k not in gt:
            out.append(FieldChange(row=row, field=p, agent=agent[k], missing="gt"))
        else:
            _diff_value(gt[k], agent[k], row, p, out)


def _diff_value(gt: Any, agent: Any, row: str, path: str, out: list[FieldChange]) -> None:
    if isinstance(gt, dict) and isinstance(agent, dict):
        _diff_dicts(gt, agent, row, path, out)
    elif isinstance(gt, list) and isinstance(agent, list):
        _diff_lists(gt, agent, row, path, out)
    elif gt != agent or isinstance(gt, bool) != isinstance(agent, bool):
        out.append(FieldChange(row=row, field=path, gt=gt, agent=agent))


def diff_states(gt: dict[str, Any], agent: dict[str, Any]) -> list[TableDiff]:
    """Table-by-table differences of two ``env.state()`` values; only tables that differ."""
    out: list[TableDiff] = []
    for table in list(gt) + [t for t in agent if t not in gt]:
        g, a = gt.get(table) or {}, agent.get(table) or {}
        d = TableDiff(table=table)
        if not (isinstance(g, dict) and isinstance(a, dict)):
            _diff_value(g, a, "", "", d.changed)
        else:
            d.only_gt = {k: v for k, v in g.items() if k not in a}
            d.only_agent = {k: v for k, v in a.items() if k not in g}
            for k in g:
                if k in a:
                    _diff_value(g[k], a[k], str(k), "", d.changed)
        if d.only_gt or d.only_agent or d.changed:
            out.append(d)
    return out


def _final_state(variant: Variant, task: Task, calls: list[ToolCall], s: ScoreSettings) -> dict:
    with Environment.from_variant(
        variant,
        task,
        rules=s,
    ) as env:
        for c in calls:
            env.call(c.name, c.arguments)
        return env.state()


def state_diff(
    variant: Variant, task: Task, calls: list[ToolCall], settings: ScoreSettings | None = None
) -> list[TableDiff]:
    """The state after ``calls`` against the state after the task's GT calls (each replayed on
    a fresh environment); empty when they agree."""
    s = settings or ScoreSettings()
    return diff_states(
        _final_state(variant, task, task.ground_truth, s), _final_state(variant, task, calls, s)
    )


# --- scores ----------------------------------------------------------------------------------


def _stored_scores(
    path: Path, manifest: EgoRunManifest
) -> tuple[dict[str, list[TaskScore]], dict[str, VariantScore], ScoreSettings] | None:
    """The run's ``scores/`` when it covers exactly the selected tasks with one settings."""
    tasks: dict[str, list[TaskScore]] = {}
    summaries: dict[str, VariantScore] = {}
    settings: list[dict[str, Any]] = []
    try:
        for name, ids in manifest.tasks.items():
            summary, frame = read_score(path / "scores" / name)
            rows = json.loads(frame.to_json(orient="records"))
            ts = [TaskScore(**{**r, "note": str(r.get("note") or "")}) for r in rows]
            if sorted(t.task_id for t in ts) != sorted(ids):
                return None
            tasks[name] = ts
            summaries[name] = VariantScore(
                **summary.model_dump(include=set(VariantScore.model_fields))
            )
            settings.append({k: v for k, v in summary.settings.items() if not k.startswith("_")})
        if any(s != settings[0] for s in settings):
            return None
        return tasks, summaries, ScoreSettings(**(settings[0] if settings else {}))
    except (EgoBenchError, ValidationError, ValueError, TypeError, KeyError):
        return None


def _scores(path: Path, manifest: EgoRunManifest, info: EgoRunInfo):
    stored = _stored_scores(path, manifest)
    if stored is not None:
        info.score_source = f"{path / 'scores'} (written by `interactscope ego score`)"
        return stored
    if (path / "scores").exists():
        info.warnings.append("scores/ does not match the run's tasks: scored again in memory")
    with tempfile.TemporaryDirectory() as tmp:
        rs = score_run(path, tmp)
    info.score_source = "scored by the viewer (score_run, default settings; RUN/scores not written)"
    tasks = {n: r.tasks for n, r in rs.results.items()}
    summaries = {
        n: VariantScore(**r.summary.model_dump(include=set(VariantScore.model_fields)))
        for n, r in rs.results.items()
    }
    return tasks, summaries, ScoreSettings()


def _pooled(scores: list[VariantScore], tasks: list[EgoTask]) -> VariantScore | None:
    if len(scores) < 2:
        return None
    n = len(tasks) or 1
    m, g = sum(t.matched for t in tasks), sum(t.total_gt for t in tasks)
    classes: Counter[str] = Counter()
    for s in scores:
        classes.update(s.error_classes)
    return VariantScore(
        variant="all",
        n_tasks=len(tasks),
        joint_succ=sum(t.joint_succ for t in tasks) / n,
        micro_acc=m / g if g else 0.0,
        tool_succ=sum(t.tool_succ for t in tasks) / n,
        result_succ=sum(t.result_succ for t in tasks) / n,
        matched=m,
        total_gt=g,
        error_classes=dict(classes),
    )


# --- tasks -----------------------------------------------------------------------------------


def _verdicts(ledger: dict[str, Any] | None) -> list[AuditVerdict]:
    out = []
    for e in (ledger or {}).get("entries", []) or []:
        if not isinstance(e, dict) or e.get("kind") != "verdict":
            continue
        prop = e.get("proposal") or {}
        out.append(
            AuditVerdict(
                seq=int(e.get("seq", 0)),
                turn=int(e.get("turn", 0)),
                attempt=int(e.get("attempt", 1)),
                verdict=str(e.get("verdict", "")),
                reason=str(e.get("reason") or ""),
                proposal=str(prop.get("kind", "")),
                calls=[str(c.get("name", "")) for c in prop.get("calls", []) or []],
                revised=e.get("revised"),
                unparseable=bool(e.get("unparseable", False)),
            )
        )
    return out


def _calls(rec: EpisodeRecord) -> list[EgoCall]:
    out = []
    for c in rec.calls:
        r = c.result
        out.append(
            EgoCall(
                turn=c.turn,
                name=c.call.name,
                arguments=c.call.arguments,
                ok=None if r is None else r.ok,
                output=None if r is None else r.output,
                error=None if r is None else r.error,
                error_kind=None if r is None else r.error_kind,
                ignored=[] if r is None else r.ignored,
                changed=False if r is None else r.changed,
                malformed=c.malformed,
            )
        )
    return out


_SCORE_FIELDS = {
    "joint_succ",
    "tool_succ",
    "result_succ",
    "matched",
    "total_gt",
    "error_class",
    "note",
}


def _task(
    variant: Variant, task: Task, score: TaskScore, rec: EpisodeRecord | None, s: ScoreSettings
) -> EgoTask:
    t = EgoTask(
        key=f"{variant.name}:{task.task_id}",
        variant=variant.name,
        task_id=task.task_id,
        instruction=task.instruction,
        present=rec is not None,
        **score.model_dump(include=_SCORE_FIELDS),
        gt_calls=[c.model_dump(mode="json") for c in task.ground_truth],
    )
    if rec is None:
        t.note = t.note or "no episode for this task"
        return t
    t.stop_reason, t.errors = rec.stop_reason, list(rec.errors)
    t.dialogue = [d.model_dump(mode="json") for d in rec.dialogue]
    t.calls = _calls(rec)
    t.has_ledger = rec.ledger is not None
    t.verdicts = _verdicts(rec.ledger)
    t.user_verdicts = [
        v.model_dump(mode="json") | {"all_pass": v.all_pass} for v in rec.user_verdicts
    ]
    t.input_tokens, t.output_tokens = rec.input_tokens, rec.output_tokens
    t.latency_s = rec.latency_s
    try:
        t.diff = state_diff(variant, task, from_episode(rec).calls, s)
    except Exception as exc:  # noqa: BLE001 - shown on the task, the page still renders
        t.diff_note = f"replay failed: {type(exc).__name__}: {exc}"
    return t


def _load(path: Path) -> tuple[EgoRunManifest, list[EpisodeRecord]]:
    try:
        return load_run(path)
    except EgoRunError as exc:
        raise ViewError(f"{exc}; give a folder made by `interactscope ego run`") from None
    except (ValueError, OSError) as exc:
        raise ViewError(f"{path}: unreadable EgoBench run folder ({exc})") from None


def build_ego_page(path: str | Path) -> EgoPageData:
    """The page of one ``ego run`` folder; tasks in the run's order (variant, then task id).

    Raises:
        ViewError: not an EgoBench run folder, or its data cannot be loaded."""
    path = Path(path)
    manifest, records = _load(path)
    info = EgoRunInfo(
        path=str(path),
        agent=manifest.agent_id,
        user=manifest.user_id,
        mode=manifest.mode,
        sees_pixels={
            "yes": sum(r.sees_pixels is True for r in records),
            "no": sum(r.sees_pixels is not True for r in records),
        },
        stop_reasons=dict(Counter(str(r.stop_reason) for r in records)),
        health=user_health(records).model_dump(),
    )
    try:
        scores, summaries, settings = _scores(path, manifest, info)
        variants = {n: load_variant(manifest.data["path"], n) for n in manifest.tasks}
    except (EgoBenchError, EgoRunError, KeyError) as exc:
        raise ViewError(f"{path}: cannot score the run ({exc})") from None
    info.score_settings = settings.model_dump()
    by_key = {(r.variant, r.task_id): r for r in records}
    tasks: list[EgoTask] = []
    for name, ids in manifest.tasks.items():
        v, by_id = variants[name], {t.task_id: t for t in scores[name]}
        for tid in ids:
            tasks.append(_task(v, v.task(tid), by_id[tid], by_key.get((name, tid)), settings))
    vs = [summaries[n] for n in manifest.tasks]
    return EgoPageData(
        title=f"{isolate(manifest.agent_id)} with user {isolate(manifest.user_id)} — EgoBench ({isolate(manifest.mode)})",
        run=info,
        variants=vs,
        overall=_pooled(vs, tasks),
        tasks=tasks,
    )


def build_ego_comparison(a: str | Path, b: str | Path) -> EgoPageData:
    """Two ``ego run`` folders side by side: run A's page with run B's summary and scores, each
    task of A with the same task of B beside it (``other``; B's tasks that A lacks are listed
    after A's), and the task keys B gained (JointSucc in B only) and lost.

    Raises:
        ViewError: as :func:`build_ego_page`, for either run."""
    pa, pb = build_ego_page(a), build_ego_page(b)
    by_key = {t.key: t for t in pb.tasks}
    keys = {t.key for t in pa.tasks}
    for t in pa.tasks:
        t.other = by_key.get(t.key)
    both = [t for t in pa.tasks if t.other is not None]
    extra = [
        t.model_copy(update={"present": False, "other": t}) for t in pb.tasks if t.key not in keys
    ]
    return pa.model_copy(
        update={
            "title": f"{pa.run.agent} vs {pb.run.agent} — EgoBench ({_modes(pa.run, pb.run)})",
            "tasks": pa.tasks + extra,
            "other": pb.run,
            "other_variants": pb.variants,
            "other_overall": pb.overall,
            "gained": [t.key for t in both if t.other.joint_succ and not t.joint_succ],
            "lost": [t.key for t in both if t.joint_succ and not t.other.joint_succ],
        }
    )


def _modes(a: Any, b: Any) -> str:
    """The modes of two compared runs for the title: once when equal (``easy``), else
    ``easy / hard``."""
    return a.mode if a.mode == b.mode else f"{a.mode} / {b.mode}"
