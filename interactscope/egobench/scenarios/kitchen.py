"""Kitchen: ingredients, recipes, daily menus and shopping lists (tools/kitchen_tools.json).

The reference's kitchen database code is not public; these semantics follow the schema's
descriptions and docs/egobench.md. Quantities are in units of 100 g."""

from __future__ import annotations

import sqlite3
from collections import Counter
from typing import Any

from interactscope.egobench.scenarios.base import (
    NUTRIENTS,
    Ctx,
    ScenarioDef,
    ToolError,
    by_name_sorted,
    containing,
    lower_list,
    matching,
    names_where,
    nonempty,
    parse_day,
    put,
    record,
    round2,
)

DDL = """
CREATE TABLE ingredients (name TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE recipes (name TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE menus (user_id TEXT NOT NULL, recipe_name TEXT NOT NULL,
  PRIMARY KEY (user_id, recipe_name));
CREATE TABLE shopping_users (user_id TEXT PRIMARY KEY);
CREATE TABLE shopping_items (user_id TEXT NOT NULL, ingredient_name TEXT NOT NULL, quantity,
  PRIMARY KEY (user_id, ingredient_name));
"""
NUTRITION_KEYS = NUTRIENTS


def load(conn: sqlite3.Connection, seed: dict[str, Any]) -> None:
    for info in seed.get("ingredients", []):
        name = str(info.get("name", "")).lower()
        if name:
            put(
                conn,
                "ingredients",
                name,
                {
                    "name": name,
                    "quantity": info.get("quantity", 0),
                    "category": str(info.get("category", "")).lower(),
                    "storage_location": str(info.get("storage_location", "")).lower(),
                    "expiry_date": info.get("expiry_date"),
                    "nutrition": {k: (info.get("nutrition") or {}).get(k) for k in NUTRITION_KEYS},
                },
            )
    for info in seed.get("recipes", []):
        name = str(info.get("name", "")).lower()
        if name:
            put(
                conn,
                "recipes",
                name,
                {
                    "name": name,
                    "ingredients": [
                        {
                            "ingredient_name": str(i["ingredient_name"]).lower(),
                            "quantity": i.get("quantity", 0),
                        }
                        for i in info.get("ingredients", [])
                    ],
                    "allergens": lower_list(info.get("allergens")),
                    "taste": lower_list(info.get("taste")),
                    "nutritional_characteristics": lower_list(
                        info.get("nutritional_characteristics")
                    ),
                    "steps": list(info.get("steps") or []),
                },
            )
    for menu in seed.get("user_menus", []):
        for r in menu.get("recipes", []):
            conn.execute("INSERT OR IGNORE INTO menus VALUES (?, ?)", (menu["user_id"], r.lower()))
    for sl in seed.get("user_shopping_lists", []):
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


def dump(conn: sqlite3.Connection) -> dict[str, Any]:
    users = {u for (u,) in conn.execute("SELECT DISTINCT user_id FROM menus")}
    return {
        "ingredients": by_name_sorted(conn, "ingredients"),
        "recipes": by_name_sorted(conn, "recipes"),
        "user_menus": {u: sorted(_menu(conn, u)) for u in users},
        "user_shopping_lists": {
            u: sorted(_shopping(conn, u), key=lambda x: x["ingredient_name"])
            for (u,) in conn.execute("SELECT user_id FROM shopping_users")
        },
    }


def lookup(conn: sqlite3.Connection, query: str) -> set[str]:
    return {r["name"] for r in containing(conn, "recipes", query)} | {
        i["name"] for i in containing(conn, "ingredients", query)
    }


def _found(ctx: Ctx, table: str, name: str, field: str) -> dict[str, Any]:
    found = matching(ctx.conn, table, name, f"No {table} found matching '{name}'.")
    return {"matches": {r["name"]: r[field] for r in found}}


def _names(ctx: Ctx, table: str, pred) -> dict[str, Any]:
    return {table: names_where(ctx.conn, table, pred)}


def add_recipe_to_menu(ctx: Ctx, user_id, recipe_name):
    nonempty(user_id, "user_id")
    key = recipe_name.lower()
    if record(ctx.conn, "recipes", key) is None:
        raise ToolError(f"Recipe '{recipe_name}' not found.")
    if key in _menu(ctx.conn, user_id):
        raise ToolError(f"Recipe '{recipe_name}' is already in the menu of user '{user_id}'.")
    ctx.conn.execute("INSERT INTO menus VALUES (?, ?)", (user_id, key))
    return {"status": "success", "message": f"Added '{recipe_name}' to the menu."}


def remove_recipe_from_menu(ctx: Ctx, user_id, recipe_name):
    cur = ctx.conn.execute(
        "DELETE FROM menus WHERE user_id = ? AND recipe_name = ?", (user_id, recipe_name.lower())
    )
    if cur.rowcount == 0:
        raise ToolError(f"Recipe '{recipe_name}' is not in the menu of user '{user_id}'.")
    return {"status": "success", "message": f"Removed '{recipe_name}' from the menu."}


def get_current_menu(ctx: Ctx, user_id):
    return {"user_id": user_id, "recipes": _menu(ctx.conn, user_id)}


def _tally(ctx: Ctx, recipes, field: str) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    missing = []
    for name in recipes:
        r = record(ctx.conn, "recipes", str(name).lower())
        if r is None:
            missing.append(name)
        else:
            counts.update(r[field])
    out: dict[str, Any] = {field: dict(sorted(counts.items()))}
    if missing:
        out["missing"] = missing
    return out


def tally_total_nutritional_characteristics(ctx: Ctx, user_id, recipes):
    return _tally(ctx, recipes, "nutritional_characteristics")


def tally_total_tastes(ctx: Ctx, user_id, recipes):
    return _tally(ctx, recipes, "taste")


def add_to_shopping_list(ctx: Ctx, user_id, ingredient_name, quantity):
    nonempty(user_id, "user_id")
    if quantity <= 0:
        raise ToolError("quantity must be greater than 0 (units of 100 g).")
    key = ingredient_name.lower()
    if record(ctx.conn, "ingredients", key) is None:
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
    return {"status": "success", "message": f"Added {quantity} x 100 g of '{ingredient_name}'."}


def remove_from_shopping_list(ctx: Ctx, user_id, ingredient_name):
    cur = ctx.conn.execute(
        "DELETE FROM shopping_items WHERE user_id = ? AND ingredient_name = ?",
        (user_id, ingredient_name.lower()),
    )
    if cur.rowcount == 0:
        raise ToolError(f"Ingredient '{ingredient_name}' is not on the shopping list.")
    return {"status": "success", "message": f"Removed '{ingredient_name}' from the shopping list."}


def compute_total_nutritions(ctx: Ctx, user_id, ingredients):
    totals = dict.fromkeys(NUTRITION_KEYS, 0.0)
    missing = []
    for item in ingredients:
        name = str(item.get("ingredient_name", "")).lower()
        i = record(ctx.conn, "ingredients", name)
        if i is None:
            missing.append(name)
            continue
        for k in NUTRITION_KEYS:
            totals[k] += (i["nutrition"].get(k) or 0) * item.get("quantity", 0)
    out: dict[str, Any] = {
        "user_id": user_id,
        "total_nutrition": {k: round2(v) for k, v in totals.items()},
    }
    if missing:
        out["missing"] = missing
    return out


def get_cooking_steps(ctx: Ctx, recipe_name):
    return _found(ctx, "recipes", recipe_name, "steps")


def get_recipe_allergens(ctx: Ctx, recipe_name):
    return _found(ctx, "recipes", recipe_name, "allergens")


def find_recipes_by_allergen(ctx: Ctx, allergen):
    a = allergen.lower()
    return _names(ctx, "recipes", lambda r: a in r["allergens"])


def get_recipe_taste(ctx: Ctx, recipe_name):
    return _found(ctx, "recipes", recipe_name, "taste")


def find_recipes_by_taste(ctx: Ctx, taste):
    t = taste.lower()
    return _names(ctx, "recipes", lambda r: t in r["taste"])


def get_recipe_ingredients(ctx: Ctx, recipe_name):
    return _found(ctx, "recipes", recipe_name, "ingredients")


def find_recipes_by_ingredient(ctx: Ctx, ingredient_name):
    q = ingredient_name.lower()
    return _names(
        ctx,
        "recipes",
        lambda r: any(
            q in i["ingredient_name"] or i["ingredient_name"] in q for i in r["ingredients"]
        ),
    )


def get_ingredient_shelf_life(ctx: Ctx, ingredient_name):
    return _found(ctx, "ingredients", ingredient_name, "expiry_date")


def find_ingredients_by_expiry_date(ctx: Ctx, date):
    day = parse_day(date, "date")
    return _names(
        ctx,
        "ingredients",
        lambda i: bool(i["expiry_date"]) and parse_day(i["expiry_date"], "expiry_date") > day,
    )


def get_ingredient_location(ctx: Ctx, ingredient_name):
    return _found(ctx, "ingredients", ingredient_name, "storage_location")


def find_ingredients_by_location(ctx: Ctx, location):
    loc = location.lower()
    return _names(ctx, "ingredients", lambda i: i["storage_location"] == loc)


def get_ingredient_nutrition(ctx: Ctx, ingredient_name):
    return _found(ctx, "ingredients", ingredient_name, "nutrition")


def get_ingredient_quantity(ctx: Ctx, ingredient_name):
    return _found(ctx, "ingredients", ingredient_name, "quantity")


def get_all_recipe_names(ctx: Ctx):
    return _names(ctx, "recipes", lambda r: True)


def get_ingredients_by_category(ctx: Ctx, category):
    c = category.lower()
    return _names(ctx, "ingredients", lambda i: i["category"] == c)


def find_ingredient_category(ctx: Ctx, ingredient_name):
    return _found(ctx, "ingredients", ingredient_name, "category")


def get_current_shopping_list(ctx: Ctx, user_id):
    return {"user_id": user_id, "items": _shopping(ctx.conn, user_id)}


def get_recipe_nutritional_characteristics(ctx: Ctx, recipe_name):
    return _found(ctx, "recipes", recipe_name, "nutritional_characteristics")


def find_recipes_by_nutritional_characteristics(ctx: Ctx, characteristic):
    c = characteristic.lower()
    return _names(ctx, "recipes", lambda r: c in r["nutritional_characteristics"])


def get_all_ingredient_names(ctx: Ctx):
    return _names(ctx, "ingredients", lambda i: True)


TOOLS = {
    f.__name__: f
    for f in (
        add_recipe_to_menu,
        remove_recipe_from_menu,
        get_current_menu,
        tally_total_nutritional_characteristics,
        tally_total_tastes,
        add_to_shopping_list,
        remove_from_shopping_list,
        compute_total_nutritions,
        get_cooking_steps,
        get_recipe_allergens,
        find_recipes_by_allergen,
        get_recipe_taste,
        find_recipes_by_taste,
        get_recipe_ingredients,
        find_recipes_by_ingredient,
        get_ingredient_shelf_life,
        find_ingredients_by_expiry_date,
        get_ingredient_location,
        find_ingredients_by_location,
        get_ingredient_nutrition,
        get_ingredient_quantity,
        get_all_recipe_names,
        get_ingredients_by_category,
        find_ingredient_category,
        get_current_shopping_list,
        get_recipe_nutritional_characteristics,
        find_recipes_by_nutritional_characteristics,
        get_all_ingredient_names,
    )
}

SCENARIO = ScenarioDef(
    name="kitchen",
    ddl=DDL,
    load=load,
    dump=dump,
    tools=TOOLS,
    name_keys=("ingredient_name", "recipe_name", "recipes"),
    name_match="exact",
    lookup=lookup,
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
