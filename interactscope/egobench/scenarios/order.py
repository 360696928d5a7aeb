"""Order: multi-restaurant ordering (EgoInteract's fourth category; tools/order_tools.json).

Every restaurant has its own dish catalogue, set meals and user orders; every tool names the
restaurant. Semantics re-implemented from the official tool code (ego-link/egolink2026
``code/track2/EgoBench/tools/order/order_db.py``, ``OrderDB``), not copied: names are
lower-cased; reads by dish name match by containment either way inside the named restaurant;
``compute_*`` take ``dishes: [{product_name, quantity}]`` (the schema's key; ``dish_name`` is
accepted too), skip items with quantity <= 0, and price a set meal at its own price x discount
(tax and nutrition from its dishes). Where the official code differs from ours a
:class:`~interactscope.egobench.settings.ToolRules` setting chooses: ``unknown_restaurant``
(the official ``_get_store`` creates an empty restaurant for any unknown name, which then is part
of the state) and ``set_meal_price``."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from typing import Any

from interactscope.egobench.canonical import RawJSON, canonical_json
from interactscope.egobench.scenarios import restaurant
from interactscope.egobench.scenarios.base import (
    NUTRIENTS,
    Ctx,
    ScenarioDef,
    ToolError,
    finder_tools,
    named_tool,
    round2,
    table_tools,
    tool_table,
)

DDL = """
CREATE TABLE restaurants (name TEXT PRIMARY KEY);
CREATE TABLE dishes (restaurant TEXT NOT NULL, name TEXT NOT NULL, record TEXT NOT NULL,
  PRIMARY KEY (restaurant, name));
CREATE TABLE set_meals (restaurant TEXT NOT NULL, name TEXT NOT NULL, record TEXT NOT NULL,
  PRIMARY KEY (restaurant, name));
CREATE TABLE orders (restaurant TEXT NOT NULL, user_id TEXT NOT NULL,
  PRIMARY KEY (restaurant, user_id));
CREATE TABLE order_items (restaurant TEXT NOT NULL, user_id TEXT NOT NULL,
  dish_name TEXT NOT NULL, quantity, PRIMARY KEY (restaurant, user_id, dish_name));
"""


def _dish(info: dict[str, Any], restaurant_name: str) -> dict[str, Any]:
    """A restaurant scenario dish record with the ``restaurant_name`` it belongs to."""
    return {**restaurant.dish_record(info), "restaurant_name": restaurant_name}


def _put(conn: sqlite3.Connection, table: str, r: str, name: str, rec: dict[str, Any]) -> None:
    conn.execute(
        f"INSERT INTO {table}(restaurant, name, record) VALUES (?, ?, ?) "
        "ON CONFLICT(restaurant, name) DO UPDATE SET record = excluded.record",
        (r, name, canonical_json(rec)),
    )


def _get(conn: sqlite3.Connection, table: str, r: str, name: str) -> dict[str, Any] | None:
    row = conn.execute(
        f"SELECT record FROM {table} WHERE restaurant = ? AND name = ?", (r, name)
    ).fetchone()
    return json.loads(row[0]) if row else None


def _all(conn: sqlite3.Connection, table: str, r: str) -> list[dict[str, Any]]:
    rows = conn.execute(f"SELECT record FROM {table} WHERE restaurant = ? ORDER BY rowid", (r,))
    return [json.loads(x) for (x,) in rows]


def load(conn: sqlite3.Connection, seed: dict[str, Any]) -> None:
    """Seed: flat ``dishes``, ``set_meals`` and ``user_orders`` lists, each entry naming its
    ``restaurant_name`` (the official layout)."""
    for info in seed.get("dishes", []):
        r = str(info.get("restaurant_name") or "").lower()
        d = _dish(info, r)
        if r and d["name"]:
            conn.execute("INSERT OR IGNORE INTO restaurants VALUES (?)", (r,))
            _put(conn, "dishes", r, d["name"], d)
    for info in seed.get("set_meals", []):
        r, name = str(info.get("restaurant_name") or "").lower(), str(info.get("name", "")).lower()
        if not (r and name):
            continue
        conn.execute("INSERT OR IGNORE INTO restaurants VALUES (?)", (r,))
        inc = [
            {"dish_name": str(i.get("dish_name", " ")).lower(), "quantity": i.get("quantity", 1.0)}
            for i in info.get("included_dishes", [])
        ]
        rec = {
            "name": name,
            "included_dishes": [i for i in inc if _get(conn, "dishes", r, i["dish_name"])],
            "set_meal_price": info.get("set_meal_price", 0.0),
            "set_meal_discount": info.get("set_meal_discount", 1.0),
            "restaurant_name": r,
        }
        _put(conn, "set_meals", r, name, rec)
    for order in seed.get("user_orders", []):
        r, uid = str(order.get("restaurant_name") or "").lower(), order.get("user_id")
        if not (r and uid):
            continue
        conn.execute("INSERT OR IGNORE INTO restaurants VALUES (?)", (r,))
        conn.execute("INSERT OR IGNORE INTO orders VALUES (?, ?)", (r, uid))
        for item in order.get("items", []):
            conn.execute(
                "INSERT OR REPLACE INTO order_items VALUES (?, ?, ?, ?)",
                (r, uid, str(item.get("dish_name", " ")).lower(), item.get("quantity", 1.0)),
            )


def _order(conn: sqlite3.Connection, r: str, uid: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT dish_name, quantity FROM order_items WHERE restaurant = ? AND user_id = ? "
        "ORDER BY rowid",
        (r, uid),
    )
    return [{"dish_name": n, "quantity": q} for n, q in rows]


def _table(conn: sqlite3.Connection, table: str, r: str) -> RawJSON:
    rows = conn.execute(
        f"SELECT name, record FROM {table} WHERE restaurant = ? ORDER BY name", (r,)
    )
    return RawJSON(
        "{" + ",".join(json.dumps(n, ensure_ascii=False) + ":" + x for n, x in rows) + "}"
    )


def dump(conn: sqlite3.Connection, rules=None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for (r,) in conn.execute("SELECT name FROM restaurants ORDER BY name"):
        users = conn.execute("SELECT user_id FROM orders WHERE restaurant = ?", (r,))
        out[r] = {
            "catalog": _table(conn, "dishes", r),
            "set_meals": _table(conn, "set_meals", r),
            "user_orders": {
                u: sorted(_order(conn, r, u), key=lambda x: x["dish_name"]) for (u,) in users
            },
        }
    return {"restaurants": out}


def _containing(conn: sqlite3.Connection, table: str, r: str, query: str) -> list[dict]:
    q = str(query).lower()
    return [x for x in _all(conn, table, r) if q in x["name"] or x["name"] in q]


def lookup(conn: sqlite3.Connection, query: str) -> set[str]:
    """Dish and set-meal names of every restaurant that contain ``query`` or are contained in
    it (the official evaluator asks every restaurant)."""
    return {
        x["name"]
        for (r,) in conn.execute("SELECT name FROM restaurants")
        for t in ("dishes", "set_meals")
        for x in _containing(conn, t, r, query)
    } | {n for (n,) in conn.execute("SELECT name FROM restaurants") if _contains(n, query)}


def _contains(a: str, b: str) -> bool:
    a, b = str(a).lower(), str(b).lower()
    return bool(a and b) and (a in b or b in a)


def _store(ctx: Ctx, restaurant_name: Any) -> str:
    """The restaurant's key; an unknown one fails (``unknown_restaurant=error``) or is created
    empty (``create``, the official ``_get_store``)."""
    r = str(restaurant_name).lower()
    if ctx.conn.execute("SELECT 1 FROM restaurants WHERE name = ?", (r,)).fetchone():
        return r
    if ctx.rules.unknown_restaurant == "create":
        ctx.conn.execute("INSERT INTO restaurants VALUES (?)", (r,))
        return r
    raise ToolError(f"Restaurant '{restaurant_name}' not found.")


def _existing(ctx: Ctx, r: str, dish_name: str) -> dict[str, Any]:
    d = _get(ctx.conn, "dishes", r, dish_name.lower())
    if d is None:
        raise ToolError(f"Dish '{dish_name}' not found in catalog.")
    return d


def _add_dish(ctx: Ctx, restaurant_name, *values: Any) -> dict[str, Any]:
    info = restaurant.dish_info(values)  # its check comes before the restaurant's
    r = _store(ctx, restaurant_name)
    d = _dish(info, r)
    _put(ctx.conn, "dishes", r, d["name"], d)
    return {"status": "success", "message": f"Dish '{values[0]}' added/updated successfully."}


def remove_dish_from_catalog(ctx: Ctx, restaurant_name, dish_name):
    r = _store(ctx, restaurant_name)
    d = _existing(ctx, r, dish_name)
    ctx.conn.execute("DELETE FROM dishes WHERE restaurant = ? AND name = ?", (r, d["name"]))
    ctx.conn.execute(
        "DELETE FROM order_items WHERE restaurant = ? AND dish_name = ?", (r, d["name"])
    )
    return {"status": "success", "message": f"Dish '{dish_name}' removed from catalog."}


def _update(ctx: Ctx, restaurant_name, dish_name, field: str, value) -> dict[str, Any]:
    r = _store(ctx, restaurant_name)
    d = _existing(ctx, r, dish_name)
    d[field] = value
    _put(ctx.conn, "dishes", r, d["name"], d)
    return {"status": "success", "message": f"{field} of dish '{dish_name}' updated to {value}."}


def update_dish_price(ctx: Ctx, restaurant_name, dish_name, new_price):
    return _update(ctx, restaurant_name, dish_name, "price", new_price)


def update_dish_discount(ctx: Ctx, restaurant_name, dish_name, new_discount):
    return _update(ctx, restaurant_name, dish_name, "discount", new_discount)


def _fuzzy(ctx: Ctx, restaurant_name, dish_name, field: str) -> dict[str, Any]:
    found = _containing(ctx.conn, "dishes", _store(ctx, restaurant_name), dish_name)
    if not found:
        message = f"No dishes found containing '{dish_name}'."
        if ctx.rules.unknown_restaurant == "create":
            # the official tool returns its error (the created restaurant stays)
            return {"status": "error", "message": message}
        raise ToolError(message)
    return {"status": "success", "matching_dishes": {d["name"]: d[field] for d in found}}


def _where(ctx: Ctx, restaurant_name, pred, key: str = "dishes") -> dict[str, Any]:
    r = _store(ctx, restaurant_name)
    return {key: [d["name"] for d in _all(ctx.conn, "dishes", r) if pred(d)]}


def filter_dishes_by_price_range(ctx: Ctx, restaurant_name, min_price, max_price):
    return _where(ctx, restaurant_name, lambda d: min_price <= d["price"] <= max_price)


def list_all_discounted_dishes(ctx: Ctx, restaurant_name):
    return _where(ctx, restaurant_name, lambda d: d["discount"] < 1.0, "discounted_dishes")


def create_set_meal(
    ctx: Ctx, restaurant_name, set_meal_name, included_dishes, set_meal_price, set_meal_discount
):
    r = _store(ctx, restaurant_name)
    inc = []
    for item in included_dishes:
        d = _existing(ctx, r, str(item.get("dish_name", " ")))
        inc.append({"dish_name": d["name"], "quantity": item.get("quantity", 1.0)})
    key = set_meal_name.lower()
    rec = {
        "name": key,
        "included_dishes": inc,
        "set_meal_price": set_meal_price,
        "set_meal_discount": set_meal_discount,
        "restaurant_name": r,
    }
    _put(ctx.conn, "set_meals", r, key, rec)
    return {"status": "success", "message": f"Set meal '{set_meal_name}' created successfully."}


def get_set_meal_details(ctx: Ctx, restaurant_name, set_meal_name):
    m = _get(ctx.conn, "set_meals", _store(ctx, restaurant_name), set_meal_name.lower())
    if m is None:
        raise ToolError(f"Set meal '{set_meal_name}' not found.")
    return {
        "name": m["name"],
        "included_dishes": m["included_dishes"],
        "price": m["set_meal_price"],
        "discount": m["set_meal_discount"],
    }


def find_set_meals_containing_dish(ctx: Ctx, restaurant_name, dish_name):
    r, key = _store(ctx, restaurant_name), dish_name.lower()
    return {
        "set_meals": [
            m["name"]
            for m in _all(ctx.conn, "set_meals", r)
            if any(i["dish_name"] == key for i in m["included_dishes"])
        ]
    }


def _add(ctx: Ctx, r: str, uid: str, key: str, quantity) -> None:
    conn = ctx.conn
    conn.execute("INSERT OR IGNORE INTO orders VALUES (?, ?)", (r, uid))
    row = conn.execute(
        "SELECT quantity FROM order_items WHERE restaurant = ? AND user_id = ? AND dish_name = ?",
        (r, uid, key),
    ).fetchone()
    if row:
        conn.execute(
            "UPDATE order_items SET quantity = ? WHERE restaurant = ? AND user_id = ? "
            "AND dish_name = ?",
            (row[0] + quantity, r, uid, key),
        )
    else:
        conn.execute("INSERT INTO order_items VALUES (?, ?, ?, ?)", (r, uid, key, quantity))


def _remove(ctx: Ctx, r: str, uid: str, key: str, quantity, label: str) -> None:
    conn, where = ctx.conn, "restaurant = ? AND user_id = ? AND dish_name = ?"
    row = conn.execute(f"SELECT quantity FROM order_items WHERE {where}", (r, uid, key)).fetchone()
    if row is None:
        raise ToolError(f"{label} not found in order for user {uid}.")
    left = row[0] - quantity
    if left <= 0:
        conn.execute(f"DELETE FROM order_items WHERE {where}", (r, uid, key))
    else:
        conn.execute(f"UPDATE order_items SET quantity = ? WHERE {where}", (left, r, uid, key))


def _add_line(ctx: Ctx, restaurant_name, user_id, name, quantity, line) -> dict[str, Any]:
    missing = line.missing.format(n=name)
    r = _store(ctx, restaurant_name)
    key = name.lower()
    if _get(ctx.conn, line.table, r, key) is None:
        raise ToolError(missing)
    _add(ctx, r, user_id, key, quantity)
    return {"status": "success", "message": line.added.format(n=name, q=quantity, u=user_id)}


def _remove_line(ctx: Ctx, restaurant_name, user_id, name, quantity, line) -> dict[str, Any]:
    r = _store(ctx, restaurant_name)
    _remove(ctx, r, user_id, name.lower(), quantity, line.label.format(n=name))
    return {"status": "success", "message": line.removed.format(n=name, q=quantity)}


_LINES = {
    **restaurant.ORDER_LINES,
    "dish": replace(restaurant.ORDER_LINES["dish"], added="Added {q} x {n} to order."),
}
"""The restaurant scenario's order lines; the official order tool's dish message names no user."""


def clear_user_order(ctx: Ctx, restaurant_name, user_id):
    r = _store(ctx, restaurant_name)
    ctx.conn.execute("DELETE FROM order_items WHERE restaurant = ? AND user_id = ?", (r, user_id))
    return {"status": "success", "message": f"Order cleared for user {user_id}."}


def get_user_order_summary(ctx: Ctx, restaurant_name, user_id):
    items = _order(ctx.conn, _store(ctx, restaurant_name), user_id)
    return {"user_id": user_id, "items": items, "total_items": len(items)}


def _items(ctx: Ctx, r: str, dishes) -> list[tuple[str, Any, float]]:
    """(kind, record, quantity) per listed item with quantity > 0; unknown names skipped."""
    out = []
    for item in dishes:
        name = str(item.get("product_name", item.get("dish_name", " "))).lower()
        q = item.get("quantity", 0)
        if q <= 0:
            continue
        d = _get(ctx.conn, "dishes", r, name)
        if d is not None:
            out.append(("dish", d, q))
            continue
        m = _get(ctx.conn, "set_meals", r, name)
        if m is not None:
            out.append(("set", m, q))
    return out


def _parts(ctx: Ctx, r: str, m: dict[str, Any], q) -> list[tuple[dict[str, Any], float]]:
    parts = []
    for inc in m["included_dishes"]:
        d = _get(ctx.conn, "dishes", r, inc["dish_name"])
        if d is not None:
            parts.append((d, inc.get("quantity", 1.0) * q))
    return parts


def _result(restaurant_name, user_id, key: str, value) -> dict[str, Any]:
    return {"restaurant_name": restaurant_name, "user_id": user_id, key: value}


def compute_total_payment(ctx: Ctx, restaurant_name, user_id, dishes):
    r = _store(ctx, restaurant_name)
    total = 0.0
    for kind, rec, q in _items(ctx, r, dishes):
        if kind == "dish":
            total += rec["price"] * rec["discount"] * q
        elif ctx.rules.set_meal_price == "stored" or (rec["set_meal_price"] or 0) > 0:
            total += (rec["set_meal_price"] or 0) * rec["set_meal_discount"] * q
        else:  # no price of its own: priced from its dishes, then the set's discount
            base = sum(d["price"] * d["discount"] * qq for d, qq in _parts(ctx, r, rec, q))
            total += base * rec["set_meal_discount"]
    return _result(restaurant_name, user_id, "total_payment", round2(total))


def _dishes_of(ctx: Ctx, r: str, dishes) -> list[tuple[dict[str, Any], float]]:
    out = []
    for kind, rec, q in _items(ctx, r, dishes):
        out.extend([(rec, q)] if kind == "dish" else _parts(ctx, r, rec, q))
    return out


def compute_total_tax(ctx: Ctx, restaurant_name, user_id, dishes):
    r = _store(ctx, restaurant_name)
    total = sum(
        d["price"] * d["tax_rate"] / (1 + d["tax_rate"]) * d["discount"] * q
        for d, q in _dishes_of(ctx, r, dishes)
    )
    return _result(restaurant_name, user_id, "total_tax", round2(total))


def compute_total_nutrition(ctx: Ctx, restaurant_name, user_id, dishes):
    r = _store(ctx, restaurant_name)
    totals = dict.fromkeys(NUTRIENTS, 0.0)
    for d, q in _dishes_of(ctx, r, dishes):
        n = d["nutrition"]
        mult = q / 100.0 if n.get("basis") == "PER_100G" else q
        for k in NUTRIENTS:
            totals[k] += (n.get(k) or 0) * mult
    return _result(
        restaurant_name, user_id, "total_nutrition", {k: round2(v) for k, v in totals.items()}
    )


_GENERATED = {
    "add_dish_to_catalog": named_tool(
        "add_dish_to_catalog", ("restaurant_name", *restaurant.DISH_PARAMS), _add_dish
    ),
    **table_tools(_fuzzy, ("restaurant_name", "dish_name"), restaurant.DISH_FIELDS),
    **finder_tools(_where, ("restaurant_name",), restaurant.DISH_FINDERS),
    **restaurant.order_tools(_add_line, _remove_line, ("restaurant_name",), _LINES),
}
TOOLS = tool_table({**globals(), **_GENERATED}, restaurant.TOOL_NAMES)

SCENARIO = ScenarioDef(
    name="order",
    ddl=DDL,
    load=load,
    dump=dump,
    tools=TOOLS,
    name_keys=("dish_name", "set_meal_name", "restaurant_name", "product_name"),
    name_match="lookup",
    lookup=lookup,
    query_tools=frozenset(set(TOOLS) - restaurant.WRITE_TOOLS),
)
