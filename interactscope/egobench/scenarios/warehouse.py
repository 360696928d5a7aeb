"""Warehouse: equipment records and per-user equipment action lists
(tools/warehouse_tools.json). Names match exactly (case-sensitive), as the schema says."""

from __future__ import annotations

import re
from typing import Any

from interactscope.egobench.scenarios import actionlists
from interactscope.egobench.scenarios.base import (
    Ctx,
    ToolError,
    day_range,
    nonempty,
    parse_day,
    tool_table,
)

CATEGORIES = frozenset(
    {
        "manual_equipment",
        "power_equipment",
        "measuring_and_testing_equipment",
        "lifting_and_moving_equipment",
        "access_equipment",
        "safety_equipment",
        "cleaning_equipment",
        "storage_equipment",
        "consumable",
        "other",
    }
)
LOCATIONS = frozenset(
    {
        "dry_equipment_cabinet",
        "locked_equipment_cabinet",
        "wall_rack",
        "pegboard",
        "drawer_unit",
        "parts_bin",
        "shelving_unit",
        "floor_storage_area",
        "charging_station",
        "safety_equipment_cabinet",
        "chemical_storage_cabinet",
        "outdoor_storage_shed",
    }
)
MAINTENANCE = frozenset({"clean", "inspect", "lubricate", "calibrate", "sharpen", "condition"})
ACTIONS = MAINTENANCE | {"replace", "repair", "relocate", "dispose"}


def _prescribed(rec: dict[str, Any], action: str) -> None:
    """A maintenance action must be one the equipment's instructions prescribe."""
    text = rec["maintenance_and_usage_instructions"].lower()
    if action in MAINTENANCE and not re.search(rf"\b{action} every \d+ months?\b", text):
        raise ToolError(f"'{action}' is not a maintenance action prescribed for {rec['equipment']}")


EQUIPMENT = actionlists.Catalogue(
    table="equipment",
    name_field="equipment",
    noun="equipment",
    label="equipment",
    param="equipment",
    actions=ACTIONS,
    categories=CATEGORIES,
    locations=LOCATIONS,
    history_required=True,
    check=_prescribed,
)
_GENERATED = EQUIPMENT.tools(
    ("get_all_equipment", "get_equipment_", "find_equipment_by_"),
    ("category", "brand", "country_of_origin", "purchase_date", "ideal_storage_location"),
    ("usage_history", "maintenance_history"),
    "maintenance_and_usage_instructions",
)


def find_equipment_by_brand(ctx: Ctx, brand):
    nonempty(brand, "brand")
    return EQUIPMENT.names(ctx, lambda r: r["brand"] == brand)


def find_equipment_by_country_of_origin(ctx: Ctx, country):
    nonempty(country, "country")
    return EQUIPMENT.names(ctx, lambda r: r["country_of_origin"] == country)


def find_equipment_by_purchase_date_range(ctx: Ctx, start_date, end_date):
    start, end = day_range(start_date, end_date)
    return EQUIPMENT.names(
        ctx, lambda r: start <= parse_day(r["purchase_date"], "purchase_date") <= end
    )


TOOL_NAMES = (
    "get_all_equipment",
    "get_equipment_category",
    "find_equipment_by_category",
    "get_equipment_brand",
    "find_equipment_by_brand",
    "get_equipment_country_of_origin",
    "find_equipment_by_country_of_origin",
    "get_equipment_purchase_date",
    "find_equipment_by_purchase_date_range",
    "get_equipment_ideal_storage_location",
    "find_equipment_by_ideal_storage_location",
    "get_equipment_usage_history",
    "get_equipment_maintenance_and_usage_instructions",
    "get_equipment_maintenance_history",
    "add_to_equipment_action_list",
    "remove_from_equipment_action_list",
    "get_equipment_action_list",
)
TOOLS = tool_table({**globals(), **_GENERATED}, TOOL_NAMES)

SCENARIO = EQUIPMENT.scenario("warehouse", TOOLS, ("equipment",))
