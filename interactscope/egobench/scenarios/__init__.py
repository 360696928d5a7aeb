"""The six EgoBench scenarios, each a :class:`ScenarioDef` (tables, seed loader, tools)."""

from __future__ import annotations

from interactscope.core import registry as plugins
from interactscope.egobench.scenarios import (
    household,
    kitchen,
    order,
    restaurant,
    retail,
    warehouse,
)
from interactscope.egobench.scenarios.base import Ctx, ScenarioDef, ToolError

KIND = "scenarios"
for _m in (retail, kitchen, restaurant, warehouse, household, order):
    plugins.register(KIND, _m.SCENARIO.name, _m.SCENARIO)
SCENARIO_DEFS: dict[str, ScenarioDef] = plugins.table(KIND)
"""Scenario name -> definition (the ``scenarios`` table of :mod:`interactscope.core.registry`)."""

__all__ = ["SCENARIO_DEFS", "Ctx", "ScenarioDef", "ToolError"]
