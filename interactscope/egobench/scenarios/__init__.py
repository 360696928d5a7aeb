"""The six EgoBench scenarios, each a :class:`ScenarioDef` (tables, seed loader, tools)."""

from __future__ import annotations

from interactscope.egobench.scenarios import (
    household,
    kitchen,
    order,
    restaurant,
    retail,
    warehouse,
)
from interactscope.egobench.scenarios.base import Ctx, ScenarioDef, ToolError

SCENARIO_DEFS: dict[str, ScenarioDef] = {
    m.SCENARIO.name: m.SCENARIO for m in (retail, kitchen, restaurant, warehouse, household, order)
}

__all__ = ["SCENARIO_DEFS", "Ctx", "ScenarioDef", "ToolError"]
