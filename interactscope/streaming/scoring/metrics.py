"""The metric table: every reported number of a streaming run, defined once.

Each :class:`Metric` is a ratio Σ numerator / Σ denominator over the rows of the cluster table
(:func:`interactscope.streaming.scoring.frames.cluster_table`, one row per (cluster, task)) of its
``tasks``; a balanced mean (Avg(6)) is the unweighted mean of its ``components``. From
:data:`METRICS` alone are derived:

* ``summary.json``'s ``metrics`` block (:func:`compute_metrics`; each metric's ``summary`` keys);
* the bootstrap inputs (:func:`metric_ratios`: per-cluster numerators and denominators);
* the compare / report / control rows (``name``, ``kind``, ``section``) and the paper-table
  columns (``display``, ``table``).

Formulas (docs/protocol.md, metrics): task score = Σ hits / Σ scored targets (``unjudged`` targets
leave both); T1 on-time = Σ on_time / Σ targets; T1 joint = Σ hits / Σ targets; T1 conditional =
Σ hits / Σ on_time; Avg(6) = unweighted mean of the six-task-mean task scores present; T8
timely recall = Σ hits / Σ scored; Complete T8-C = Σ complete / Σ episodes; output volume = Σ
non-silent responses / Σ probed minutes; output precision (beyond the paper) = Σ hits / Σ
responses. A ratio with a zero denominator is ``None`` (``null`` in JSON).

To find where a metric is computed, look up its name in :data:`METRICS` (e.g. ``"T1 joint"``).
The table is the registry kind ``metrics``: a plug-in adds a ratio by
``register("metrics", NAME, Metric(...))`` or the entry point group ``interactscope.metrics``
(:func:`metrics_table`; docs/architecture.md, "Add a plug-in").
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from interactscope.core import registry
from interactscope.core.errors import first_problem
from interactscope.core.text import plural
from interactscope.streaming.scoring.frames import (
    CLUSTER_COLUMNS,
    INTERACTION_COLUMNS,
    TARGET_COLUMNS,
    cluster_table,
    interactions_frame,
    targets_frame,
)
from interactscope.streaming.tasks import (
    ASSISTANCE_TASKS,
    EXPLICIT_TASKS,
    OUTCOMES,
    SIX_TASK_MEAN_TASKS,
    TASK_SPECS,
    TASKS,
)

__all__ = [
    "CLUSTER_COLUMNS",
    "COUNT_COLUMNS",
    "INTERACTION_COLUMNS",
    "METRICS",
    "TARGET_COLUMNS",
    "Metric",
    "cluster_table",
    "compute_metrics",
    "format_tables",
    "interactions_frame",
    "metric",
    "metric_ratios",
    "metrics_table",
    "present_metrics",
    "table_columns",
    "targets_frame",
]

COUNT_COLUMNS: tuple[str, ...] = tuple(CLUSTER_COLUMNS[2:])
"""The cluster-table columns a metric's ``numerator`` / ``denominator`` may name (the counts of
one (cluster, task) row; ``cluster`` and ``task`` are its labels)."""

Kind = Literal["percent", "rate"]
PaperTable = Literal["explicit", "assistance", "volume"]


class Metric(BaseModel):
    """One reported metric.

    Attributes:
        name: the row label everywhere (compare.csv, all_metrics.csv, control tables).
        display: the column header in the paper's tables (e.g. ``T1 Joint``).
        numerator, denominator: cluster-table columns (:data:`COUNT_COLUMNS`) summed over the
            rows of ``tasks``; default hits / scored targets.
        tasks: the tasks whose rows are summed (a metric exists when one of them is scored);
            default every task.
        kind: ``percent`` (a fraction, shown × 100; differences in pp) or ``rate`` (per minute).
        section: the group a compare row belongs to (default ``plug-in``: the built-in
            metrics all name theirs).
        table: the paper table it is a column of (``None``: not a column).
        components: a balanced mean over these metrics (numerator/denominator unused).
        denominator_divisor: divides the denominator (probed seconds → minutes: 60).
        positive_denominator_only: only rows with a positive denominator count (episodes).
        summary, summary_numerator, summary_denominator: dotted keys in ``summary.json``'s
            ``metrics`` that hold the ratio and its Σ numerator / Σ denominator.
        summary_always: written to ``summary.json`` even when no task of it was scored.
        reported: a row of compare/report tables (``False``: summary.json or a component only).
        paper: defined by the paper (``False``: beyond the paper, reported apart).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    display: str
    numerator: str = "hits"
    denominator: str = "scored"
    tasks: tuple[str, ...] = TASKS
    kind: Kind = "percent"
    section: str = "plug-in"
    table: PaperTable | None = None
    components: tuple[str, ...] = ()
    denominator_divisor: float = 1.0
    positive_denominator_only: bool = False
    summary: tuple[str, ...] = ()
    summary_numerator: tuple[str, ...] = ()
    summary_denominator: tuple[str, ...] = ()
    summary_always: bool = False
    reported: bool = True
    paper: bool = True


_EXPLICIT = "explicit (T1-T7)"
_ASSIST = "assistance (T8)"
_PANEL_LABEL = {"explicit": "T1–T7", "assistance": "T8"}


def _task_score(task: str) -> Metric:
    """Task score (T8: timely recall) = Σ hits / Σ scored targets of one task."""
    spec = TASK_SPECS[task]
    assist = spec.panel == "assistance"
    name = f"{task} steps" if spec.has_sequences else task
    paths = [f"tasks.{task}"] + ([f"T8.{task}"] if assist else [])
    return Metric(
        name=name,
        display=name,
        tasks=(task,),
        section=_ASSIST if assist else _EXPLICIT,
        table=None if task == "T1" else "assistance" if assist else "explicit",
        summary=(f"tasks.{task}.score",) + ((f"T8.{task}.recall",) if assist else ()),
        summary_numerator=tuple(f"{p}.hits" for p in paths),
        summary_denominator=tuple(f"{p}.scored" for p in paths),
        # T1's task score equals its joint accuracy; it is reported once, as "T1 joint".
        reported=task != "T1",
    )


def _rate(
    name: str, display: str, tasks: tuple[str, ...], key: str, ratio: str, panel: bool
) -> Metric:
    """Output volume = Σ responses / Σ probed minutes over ``tasks``, in ``summary.json`` at
    ``key.ratio`` (with ``key.responses``, ``key.probed_min``). A ``panel`` one (all tasks, one
    panel) is a paper-table column always written; a single task's is summary.json only."""
    return Metric(
        name=name,
        display=display,
        numerator="responses",
        denominator="probed_s",
        denominator_divisor=60.0,
        tasks=tasks,
        kind="rate",
        section="volume",
        table="volume" if panel else None,
        summary=(f"{key}.{ratio}",),
        summary_numerator=(f"{key}.responses",),
        summary_denominator=(f"{key}.probed_min",),
        summary_always=panel,
        reported=panel,
    )


def _task_volume(task: str) -> Metric:
    """Output volume of one task (responses per probed minute), summary.json only."""
    return _rate(
        f"{task} output volume", f"{task} per min", (task,), f"tasks.{task}", "responses_per_min",
        panel=False,
    )  # fmt: skip


def _panel(panel: str | None) -> tuple[tuple[str, ...], str, str]:
    """The tasks of ``panel`` (``None``: all), the metric-name suffix and the column label."""
    if panel is None:
        return TASKS, "", "all"
    return (
        (EXPLICIT_TASKS if panel == "explicit" else ASSISTANCE_TASKS),
        f" {panel}",
        _PANEL_LABEL[panel],
    )


def _volume(panel: str | None) -> Metric:
    """Output volume of a panel (``None``: every task), a column of the paper's volume table."""
    tasks, suffix, label = _panel(panel)
    key = "output_volume" + ("" if panel is None else f".{panel}")
    return _rate(f"Output volume{suffix}", f"per min ({label})", tasks, key, "per_min", panel=True)


def _precision(panel: str | None) -> Metric:
    """Output precision: matched outputs / non-silent outputs (each hit matches one response)."""
    tasks, suffix, label = _panel(panel)
    return Metric(
        name=f"Output precision{suffix}",
        display=f"precision % ({label})",
        numerator="hits",
        denominator="responses",
        tasks=tasks,
        section="beyond the paper",
        table="volume",
        paper=False,
    )


_T1_SPLIT = (
    # (name, display, numerator, denominator, summary key under T1.)
    ("T1 on-time", "T1 On-time", "on_time", "targets", "on_time"),
    ("T1 joint", "T1 Joint", "hits", "targets", "joint"),
    ("T1 conditional", "T1 Cond.", "hits", "on_time", "conditional"),
)


def _t1_metrics() -> list[Metric]:
    """T1 on-time / joint / conditional (the tool-call task's timing and content split); the two
    over all targets also carry their counts in ``summary.json``."""
    return [
        Metric(
            name=name,
            display=display,
            numerator=numerator,
            denominator=denominator,
            tasks=("T1",),
            section=_EXPLICIT,
            table="explicit",
            summary=(f"T1.{key}",),
            summary_numerator=(f"T1.{key}_count",) if denominator == "targets" else (),
            summary_denominator=("T1.targets",) if denominator == "targets" else (),
        )
        for name, display, numerator, denominator, key in _T1_SPLIT
    ]


def _build_table() -> tuple[Metric, ...]:
    head = _t1_metrics()
    explicit = [_task_score(t) for t in EXPLICIT_TASKS]
    six = Metric(
        name="Avg(6)",
        display="Avg(6)",
        tasks=SIX_TASK_MEAN_TASKS,
        components=tuple(m.name for m in explicit if m.tasks[0] in SIX_TASK_MEAN_TASKS),
        section=_EXPLICIT,
        table="explicit",
        summary=("six_task_mean",),
        summary_always=True,
    )
    assist = [_task_score(t) for t in ASSISTANCE_TASKS]
    complete = Metric(
        name="Complete T8-C",
        display="Complete T8-C",
        numerator="complete",
        denominator="episodes",
        positive_denominator_only=True,
        tasks=tuple(t for t in ASSISTANCE_TASKS if TASK_SPECS[t].has_sequences),
        section=_ASSIST,
        summary=("T8.complete_T8C.rate",),
        summary_numerator=("T8.complete_T8C.count",),
        summary_denominator=("T8.complete_T8C.n",),
    )
    overall = Metric(
        name="Overall",
        display="Overall",
        tasks=TASKS,
        section="overall",
        summary=("overall.score",),
        summary_numerator=("overall.hits",),
        summary_denominator=("overall.scored",),
        summary_always=True,
    )
    return (
        *head,
        *explicit,
        six,
        *assist,
        complete,
        overall,
        *(_volume(p) for p in (None, "explicit", "assistance")),
        *(_precision(p) for p in (None, "explicit", "assistance")),
        *(_task_volume(t) for t in TASKS),
    )


METRICS: tuple[Metric, ...] = _build_table()
"""Every built-in metric, in the order of compare and report rows (registered as kind
``metrics``; :func:`metrics_table` appends the plug-ins)."""

_BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}

PLUGIN_SUMMARY = "plugins"
"""Where a plug-in metric's numbers go in ``summary.json``'s ``metrics`` block:
``plugins.<name>.value`` (the ratio), ``.numerator`` and ``.denominator`` (the sums), unless it
names its own keys, which must lie under ``plugins.`` too (a plug-in never overwrites a paper
number)."""

_EGOBENCH = "egobench."
"""Names of kind ``metrics`` that are EgoBench's (``interactscope.egobench.metrics.EGO_PREFIX``;
not imported: the streaming scorer needs nothing of EgoBench)."""

for _m in METRICS:
    registry.register("metrics", _m.name, _m)


def _columns(m: Metric) -> list[tuple[str, str]]:
    return [("numerator", m.numerator), ("denominator", m.denominator)]


def _plugin(name: str, target: Any) -> Metric:
    """A registered plug-in target as a :class:`Metric` named ``name``: a ``Metric``, a mapping
    of its fields, or a callable returning either. Raises ``PluginError`` (one line) on
    anything else, on a numerator or denominator not in :data:`COUNT_COLUMNS`, or on
    ``summary`` keys outside :data:`PLUGIN_SUMMARY`."""
    obj = target() if callable(target) and not isinstance(target, Metric) else target
    try:
        m = obj if isinstance(obj, Metric) else Metric(**{"name": name, **dict(obj)})
    except (TypeError, ValueError) as exc:
        raise registry.PluginError(
            f"metric {name!r}: not a Metric ({first_problem(exc)}); see docs/architecture.md, "
            "'A metric'"
        ) from None
    if m.name in _BY_NAME:
        raise registry.PluginError(
            f"metric {name!r}: named {m.name!r}, a built-in metric (the built-in wins); rename it"
        )
    bad = [f"{f} {c!r}" for f, c in _columns(m) if c not in COUNT_COLUMNS]
    if bad:
        raise registry.PluginError(
            f"metric {name!r}: {' and '.join(bad)} is not a cluster-table column; valid: "
            f"{', '.join(COUNT_COLUMNS)}"
        )
    if not m.summary:
        key = f"{PLUGIN_SUMMARY}.{m.name}"
        m = m.model_copy(
            update={
                "summary": (f"{key}.value",),
                "summary_numerator": (f"{key}.numerator",),
                "summary_denominator": (f"{key}.denominator",),
            }
        )
    paths = (*m.summary, *m.summary_numerator, *m.summary_denominator)
    if m.components or any(not p.startswith(PLUGIN_SUMMARY + ".") for p in paths):
        raise registry.PluginError(
            f"metric {name!r}: a plug-in metric is a ratio written under "
            f"'{PLUGIN_SUMMARY}.' in summary.json (no components); got {', '.join(paths)}"
        )
    return m


def metrics_table() -> tuple[Metric, ...]:
    """Every metric: :data:`METRICS` in its order, then the plug-ins (kind ``metrics``, by
    :func:`~interactscope.core.registry.register` or the entry point group
    ``interactscope.metrics``; names starting ``egobench.`` are EgoBench's,
    :func:`interactscope.egobench.metrics.ego_metrics`) sorted by name. A plug-in cannot
    replace a built-in metric: one whose ``Metric.name`` is a built-in's is skipped with a
    warning. Without plug-ins this is
    :data:`METRICS` itself, so every output keeps its bytes.

    A plug-in that cannot be imported or is not a metric is left out with a one-line
    :class:`~interactscope.core.registry.PluginWarning` naming it (the command goes on).
    """
    extra = [
        n for n in registry.names("metrics") if n not in _BY_NAME and not n.startswith(_EGOBENCH)
    ]
    for name, m in _BY_NAME.items():
        if registry.table("metrics").get(name, m) is not m:  # register() over a paper number
            registry.warn(f"metric {name!r}: a built-in metric (it wins); register() ignored")
    if not extra:
        return METRICS
    plugins: dict[str, Metric] = {}
    for m in registry.load_each("metrics", extra, _plugin, what="metric"):
        if m.name in plugins:  # two plug-ins of one Metric.name: the first by name is kept
            registry.warn(f"metric {m.name!r}: a second plug-in of that name; skipped")
        plugins.setdefault(m.name, m)
    return METRICS + tuple(plugins.values())


def metric(name: str) -> Metric:
    """The :class:`Metric` called ``name`` (built-in or plug-in).

    Raises:
        ValueError: unknown name (the message lists the reported ones).
    """
    if name in _BY_NAME:
        return _BY_NAME[name]
    table = metrics_table()
    for m in table:
        if m.name == name:
            return m
    known = ", ".join(m.name for m in table if m.reported)
    raise ValueError(f"unknown metric {name!r}; known: {known}")


def table_columns(table: PaperTable) -> list[Metric]:
    """The metrics that are columns of one paper table, in order."""
    return [m for m in metrics_table() if m.table == table]


# ------------------------------------------------------------------ evaluation on cluster sums


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else float(num) / float(den)


def _rows(clusters: pd.DataFrame, m: Metric) -> pd.DataFrame:
    rows = clusters[clusters["task"].isin(m.tasks)]
    if m.positive_denominator_only:
        rows = rows[rows[m.denominator] > 0]
    return rows


def present_metrics(clusters: pd.DataFrame, *, beyond: bool = True) -> list[Metric]:
    """The reported metrics defined for this cluster table (one of their tasks scored)."""
    present = set(clusters["task"])
    out = []
    for m in metrics_table():
        if not m.reported or (not beyond and not m.paper) or not present & set(m.tasks):
            continue
        if m.positive_denominator_only and _rows(clusters, m).empty:
            continue
        out.append(m)
    return out


RatioArrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def _arrays(clusters: pd.DataFrame, m: Metric) -> RatioArrays:
    rows = _rows(clusters, m)
    return (
        rows[m.numerator].to_numpy(dtype=np.float64),
        rows[m.denominator].to_numpy(dtype=np.float64) / m.denominator_divisor,
        rows["cluster"].astype(str).to_numpy(),
    )


def metric_ratios(
    clusters: pd.DataFrame, *, beyond: bool = True
) -> dict[str, RatioArrays | dict[str, RatioArrays]]:
    """Bootstrap inputs of every reported metric present in a cluster table.

    Returns:
        metric name → ``(numerators, denominators, cluster labels)`` arrays, one entry per
        (cluster, task) row, in :data:`METRICS` order; a balanced mean (Avg(6)) maps each of its
        present component tasks → arrays. ``beyond=False`` leaves out the metrics beyond the
        paper. The input of :func:`interactscope.stats.bootstrap_metrics`.
    """
    present = set(clusters["task"])
    out: dict[str, Any] = {}
    for m in present_metrics(clusters, beyond=beyond):
        if m.components:
            parts = [_BY_NAME[c] for c in m.components]
            out[m.name] = {p.tasks[0]: _arrays(clusters, p) for p in parts if p.tasks[0] in present}
        else:
            out[m.name] = _arrays(clusters, m)
    return out


def _put(tree: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for p in parents:
        tree = tree.setdefault(p, {})
    tree[leaf] = value


def _count(value: float, column: str) -> int | float:
    return float(value) if column == "probed_s" else int(value)


def _task_breakdown(by_task: pd.DataFrame, task: str) -> dict[str, Any]:
    """Counts of one task that are not ratios: targets (those in the score: ``infra_error`` ones
    are only counted in the breakdown), interactions, failure breakdown."""
    r = by_task.loc[task]
    failures = {o: int(r["hits" if o == "hit" else o]) for o in OUTCOMES}
    if not failures["infra_error"]:  # written only when present: clean runs keep their bytes
        del failures["infra_error"]
    return {
        "targets": int(r["targets"]),
        "interactions": int(r["interactions"]),
        "failures": failures,
    }


def _summarise_metric(out: dict[str, Any], by_task: pd.DataFrame, m: Metric) -> None:
    tasks = [t for t in m.tasks if t in by_task.index]
    if not m.summary or (not tasks and not m.summary_always):
        return
    if m.components:
        parts = [_BY_NAME[c] for c in m.components]
        scores = [(p.tasks[0], _sum_ratio(by_task, p)) for p in parts if p.tasks[0] in tasks]
        used = [(t, s) for t, s in scores if s is not None]
        _put(out, m.summary[0], sum(s for _, s in used) / len(used) if used else None)
        _put(out, m.summary[0] + "_tasks", [t for t, _ in used])
        return
    num, den = _sums(by_task, m)
    for path in m.summary:
        _put(out, path, _ratio(num, den))
    for path in m.summary_numerator:
        _put(out, path, _count(num, m.numerator))
    for path in m.summary_denominator:
        _put(out, path, _count(den, m.denominator))


def _sums(by_task: pd.DataFrame, m: Metric) -> tuple[float, float]:
    rows = by_task.loc[[t for t in m.tasks if t in by_task.index]]
    num = float(rows[m.numerator].sum()) if len(rows) else 0.0
    den = float(rows[m.denominator].sum()) / m.denominator_divisor if len(rows) else 0.0
    return num, den


def _sum_ratio(by_task: pd.DataFrame, m: Metric) -> float | None:
    return _ratio(*_sums(by_task, m))


def compute_metrics(clusters: pd.DataFrame) -> dict[str, Any]:
    """``summary.json``'s ``metrics`` block from a cluster table, every value from :data:`METRICS`.

    Returns a nested dict: ``tasks`` (per task: counts, ``score``, failure breakdown, volume),
    ``T1`` (on-time / joint / conditional), ``six_task_mean`` (+ the tasks it averaged),
    ``T8`` (recall per subgroup, ``complete_T8C`` count of n), ``overall``, ``output_volume``
    and ``infrastructure_errors``. Recomputing it from a resampled cluster table is what a
    bootstrap does.
    """
    by_task = clusters.groupby("task", sort=True)[CLUSTER_COLUMNS[2:]].sum()
    by_task = by_task.loc[[t for t in TASKS if t in by_task.index]]
    out: dict[str, Any] = {
        "tasks": {t: _task_breakdown(by_task, t) for t in by_task.index},
        "T8": {},
    }
    for m in metrics_table():
        _summarise_metric(out, by_task, m)
    total = by_task.sum()
    out["overall"]["targets"] = int(total.get("targets", 0))
    out["overall"]["unjudged"] = int(total.get("unjudged", 0))
    if int(total.get("infra_error", 0)):  # only when present: clean runs keep their bytes
        out["overall"]["infra_error"] = int(total["infra_error"])
    out["infrastructure_errors"] = int(total.get("infrastructure_errors", 0))
    return out


# ------------------------------------------------------------------ the paper's layout as text


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100.0 * x:.2f}"


def _get(tree: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def _paper_row(metrics: dict[str, Any], table: PaperTable, model: str) -> dict[str, str]:
    return {"Model": model} | {
        m.display: _pct(_get(metrics, m.summary[0]) if m.summary else None)
        for m in table_columns(table)
    }


def format_tables(metrics: dict[str, Any], *, model: str = "run", judge: str = "") -> str:
    """The paper's layout as text: the explicit-request table (T1 on-time / joint / conditional,
    T2–T7, Avg(6)), the assistance table (T8-A, T8-B, T8-C steps, Complete T8-C as count/n),
    the failure breakdown and the output volume. Percentages with two decimals; ``—`` where a
    task has no scored target. ``metrics``: the output of :func:`compute_metrics`."""
    tasks = metrics.get("tasks", {})
    t2 = pd.DataFrame([_paper_row(metrics, "explicit", model)])
    comp = metrics.get("T8", {}).get("complete_T8C")
    t3 = pd.DataFrame(
        [
            _paper_row(metrics, "assistance", model)
            | {metric("Complete T8-C").display: f"{comp['count']}/{comp['n']}" if comp else "—"}
        ]
    )
    present = [o for o in OUTCOMES if any(o in tasks[t]["failures"] for t in tasks)]
    fail = pd.DataFrame(
        [
            {"task": t, **{o: tasks[t]["failures"].get(o, 0) for o in present}}
            # every target of the task, infra_error ones included (they leave the scores only)
            | {"targets": tasks[t]["targets"] + tasks[t]["failures"].get("infra_error", 0)}
            for t in tasks
        ]
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
        f"Output volume: {plural(vol.get('responses', 0), 'non-silent response')} over "
        f"{vol.get('probed_min', 0.0):.2f} probed min = "
        + ("—" if vol.get("per_min") is None else f"{vol['per_min']:.2f}/min"),
    ]
    return "\n".join(lines)
