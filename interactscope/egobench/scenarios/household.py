"""Household: item records and per-user household action lists
(tools/household_tools.json). Names match exactly; "PRESENT" in a usage period is the task's
today, never the wall clock."""

from __future__ import annotations

from interactscope.egobench.scenarios import actionlists
from interactscope.egobench.scenarios.base import (
    Ctx,
    ToolError,
    catalogue,
    day_range,
    parse_day,
    tool_table,
)

CATEGORIES = frozenset(
    {
        "furniture",
        "tableware",
        "cookware",
        "bedding",
        "clothing",
        "footwear",
        "home_textile",
        "storage_item",
        "home_appliance",
        "electronics",
        "lighting",
        "decoration",
        "cleaning_item",
        "daily_supply",
        "other",
    }
)
LOCATIONS = frozenset(
    {
        "living_room",
        "dining_room",
        "bedroom",
        "study",
        "wardrobe",
        "linen_closet",
        "shoe_cabinet",
        "kitchen_cabinet",
        "pantry",
        "bathroom_cabinet",
        "laundry_area",
        "storage_room",
        "bookshelf",
        "display_shelf",
        "balcony",
        "garage",
    }
)
ACTIONS = frozenset(
    {
        "clean",
        "condition",
        "disinfect",
        "wash",
        "inspect",
        "repair",
        "relocate",
        "dry",
        "iron",
        "replace",
        "dispose",
    }
)


ITEMS = actionlists.Catalogue(
    table="items",
    name_field="name",
    noun="household item",
    label="household",
    param="item_name",
    actions=ACTIONS,
    categories=CATEGORIES,
    locations=LOCATIONS,
    history_required=False,
)
_GENERATED = ITEMS.tools(
    ("get_all_item_names", "get_item_", "find_items_by_"),
    ("category", "ideal_storage_location", "purchase_date", "purchase_price"),
    ("usage_history", "maintenance_history"),
    "care_and_usage_instructions",
)


def find_items_by_purchase_date_range(ctx: Ctx, start_date, end_date):
    start, end = day_range(start_date, end_date)
    return ITEMS.names(
        ctx,
        lambda r: (
            r.get("purchase_date") is not None
            and start <= parse_day(r["purchase_date"], "purchase_date") <= end
        ),
    )


def find_items_by_purchase_price_range(ctx: Ctx, min_price, max_price):
    if min_price < 0 or max_price < 0 or min_price > max_price:
        raise ToolError("prices must be non-negative and min_price cannot exceed max_price")
    return ITEMS.names(ctx, lambda r: min_price <= r["purchase_price"] <= max_price)


def find_items_used_during_date_range(ctx: Ctx, start_date, end_date):
    q0, q1 = day_range(start_date, end_date)
    out = []
    for r in catalogue(ctx.conn, "items"):
        for period in r.get("usage_history") or []:
            a, b = period.split("/")
            start = parse_day(r["purchase_date"] if a == "PURCHASE_DATE" else a, "usage start")
            if b == "PRESENT":
                if ctx.today is None:
                    raise ToolError("the task names no 'today', so PRESENT cannot be resolved")
                end = ctx.today
            else:
                end = parse_day(b, "usage end")
            if start <= q1 and q0 <= end:
                out.append(r["name"])
                break
    return out


TOOL_NAMES = (
    "get_all_item_names",
    "get_item_category",
    "find_items_by_category",
    "get_item_ideal_storage_location",
    "find_items_by_ideal_storage_location",
    "get_item_purchase_date",
    "find_items_by_purchase_date_range",
    "get_item_purchase_price",
    "find_items_by_purchase_price_range",
    "get_item_usage_history",
    "find_items_used_during_date_range",
    "get_item_maintenance_history",
    "get_item_maintenance_and_usage_instructions",
    "add_to_household_action_list",
    "remove_from_household_action_list",
    "get_household_action_list",
)
TOOLS = tool_table({**globals(), **_GENERATED}, TOOL_NAMES)

SCENARIO = ITEMS.scenario(
    "household", TOOLS, ("item_name", "name"), key_aliases={"name": ("name", "item_name")}
)
