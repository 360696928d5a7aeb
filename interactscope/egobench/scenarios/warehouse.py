"""Warehouse: equipment records and per-user equipment action lists
(tools/warehouse_tools.json). Names match exactly (case-sensitive), as the schema says."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from interactscope.egobench.scenarios import actionlists
from interactscope.egobench.scenarios.base import (
    Ctx,
    ScenarioDef,
    ToolError,
    by_name_sorted,
    day_range,
    names_where,
    nonempty,
    one_of,
    parse_day,
    put,
    required,
)

DDL = "CREATE TABLE equipment (name TEXT PRIMARY KEY, record TEXT NOT NULL);" + actionlists.DDL
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


def load(conn: sqlite3.Connection, seed: dict[str, Any]) -> None:
    for raw in seed.get("equipment", []):
        put(conn, "equipment", raw["equipment"], {**raw, "name": raw["equipment"]})
    actionlists.load(conn, seed.get("equipment_action_lists", []), "equipment")


def dump(conn: sqlite3.Connection, rules=None) -> dict[str, Any]:
    return {
        "equipment": by_name_sorted(conn, "equipment"),
        "user_action_lists": actionlists.dump(conn, "equipment"),
    }


def _eq(ctx: Ctx, equipment: str) -> dict[str, Any]:
    return required(ctx.conn, "equipment", equipment, f"equipment not found: {equipment}")


def _where(ctx: Ctx, pred) -> list[str]:
    return names_where(ctx.conn, "equipment", pred, "equipment")


def _check_action(rec: dict[str, Any], action: str) -> None:
    actionlists.check_action(action, ACTIONS, "equipment")
    text = rec["maintenance_and_usage_instructions"].lower()
    if action in MAINTENANCE and not re.search(rf"\b{action} every \d+ months?\b", text):
        raise ToolError(f"'{action}' is not a maintenance action prescribed for {rec['equipment']}")


def get_all_equipment(ctx: Ctx):
    return _where(ctx, lambda r: True)


def get_equipment_category(ctx: Ctx, equipment):
    return _eq(ctx, equipment)["category"]


def find_equipment_by_category(ctx: Ctx, category):
    one_of(category, CATEGORIES, "equipment category")
    return _where(ctx, lambda r: r["category"] == category)


def get_equipment_brand(ctx: Ctx, equipment):
    return _eq(ctx, equipment)["brand"]


def find_equipment_by_brand(ctx: Ctx, brand):
    nonempty(brand, "brand")
    return _where(ctx, lambda r: r["brand"] == brand)


def get_equipment_country_of_origin(ctx: Ctx, equipment):
    return _eq(ctx, equipment)["country_of_origin"]


def find_equipment_by_country_of_origin(ctx: Ctx, country):
    nonempty(country, "country")
    return _where(ctx, lambda r: r["country_of_origin"] == country)


def get_equipment_purchase_date(ctx: Ctx, equipment):
    return _eq(ctx, equipment)["purchase_date"]


def find_equipment_by_purchase_date_range(ctx: Ctx, start_date, end_date):
    start, end = day_range(start_date, end_date)
    return _where(ctx, lambda r: start <= parse_day(r["purchase_date"], "purchase_date") <= end)


def get_equipment_ideal_storage_location(ctx: Ctx, equipment):
    return _eq(ctx, equipment)["ideal_storage_location"]


def find_equipment_by_ideal_storage_location(ctx: Ctx, location):
    one_of(location, LOCATIONS, "equipment storage location")
    return _where(ctx, lambda r: r["ideal_storage_location"] == location)


def get_equipment_usage_history(ctx: Ctx, equipment):
    return list(_eq(ctx, equipment)["usage_history"])


def get_equipment_maintenance_and_usage_instructions(ctx: Ctx, equipment):
    if not equipment:
        raise ToolError("equipment must be a non-empty list of equipment names")
    return {n: _eq(ctx, n)["maintenance_and_usage_instructions"] for n in equipment}


def get_equipment_maintenance_history(ctx: Ctx, equipment):
    return list(_eq(ctx, equipment)["maintenance_history"])


def add_to_equipment_action_list(ctx: Ctx, user_id, equipment, required_action, due_date):
    nonempty(user_id, "user_id")
    _check_action(_eq(ctx, equipment), required_action)
    return actionlists.add_tool(
        ctx.conn, user_id, equipment, required_action, due_date, "equipment"
    )


def remove_from_equipment_action_list(ctx: Ctx, user_id, equipment, required_action, due_date):
    return actionlists.remove_tool(
        ctx.conn, user_id, equipment, required_action, due_date, ACTIONS, "equipment"
    )


def get_equipment_action_list(ctx: Ctx, user_id):
    return actionlists.list_tool(ctx.conn, user_id, "equipment")


TOOLS = {
    f.__name__: f
    for f in (
        get_all_equipment,
        get_equipment_category,
        find_equipment_by_category,
        get_equipment_brand,
        find_equipment_by_brand,
        get_equipment_country_of_origin,
        find_equipment_by_country_of_origin,
        get_equipment_purchase_date,
        find_equipment_by_purchase_date_range,
        get_equipment_ideal_storage_location,
        find_equipment_by_ideal_storage_location,
        get_equipment_usage_history,
        get_equipment_maintenance_and_usage_instructions,
        get_equipment_maintenance_history,
        add_to_equipment_action_list,
        remove_from_equipment_action_list,
        get_equipment_action_list,
    )
}

SCENARIO = ScenarioDef(
    name="warehouse",
    ddl=DDL,
    load=load,
    dump=dump,
    tools=TOOLS,
    name_keys=("equipment",),
    name_match="contains",
    query_tools=frozenset(
        set(TOOLS) - {"add_to_equipment_action_list", "remove_from_equipment_action_list"}
    ),
)
