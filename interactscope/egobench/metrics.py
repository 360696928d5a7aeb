"""The EgoBench metric table, registered as kind ``metrics`` under ``egobench.NAME``.

Each :class:`EgoMetric` is computed over the task rows of ``tasks.csv`` (one row per task):
Σ ``numerator`` / Σ ``denominator`` (a pooled ratio, e.g. MicroAcc = Σ matched / Σ total_gt)
or, with no denominator, the mean of ``numerator`` over the tasks (JointSucc = mean of the 0/1
``joint_succ``). Formulas: docs/egobench.md (scoring; Wind-Flipped/EgoBench's evaluator).
``ego report`` reads its columns and bootstrap inputs from :func:`ego_metrics`; a plug-in adds
a column with ``register("metrics", "egobench.NAME", EgoMetric(...))`` or the entry point
group ``interactscope.metrics`` with a name that starts with ``egobench.``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from interactscope.core import registry
from interactscope.core.errors import first_problem

__all__ = ["EGO_METRICS", "EGO_PREFIX", "TASK_COLUMNS", "EgoMetric", "ego_metrics"]

EGO_PREFIX = "egobench."
"""The registry names of kind ``metrics`` that are EgoBench metrics (the streaming table,
:func:`interactscope.streaming.scoring.metrics.metrics_table`, leaves them out)."""

TASK_COLUMNS = ("tool_succ", "result_succ", "joint_succ", "matched", "total_gt")
"""The numeric columns of ``tasks.csv`` a metric can sum (booleans count as 0/1)."""


class EgoMetric(BaseModel):
    """One EgoBench report column.

    Attributes:
        name: the column header (``JointSucc``); the registry name is ``egobench.`` + name.
        numerator: a :data:`TASK_COLUMNS` column summed over the tasks.
        denominator: a column summed likewise; ``None``: the number of tasks (a mean).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    numerator: str
    denominator: str | None = None


EGO_METRICS: tuple[EgoMetric, ...] = (
    EgoMetric(name="JointSucc", numerator="joint_succ"),
    EgoMetric(name="MicroAcc", numerator="matched", denominator="total_gt"),
    EgoMetric(name="ToolSucc", numerator="tool_succ"),
    EgoMetric(name="ResultSucc", numerator="result_succ"),
)
"""The paper's four metrics, in the report's column order."""

_BUILTIN = {EGO_PREFIX + m.name: m for m in EGO_METRICS}
for _name, _m in _BUILTIN.items():
    registry.register("metrics", _name, _m)


def _plugin(name: str, target: Any) -> EgoMetric:
    obj = target() if callable(target) and not isinstance(target, EgoMetric) else target
    try:
        m = obj if isinstance(obj, EgoMetric) else EgoMetric(**{"name": name, **dict(obj)})
    except (TypeError, ValueError) as exc:
        raise registry.PluginError(
            f"metric {name!r}: not an EgoMetric ({first_problem(exc)})"
        ) from None
    if EGO_PREFIX + m.name in _BUILTIN:
        raise registry.PluginError(
            f"metric {name!r}: named {m.name!r}, a built-in metric (the built-in wins); rename it"
        )
    bad = [c for c in (m.numerator, m.denominator) if c is not None and c not in TASK_COLUMNS]
    if bad:
        raise registry.PluginError(
            f"metric {name!r}: {', '.join(bad)} is not a tasks.csv column; "
            f"valid: {', '.join(TASK_COLUMNS)}"
        )
    return m


def ego_metrics() -> tuple[EgoMetric, ...]:
    """:data:`EGO_METRICS`, then the plug-ins (``egobench.*`` names of kind ``metrics``) by
    name; a plug-in of a built-in name is ignored (the built-in wins).

    A plug-in that cannot be imported, is not a metric or names no column is left out with a
    one-line :class:`~interactscope.core.registry.PluginWarning` naming it.
    """
    extra = [n for n in registry.names("metrics") if n.startswith(EGO_PREFIX) and n not in _BUILTIN]
    plugins = registry.load_each(
        "metrics", extra, lambda n, target: _plugin(n[len(EGO_PREFIX) :], target), what="metric"
    )
    return EGO_METRICS + tuple(plugins)
