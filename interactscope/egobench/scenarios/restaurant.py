"""Restaurant: dish catalogue, set meals and user orders (tools/restaurant_tools.json)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from interactscope.egobench.scenarios.base import (
    LABELLED_NUTRITION_KEYS,
    NUTRIENTS,
    Ctx,
    ScenarioDef,
    ToolError,
    by_name_sorted,
    catalogue,
    catalogue_ddl,
    check_nutrition,
    containing,
    finder_tools,
    lower_list,
    matching,
    named_tool,
    names_where,
    put,
    record,
    required,
    round2,
    table_tools,
    tool_table,
)

DDL = (
    catalogue_ddl("dishes", "set_meals")
    + """
CREATE TABLE orders (user_id TEXT PRIMARY KEY);
CREATE TABLE order_items (user_id TEXT NOT NULL, dish_name TEXT NOT NULL, quantity,
  PRIMARY KEY (user_id, dish_name));
"""
)
NUTRITION_KEYS = LABELLED_NUTRITION_KEYS
TOTAL_KEYS = NUTRIENTS


def dish_record(info: dict[str, Any]) -> dict[str, Any]:
    """A dish as stored: lower-cased name, category and tag lists, defaults for missing fields
    (price 0, tax rate 0, discount 1) and the nutrition label's keys."""
    nutrition = info.get("nutrition") or {}
    return {
        "name": str(info.get("name", "")).lower(),
        "category": str(info.get("category", " ")).lower(),
        "price": info.get("price", 0.0),
        "tax_rate": info.get("tax_rate", 0.0),
        "discount": info.get("discount", 1.0),
        "nutritional_characteristics": lower_list(info.get("nutritional_characteristics")),
        "taste": lower_list(info.get("taste")),
        "allergens": lower_list(info.get("allergens")),
        "nutrition": {k: nutrition.get(k) for k in NUTRITION_KEYS},
    }


def load(conn: sqlite3.Connection, seed: dict[str, Any]) -> None:
    for info in seed.get("dishes", []):
        d = dish_record(info)
        if d["name"]:
            put(conn, "dishes", d["name"], d)
    for info in seed.get("set_meals", []):
        name = str(info.get("name", "")).lower()
        if not name:
            continue
        included = [
            {"dish_name": str(i.get("dish_name", " ")).lower(), "quantity": i.get("quantity", 1.0)}
            for i in info.get("included_dishes", [])
        ]
        included = [i for i in included if record(conn, "dishes", i["dish_name"])]
        put(
            conn,
            "set_meals",
            name,
            {
                "name": name,
                "included_dishes": included,
                "set_meal_price": info.get("set_meal_price", 0.0),
                "set_meal_discount": info.get("set_meal_discount", 1.0),
            },
        )
    for order in seed.get("user_orders", []):
        uid = order.get("user_id")
        if not uid:
            continue
        conn.execute("INSERT OR IGNORE INTO orders VALUES (?)", (uid,))
        for item in order.get("items", []):
            name = str(item.get("dish_name", " ")).lower()
            if record(conn, "dishes", name) or record(conn, "set_meals", name):
                conn.execute(
                    "INSERT OR REPLACE INTO order_items VALUES (?, ?, ?)",
                    (uid, name, item.get("quantity", 1.0)),
                )


def _order(conn: sqlite3.Connection, user_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT dish_name, quantity FROM order_items WHERE user_id = ? ORDER BY rowid", (user_id,)
    )
    return [{"dish_name": n, "quantity": q} for n, q in rows]


def dump(conn: sqlite3.Connection, rules=None) -> dict[str, Any]:
    orders = {
        uid: sorted(_order(conn, uid), key=lambda x: x["dish_name"])
        for (uid,) in conn.execute("SELECT user_id FROM orders")
    }
    return {
        "catalog": by_name_sorted(conn, "dishes"),
        "set_meals": by_name_sorted(conn, "set_meals"),
        "user_orders": orders,
    }


def lookup(conn: sqlite3.Connection, query: str) -> set[str]:
    return {d["name"] for d in containing(conn, "dishes", query)} | {
        m["name"] for m in containing(conn, "set_meals", query)
    }


DISH_FIELDS = {
    "get_dish_nutrition": "nutrition",
    "get_dish_allergens": "allergens",
    "get_tax_rate": "tax_rate",
    "get_dish_taste_profile": "taste",
    "get_dish_price": "price",
    "get_dish_discount": "discount",
}
"""The dish field each ``get_*`` tool reads from the dishes whose names match (the ``order``
scenario's tools of these names also take the restaurant)."""


def _fuzzy(ctx: Ctx, dish_name: str, field: str) -> dict[str, Any]:
    found = matching(ctx.conn, "dishes", dish_name, f"No dishes found matching '{dish_name}'.")
    return {"status": "success", "matching_dishes": {d["name"]: d[field] for d in found}}


def _existing(ctx: Ctx, dish_name: str) -> dict[str, Any]:
    return required(
        ctx.conn, "dishes", dish_name.lower(), f"Dish '{dish_name}' not found in catalog."
    )


DISH_PARAMS = (
    "dish_name",
    "category",
    "price",
    "tax_rate",
    "discount",
    "nutritional_characteristics",
    "taste",
    "allergens",
    "nutrition",
)
"""The parameters of ``add_dish_to_catalog`` (the order scenario's take the restaurant first)."""


def dish_info(values: tuple[Any, ...]) -> dict[str, Any]:
    """The :data:`DISH_PARAMS` values of ``add_dish_to_catalog`` as the dish fields
    :func:`dish_record` reads. Raises ToolError on a nutrition label with other keys or no
    ``basis``."""
    info = dict(zip(("name", *DISH_PARAMS[1:]), values, strict=True))
    check_nutrition(info["nutrition"], NUTRITION_KEYS)
    return info


def _add_dish(ctx: Ctx, *values: Any) -> dict[str, Any]:
    d = dish_record(dish_info(values))
    put(ctx.conn, "dishes", d["name"], d)
    return {"status": "success", "message": f"Dish '{values[0]}' added/updated successfully."}


def remove_dish_from_catalog(ctx: Ctx, dish_name):
    d = _existing(ctx, dish_name)
    ctx.conn.execute("DELETE FROM dishes WHERE name = ?", (d["name"],))
    ctx.conn.execute("DELETE FROM order_items WHERE dish_name = ?", (d["name"],))
    return {"status": "success", "message": f"Dish '{dish_name}' removed from catalog."}


def update_dish_price(ctx: Ctx, dish_name, new_price):
    d = _existing(ctx, dish_name)
    d["price"] = new_price
    put(ctx.conn, "dishes", d["name"], d)
    return {"status": "success", "message": f"Price of dish '{dish_name}' updated to {new_price}."}


def update_dish_discount(ctx: Ctx, dish_name, new_discount):
    d = _existing(ctx, dish_name)
    d["discount"] = new_discount
    put(ctx.conn, "dishes", d["name"], d)
    return {
        "status": "success",
        "message": f"Discount of dish '{dish_name}' updated to {new_discount}.",
    }


DISH_FINDERS = {
    "find_dishes_by_category": ("category", "category", "is"),
    "find_dishes_by_nutritional_tag": ("tag", "nutritional_characteristics", "has"),
    "find_dishes_by_taste": ("taste", "taste", "has"),
}
"""``{dishes: [...]}`` whose field is / holds the lower-cased value (:func:`finder_tools`); the
order scenario's take the restaurant first."""


def _dishes_where(ctx: Ctx, pred, key: str = "dishes") -> dict[str, Any]:
    return {key: names_where(ctx.conn, "dishes", pred)}


def filter_dishes_by_price_range(ctx: Ctx, min_price, max_price):
    return _dishes_where(ctx, lambda d: min_price <= d["price"] <= max_price)


def list_all_discounted_dishes(ctx: Ctx):
    return _dishes_where(ctx, lambda d: d["discount"] < 1.0, "discounted_dishes")


def create_set_meal(ctx: Ctx, set_meal_name, included_dishes, set_meal_price, set_meal_discount):
    included = []
    for item in included_dishes:
        name = str(item.get("dish_name", " ")).lower()
        _existing(ctx, name)
        included.append({"dish_name": name, "quantity": item.get("quantity", 1.0)})
    key = set_meal_name.lower()
    put(
        ctx.conn,
        "set_meals",
        key,
        {
            "name": key,
            "included_dishes": included,
            "set_meal_price": set_meal_price,
            "set_meal_discount": set_meal_discount,
        },
    )
    return {"status": "success", "message": f"Set meal '{set_meal_name}' created."}


def get_set_meal_details(ctx: Ctx, set_meal_name):
    m = required(
        ctx.conn, "set_meals", set_meal_name.lower(), f"Set meal '{set_meal_name}' not found."
    )
    return {
        "name": m["name"],
        "included_dishes": m["included_dishes"],
        "price": m["set_meal_price"],
        "discount": m["set_meal_discount"],
    }


def find_set_meals_containing_dish(ctx: Ctx, dish_name):
    key = dish_name.lower()
    return {
        "set_meals": [
            m["name"]
            for m in catalogue(ctx.conn, "set_meals")
            if any(i["dish_name"] == key for i in m["included_dishes"])
        ]
    }


def _add(ctx: Ctx, user_id: str, key: str, quantity) -> None:
    conn = ctx.conn
    conn.execute("INSERT OR IGNORE INTO orders VALUES (?)", (user_id,))
    row = conn.execute(
        "SELECT quantity FROM order_items WHERE user_id = ? AND dish_name = ?", (user_id, key)
    ).fetchone()
    if row:
        conn.execute(
            "UPDATE order_items SET quantity = ? WHERE user_id = ? AND dish_name = ?",
            (row[0] + quantity, user_id, key),
        )
    else:
        conn.execute("INSERT INTO order_items VALUES (?, ?, ?)", (user_id, key, quantity))


def _remove(ctx: Ctx, user_id: str, key: str, quantity, label: str) -> None:
    conn = ctx.conn
    row = conn.execute(
        "SELECT quantity FROM order_items WHERE user_id = ? AND dish_name = ?", (user_id, key)
    ).fetchone()
    if row is None:
        raise ToolError(f"{label} not found in order for user {user_id}.")
    left = row[0] - quantity
    if left <= 0:
        conn.execute("DELETE FROM order_items WHERE user_id = ? AND dish_name = ?", (user_id, key))
    else:
        conn.execute(
            "UPDATE order_items SET quantity = ? WHERE user_id = ? AND dish_name = ?",
            (left, user_id, key),
        )


@dataclass(frozen=True)
class OrderLine:
    """What an order line can be (a dish, a set meal): the table it must be in, the tools'
    parameter naming it and the official tools' messages (``{n}``: the name as given, ``{q}``:
    the quantity, ``{u}``: the user)."""

    table: str
    param: str
    missing: str
    added: str
    label: str
    removed: str


ORDER_LINES = {
    "dish": OrderLine(
        "dishes",
        "dish_name",
        "Dish '{n}' does not exist in catalog.",
        "Added {q} x {n} to order for user {u}.",
        "Dish '{n}'",
        "Removed {q} x {n} from order.",
    ),
    "set_meal": OrderLine(
        "set_meals",
        "set_meal_name",
        "Set meal '{n}' does not exist.",
        "Added {q} x {n} set meal.",
        "Set meal '{n}'",
        "Removed {q} x {n} set meal.",
    ),
}
"""``add_<kind>_to_order`` / ``remove_<kind>_from_order`` per kind (the order scenario's tools
take the restaurant first and say ``to order.`` for a dish)."""


def order_tools(
    add: Callable[..., Any], remove: Callable[..., Any], scope: tuple[str, ...], lines
) -> dict[str, Callable[..., Any]]:
    """``add_<kind>_to_order(ctx, *scope, user_id, <param>, quantity)`` calling ``add(ctx,
    *arguments, line)`` and ``remove_<kind>_from_order`` calling ``remove``, per kind of
    ``lines`` (:data:`ORDER_LINES` or a variant)."""
    tools: dict[str, Callable[..., Any]] = {}
    for kind, line in lines.items():
        params = (*scope, "user_id", line.param, "quantity")
        tools |= table_tools(add, params, {f"add_{kind}_to_order": line})
        tools |= table_tools(remove, params, {f"remove_{kind}_from_order": line})
    return tools


def _add_line(ctx: Ctx, user_id, name, quantity, line: OrderLine) -> dict[str, Any]:
    key = name.lower()
    if record(ctx.conn, line.table, key) is None:
        raise ToolError(line.missing.format(n=name))
    _add(ctx, user_id, key, quantity)
    return {"status": "success", "message": line.added.format(n=name, q=quantity, u=user_id)}


def _remove_line(ctx: Ctx, user_id, name, quantity, line: OrderLine) -> dict[str, Any]:
    _remove(ctx, user_id, name.lower(), quantity, line.label.format(n=name))
    return {"status": "success", "message": line.removed.format(n=name, q=quantity)}


def clear_user_order(ctx: Ctx, user_id):
    ctx.conn.execute("DELETE FROM order_items WHERE user_id = ?", (user_id,))
    return {"status": "success", "message": f"Order cleared for user {user_id}."}


def get_user_order_summary(ctx: Ctx, user_id):
    items = _order(ctx.conn, user_id)
    return {"user_id": user_id, "items": items, "total_items": len(items)}


def _expand(ctx: Ctx, dishes) -> list[tuple[dict[str, Any], float, dict[str, Any] | None]]:
    """(dish, quantity, set meal or None) for every listed item; unknown names are skipped."""
    out = []
    for item in dishes:
        name = str(item.get("dish_name", " ")).lower()
        qty = item.get("quantity", 0)
        d = record(ctx.conn, "dishes", name)
        if d is not None:
            out.append((d, qty, None))
            continue
        m = record(ctx.conn, "set_meals", name)
        if m is not None:
            for inc in m["included_dishes"]:
                dd = record(ctx.conn, "dishes", inc["dish_name"])
                if dd is not None:
                    out.append((dd, inc.get("quantity", 1.0) * qty, m))
    return out


def compute_total_payment(ctx: Ctx, user_id, dishes):
    total = 0.0
    for item in dishes:
        name = str(item.get("dish_name", " ")).lower()
        qty = item.get("quantity", 0)
        d = record(ctx.conn, "dishes", name)
        if d is not None:
            total += d["price"] * d["discount"] * qty
            continue
        m = record(ctx.conn, "set_meals", name)
        if m is None:
            continue
        if ctx.rules.set_meal_price == "stored" or (
            m["set_meal_price"] and m["set_meal_price"] > 0
        ):
            # the official tools take the stored price (0 when the seed gives none)
            total += (m["set_meal_price"] or 0) * m["set_meal_discount"] * qty
        else:
            # no fixed price: priced from its included dishes, then the set's discount
            base = sum(
                dd["price"] * dd["discount"] * q
                for dd, q, _ in _expand(
                    ctx,
                    [
                        {"dish_name": i["dish_name"], "quantity": i.get("quantity", 1.0)}
                        for i in m["included_dishes"]
                    ],
                )
            )
            total += base * m["set_meal_discount"] * qty
    return {"user_id": user_id, "total": round2(total)}


def compute_total_tax(ctx: Ctx, user_id, dishes):
    total = sum(
        d["price"] * d["tax_rate"] / (1 + d["tax_rate"]) * d["discount"] * q
        for d, q, _ in _expand(ctx, dishes)
    )
    return {"user_id": user_id, "total_tax": round2(total)}


def compute_total_nutrition(ctx: Ctx, user_id, dishes):
    totals = dict.fromkeys(TOTAL_KEYS, 0.0)
    for d, q, _ in _expand(ctx, dishes):
        n = d["nutrition"]
        mult = q / 100.0 if n.get("basis") == "PER_100G" else q
        for k in TOTAL_KEYS:
            totals[k] += (n.get(k) or 0) * mult
    return {"user_id": user_id, "total_nutrition": {k: round2(v) for k, v in totals.items()}}


TOOL_NAMES = (
    "add_dish_to_catalog",
    "remove_dish_from_catalog",
    "update_dish_price",
    "update_dish_discount",
    "get_dish_nutrition",
    "get_dish_allergens",
    "get_tax_rate",
    "get_dish_taste_profile",
    "get_dish_price",
    "get_dish_discount",
    "find_dishes_by_category",
    "find_dishes_by_nutritional_tag",
    "find_dishes_by_taste",
    "add_dish_to_order",
    "remove_dish_from_order",
    "clear_user_order",
    "get_user_order_summary",
    "compute_total_payment",
    "compute_total_tax",
    "compute_total_nutrition",
    "list_all_discounted_dishes",
    "filter_dishes_by_price_range",
    "create_set_meal",
    "get_set_meal_details",
    "add_set_meal_to_order",
    "remove_set_meal_from_order",
    "find_set_meals_containing_dish",
)
"""The dish-ordering tools; the ``order`` scenario offers the same ones, each naming a restaurant."""
WRITE_TOOLS = frozenset(
    {
        "add_dish_to_catalog",
        "remove_dish_from_catalog",
        "update_dish_price",
        "update_dish_discount",
        "add_dish_to_order",
        "remove_dish_from_order",
        "clear_user_order",
        "create_set_meal",
        "add_set_meal_to_order",
        "remove_set_meal_from_order",
    }
)
"""The tools of :data:`TOOL_NAMES` that change the state (the others are query tools)."""
_GENERATED = {
    "add_dish_to_catalog": named_tool("add_dish_to_catalog", DISH_PARAMS, _add_dish),
    **table_tools(_fuzzy, ("dish_name",), DISH_FIELDS),
    **finder_tools(_dishes_where, (), DISH_FINDERS),
    **order_tools(_add_line, _remove_line, (), ORDER_LINES),
}
TOOLS = tool_table({**globals(), **_GENERATED}, TOOL_NAMES)

SCENARIO = ScenarioDef(
    name="restaurant",
    ddl=DDL,
    load=load,
    dump=dump,
    tools=TOOLS,
    name_keys=("dish_name", "set_meal_name", "restaurant_name"),
    name_match="lookup",
    lookup=lookup,
    query_tools=frozenset(set(TOOLS) - WRITE_TOOLS),
)
