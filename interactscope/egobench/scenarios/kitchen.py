"""Kitchen: ingredients, recipes, daily menus and shopping lists (tools/kitchen_tools.json).

Semantics follow the EgoLink 2026 challenge's kitchen tools (``KitchenDB``, a fork of
ego-link/egolink2026 ``code/track2/EgoBench/tools/kitchen/kitchen_db.py``; Wind-Flipped/EgoBench
does not publish its kitchen code), read and re-implemented here: reads look names up exactly
(lower-cased), a menu holds a recipe once, shopping-list adds accumulate. Where the official
tools do something we do not (an empty user id, an ingredient outside the catalogue) a
:class:`~interactscope.egobench.settings.ToolRules` setting chooses; quantities given as numeric
strings become floats, as the official tools convert them (:func:`convert_arguments`).
Quantities are in units of 100 g."""

from __future__ import annotations

import math
import sqlite3
from typing import Any

from interactscope.egobench.scenarios.base import (
    LABELLED_NUTRITION_KEYS,
    Ctx,
    ScenarioDef,
    ToolError,
    by_name_sorted,
    catalogue_ddl,
    containing,
    lower_list,
    names_where,
    nonempty,
    parse_day,
    put,
    record,
    round2,
    table_tools,
    tool_table,
)
from interactscope.egobench.settings import ToolRules

DDL = (
    catalogue_ddl("ingredients", "recipes")
    + """
CREATE TABLE menu_users (user_id TEXT PRIMARY KEY);
CREATE TABLE menus (user_id TEXT NOT NULL, recipe_name TEXT NOT NULL,
  PRIMARY KEY (user_id, recipe_name));
CREATE TABLE shopping_users (user_id TEXT PRIMARY KEY);
CREATE TABLE shopping_items (user_id TEXT NOT NULL, ingredient_name TEXT NOT NULL, quantity,
  PRIMARY KEY (user_id, ingredient_name));
"""
)
NUTRITION_KEYS = LABELLED_NUTRITION_KEYS
"""An ingredient's nutrition label: ``basis`` (default PER_100G), ``serving_size_g`` and the
nutrients; every field is kept."""
TOTAL_KEYS = ("calories_kcal", "protein_g", "fat_g", "carbs_g", "sugar_g", "fiber_g", "sodium_mg")


def _nutrition(raw: Any) -> dict[str, Any]:
    n = raw if isinstance(raw, dict) else {}
    out = {k: n.get(k) for k in NUTRITION_KEYS}
    out["basis"] = n.get("basis", "PER_100G")
    return out


def _ingredient(info: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        **{k: v for k, v in info.items() if k not in ("name", "nutrition")},
        "name": name,
        "quantity": info.get("quantity", 0),
        "category": str(info.get("category", "")).lower(),
        "storage_location": info.get("storage_location"),
        "expiry_date": info.get("expiry_date"),
        "nutrition": _nutrition(info.get("nutrition")),
    }


def _recipe(info: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        **{k: v for k, v in info.items() if k != "name"},
        "name": name,
        "ingredients": [
            {
                "ingredient_name": str(i.get("ingredient_name", "")).lower(),
                "quantity": i.get("quantity", 0),
            }
            for i in info.get("ingredients", [])
        ],
        "allergens": lower_list(info.get("allergens")),
        "taste": lower_list(info.get("taste")),
        "nutritional_characteristics": lower_list(info.get("nutritional_characteristics")),
        "steps": list(info.get("steps") or []),
    }


def load(conn: sqlite3.Connection, seed: dict[str, Any]) -> None:
    for table, build in (("ingredients", _ingredient), ("recipes", _recipe)):
        for info in seed.get(table, []):
            name = str(info.get("name", "")).lower()
            if name:
                put(conn, table, name, build(info, name))
    for menu in seed.get("user_menus", []):
        if not menu.get("user_id"):
            continue
        conn.execute("INSERT OR IGNORE INTO menu_users VALUES (?)", (menu["user_id"],))
        for r in menu.get("recipes", []):
            conn.execute("INSERT OR IGNORE INTO menus VALUES (?, ?)", (menu["user_id"], r.lower()))
    for sl in seed.get("user_shopping_lists", []):
        if not sl.get("user_id"):
            continue
        conn.execute("INSERT OR IGNORE INTO shopping_users VALUES (?)", (sl["user_id"],))
        for i in sl.get("items", []):
            conn.execute(
                "INSERT OR REPLACE INTO shopping_items VALUES (?, ?, ?)",
                (sl["user_id"], str(i["ingredient_name"]).lower(), i.get("quantity", 0)),
            )


def _shopping(conn: sqlite3.Connection, user_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT ingredient_name, quantity FROM shopping_items WHERE user_id = ? ORDER BY rowid",
        (user_id,),
    )
    return [{"ingredient_name": n, "quantity": q} for n, q in rows]


def _menu(conn: sqlite3.Connection, user_id: str) -> list[str]:
    return [
        r
        for (r,) in conn.execute(
            "SELECT recipe_name FROM menus WHERE user_id = ? ORDER BY rowid", (user_id,)
        )
    ]


def dump(conn: sqlite3.Connection, rules=None) -> dict[str, Any]:
    if rules is not None and rules.kitchen_lists == "insertion":
        # the official hash: menus as stored (insertion order), emptied menus kept
        menus = {u: _menu(conn, u) for (u,) in conn.execute("SELECT user_id FROM menu_users")}
    else:
        users = {u for (u,) in conn.execute("SELECT DISTINCT user_id FROM menus")}
        menus = {u: sorted(_menu(conn, u)) for u in users}
    return {
        "ingredients": by_name_sorted(conn, "ingredients"),
        "recipes": by_name_sorted(conn, "recipes"),
        "user_menus": menus,
        "user_shopping_lists": {
            u: sorted(_shopping(conn, u), key=lambda x: x["ingredient_name"])
            for (u,) in conn.execute("SELECT user_id FROM shopping_users")
        },
    }


def lookup(conn: sqlite3.Connection, query: str) -> set[str]:
    return {r["name"] for r in containing(conn, "recipes", query)} | {
        i["name"] for i in containing(conn, "ingredients", query)
    }


def _user(ctx: Ctx, user_id: Any) -> None:
    if ctx.rules.empty_user_id == "reject":
        nonempty(user_id, "user_id")


def _quantity(ctx: Ctx, q: Any) -> Any:
    """The official tools turn a quantity given as a string into a float (``"5"`` -> 5.0)."""
    if ctx.official and isinstance(q, str):
        try:
            return float(q)
        except ValueError:
            raise ToolError("Quantity must be a valid number.") from None
    return q


def _finite_float(q: Any) -> Any:
    """``float(q)`` for a string that spells a finite number (``"5"`` -> 5.0, ``" 0.5"`` ->
    0.5), else ``q`` as it is (left to validation)."""
    if isinstance(q, str):
        try:
            x = float(q)
        except ValueError:
            return q
        if math.isfinite(x):
            return x
    return q


def convert_arguments(tool: str, args: dict[str, Any], rules: ToolRules) -> dict[str, Any]:
    """A call's arguments as the official tools take them, before validation: ``KitchenDB``
    turns exactly two quantities from a string into ``float`` itself,
    ``add_to_shopping_list(quantity)`` and ``compute_total_nutritions``'s
    ``ingredients[].quantity`` (the schema's only numbers; the published kitchen GT gives 74
    of them as strings). Under ``kitchen_numeric_strings=reject`` (ours before this rule)
    nothing is converted. Non-numeric and non-finite strings stay strings: schema validation
    rejects them (the official tools: an error, resp. the item skipped)."""
    if rules.kitchen_numeric_strings != "float":
        return args
    if tool == "add_to_shopping_list" and "quantity" in args:
        return {**args, "quantity": _finite_float(args["quantity"])}
    if tool == "compute_total_nutritions" and isinstance(args.get("ingredients"), list):
        items = [
            {**i, "quantity": _finite_float(i["quantity"])}
            if isinstance(i, dict) and "quantity" in i
            else i
            for i in args["ingredients"]
        ]
        return {**args, "ingredients": items}
    return args


def _get(ctx: Ctx, table: str, name: str, field: str, label: str) -> dict[str, Any]:
    """``{label: name, field: value}`` of the record keyed by the lower-cased ``name``."""
    rec = record(ctx.conn, table, name.lower())
    if rec is None:
        what = "Recipe" if table == "recipes" else "Ingredient"
        raise ToolError(f"{what} '{name}' not found.")
    return {label: name, field: rec[field]}


RECIPE_FIELDS = {
    "get_cooking_steps": "steps",
    "get_recipe_allergens": "allergens",
    "get_recipe_taste": "taste",
    "get_recipe_ingredients": "ingredients",
    "get_recipe_nutritional_characteristics": "nutritional_characteristics",
}
"""The recipe field each of these tools reads (``{recipe_name, <field>}``)."""
INGREDIENT_FIELDS = {
    "get_ingredient_shelf_life": "expiry_date",
    "get_ingredient_location": "storage_location",
    "get_ingredient_nutrition": "nutrition",
    "get_ingredient_quantity": "quantity",
    "find_ingredient_category": "category",
}
"""The ingredient field each of these tools reads (``{ingredient_name, <field>}``)."""


def _recipe_field(ctx: Ctx, recipe_name: str, field: str) -> dict[str, Any]:
    return _get(ctx, "recipes", recipe_name, field, "recipe_name")


def _ingredient_field(ctx: Ctx, ingredient_name: str, field: str) -> dict[str, Any]:
    return _get(ctx, "ingredients", ingredient_name, field, "ingredient_name")


def _names(ctx: Ctx, table: str, pred, query_key: str, query: Any, out_key: str):
    return {query_key: query, out_key: names_where(ctx.conn, table, pred)}


def add_recipe_to_menu(ctx: Ctx, user_id, recipe_name):
    _user(ctx, user_id)
    key = recipe_name.lower()
    if record(ctx.conn, "recipes", key) is None:
        raise ToolError(f"Recipe '{recipe_name}' not found.")
    ctx.conn.execute("INSERT OR IGNORE INTO menu_users VALUES (?)", (user_id,))
    added = ctx.conn.execute("INSERT OR IGNORE INTO menus VALUES (?, ?)", (user_id, key)).rowcount
    note = "added to menu" if added else "already in menu"
    return {
        "status": "success",
        "message": f"Recipe '{recipe_name}' {note}.",
        "menu": _menu(ctx.conn, user_id),
    }


def remove_recipe_from_menu(ctx: Ctx, user_id, recipe_name):
    cur = ctx.conn.execute(
        "DELETE FROM menus WHERE user_id = ? AND recipe_name = ?", (user_id, recipe_name.lower())
    )
    if cur.rowcount == 0:
        raise ToolError(f"Recipe '{recipe_name}' not found in menu.")
    return {
        "status": "success",
        "message": f"Recipe '{recipe_name}' removed from menu.",
        "menu": _menu(ctx.conn, user_id),
    }


def get_current_menu(ctx: Ctx, user_id):
    return {"user_id": user_id, "recipes": _menu(ctx.conn, user_id)}


def _tally(ctx: Ctx, user_id, recipes, field: str, out_key: str) -> dict[str, Any]:
    found: set[str] = set()
    for name in recipes:
        r = record(ctx.conn, "recipes", str(name).lower())
        if r is not None:
            found.update(x for x in r[field] if x)
    return {"user_id": user_id, "recipes": recipes, out_key: sorted(found)}


def tally_total_nutritional_characteristics(ctx: Ctx, user_id, recipes):
    return _tally(
        ctx, user_id, recipes, "nutritional_characteristics", "nutritional_characteristics"
    )


def tally_total_tastes(ctx: Ctx, user_id, recipes):
    return _tally(ctx, user_id, recipes, "taste", "tastes")


def add_to_shopping_list(ctx: Ctx, user_id, ingredient_name, quantity):
    _user(ctx, user_id)
    quantity = _quantity(ctx, quantity)
    if quantity <= 0:
        raise ToolError("Quantity must be greater than 0.")
    key = ingredient_name.lower()
    if ctx.rules.shopping_names == "catalogue" and record(ctx.conn, "ingredients", key) is None:
        raise ToolError(f"Ingredient '{ingredient_name}' not found.")
    conn = ctx.conn
    conn.execute("INSERT OR IGNORE INTO shopping_users VALUES (?)", (user_id,))
    row = conn.execute(
        "SELECT quantity FROM shopping_items WHERE user_id = ? AND ingredient_name = ?",
        (user_id, key),
    ).fetchone()
    if row:
        conn.execute(
            "UPDATE shopping_items SET quantity = ? WHERE user_id = ? AND ingredient_name = ?",
            (row[0] + quantity, user_id, key),
        )
    else:
        conn.execute("INSERT INTO shopping_items VALUES (?, ?, ?)", (user_id, key, quantity))
    return {
        "status": "success",
        "message": f"Added {quantity} x {ingredient_name} to shopping list.",
    }


def remove_from_shopping_list(ctx: Ctx, user_id, ingredient_name):
    cur = ctx.conn.execute(
        "DELETE FROM shopping_items WHERE user_id = ? AND ingredient_name = ?",
        (user_id, ingredient_name.lower()),
    )
    if cur.rowcount == 0:
        raise ToolError(f"'{ingredient_name}' not found in shopping list.")
    return {"status": "success", "message": f"Removed '{ingredient_name}' from shopping list."}


def compute_total_nutritions(ctx: Ctx, user_id, ingredients):
    totals = dict.fromkeys(TOTAL_KEYS, 0.0)
    for item in ingredients:
        i = record(ctx.conn, "ingredients", str(item.get("ingredient_name", "")).lower())
        q = item.get("quantity", 0)
        if isinstance(q, str):
            try:
                q = float(q)
            except ValueError:
                continue
        if i is None:
            continue
        for k in TOTAL_KEYS:
            totals[k] += (i["nutrition"].get(k) or 0) * q
    return {"user_id": user_id, "total_nutrition": {k: round2(v) for k, v in totals.items()}}


def find_recipes_by_allergen(ctx: Ctx, allergen):
    a = allergen.lower()
    return _names(ctx, "recipes", lambda r: a in r["allergens"], "allergen", allergen, "recipes")


def find_recipes_by_taste(ctx: Ctx, taste):
    t = taste.lower()
    return _names(ctx, "recipes", lambda r: t in r["taste"], "taste", taste, "recipes")


def find_recipes_by_ingredient(ctx: Ctx, ingredient_name):
    q = ingredient_name.lower()
    return _names(
        ctx,
        "recipes",
        lambda r: any(i["ingredient_name"] == q for i in r["ingredients"]),
        "ingredient_name",
        ingredient_name,
        "recipes",
    )


def find_ingredients_by_expiry_date(ctx: Ctx, date):
    if not ctx.official:
        parse_day(date, "date")
    return _names(
        ctx,
        "ingredients",
        lambda i: bool(i["expiry_date"]) and i["expiry_date"] >= date,
        "date",
        date,
        "ingredients",
    )


def find_ingredients_by_location(ctx: Ctx, location):
    loc = location.lower()
    return _names(
        ctx,
        "ingredients",
        lambda i: str(i["storage_location"] or "").lower() == loc and bool(i["storage_location"]),
        "location",
        location,
        "ingredients",
    )


def get_all_recipe_names(ctx: Ctx):
    return {"recipes": names_where(ctx.conn, "recipes", lambda r: True)}


def get_ingredients_by_category(ctx: Ctx, category):
    c = category.lower()
    return _names(
        ctx, "ingredients", lambda i: i["category"] == c, "category", category, "ingredients"
    )


def get_current_shopping_list(ctx: Ctx, user_id):
    return {"user_id": user_id, "items": _shopping(ctx.conn, user_id)}


def find_recipes_by_nutritional_characteristics(ctx: Ctx, characteristic):
    c = characteristic.lower()
    return _names(
        ctx,
        "recipes",
        lambda r: c in r["nutritional_characteristics"],
        "characteristic",
        characteristic,
        "recipes",
    )


def get_all_ingredient_names(ctx: Ctx):
    return {"ingredients": names_where(ctx.conn, "ingredients", lambda i: True)}


_GETTERS = {
    **table_tools(_recipe_field, ("recipe_name",), RECIPE_FIELDS),
    **table_tools(_ingredient_field, ("ingredient_name",), INGREDIENT_FIELDS),
}
TOOL_NAMES = (
    "add_recipe_to_menu",
    "remove_recipe_from_menu",
    "get_current_menu",
    "tally_total_nutritional_characteristics",
    "tally_total_tastes",
    "add_to_shopping_list",
    "remove_from_shopping_list",
    "compute_total_nutritions",
    "get_cooking_steps",
    "get_recipe_allergens",
    "find_recipes_by_allergen",
    "get_recipe_taste",
    "find_recipes_by_taste",
    "get_recipe_ingredients",
    "find_recipes_by_ingredient",
    "get_ingredient_shelf_life",
    "find_ingredients_by_expiry_date",
    "get_ingredient_location",
    "find_ingredients_by_location",
    "get_ingredient_nutrition",
    "get_ingredient_quantity",
    "get_all_recipe_names",
    "get_ingredients_by_category",
    "find_ingredient_category",
    "get_current_shopping_list",
    "get_recipe_nutritional_characteristics",
    "find_recipes_by_nutritional_characteristics",
    "get_all_ingredient_names",
)
TOOLS = tool_table({**globals(), **_GETTERS}, TOOL_NAMES)

SCENARIO = ScenarioDef(
    name="kitchen",
    ddl=DDL,
    load=load,
    dump=dump,
    tools=TOOLS,
    name_keys=("ingredient_name", "recipe_name", "recipes"),
    name_match="exact",
    lookup=lookup,
    convert_arguments=convert_arguments,
    query_tools=frozenset(
        set(TOOLS)
        - {
            "add_recipe_to_menu",
            "remove_recipe_from_menu",
            "add_to_shopping_list",
            "remove_from_shopping_list",
        }
    ),
)
