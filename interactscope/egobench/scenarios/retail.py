"""Retail: product catalogue, user carts and shopping lists (tools/retail_tools.json)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from interactscope.egobench.scenarios.base import (
    LABELLED_NUTRITION_KEYS,
    Ctx,
    ScenarioDef,
    ToolError,
    by_name_sorted,
    catalogue_ddl,
    check_nutrition,
    containing,
    dumps,
    finder_tools,
    lower_list,
    matching,
    names_where,
    put,
    record,
    round2,
    table_tools,
    tool_table,
)

DDL = (
    catalogue_ddl("products")
    + """
CREATE TABLE carts (user_id TEXT PRIMARY KEY);
CREATE TABLE cart_items (user_id TEXT NOT NULL, product_name TEXT NOT NULL, quantity,
  category, price, tax_rate, discount, PRIMARY KEY (user_id, product_name));
CREATE TABLE shopping_lists (user_id TEXT PRIMARY KEY, items TEXT NOT NULL);
"""
)
NUTRITION_KEYS = LABELLED_NUTRITION_KEYS


def _product(info: dict[str, Any]) -> dict[str, Any]:
    nutrition = info.get("nutrition") or {}
    return {
        "name": str(info.get("name", "")).lower(),
        "category": str(info.get("category", " ")).lower(),
        "sell_type": str(info.get("sell_type", "single_item")).lower(),
        "price": info.get("price", 0.0),
        "tax_rate": info.get("tax_rate", 0.0),
        "discount": info.get("discount", 1.0),
        "nutritional_characteristics": lower_list(info.get("nutritional_characteristics")),
        "taste": lower_list(info.get("taste")),
        "country_of_origin": str(info.get("country_of_origin", " ")).lower(),
        "nutrition": {k: nutrition.get(k) for k in NUTRITION_KEYS},
        "allergens": list(info.get("allergens") or []),
    }


def load(conn: sqlite3.Connection, seed: dict[str, Any]) -> None:
    for info in seed.get("products", []):
        p = _product(info)
        if p["name"]:
            put(conn, "products", p["name"], p)
    for cart in seed.get("user_carts", []):
        uid = cart.get("user_id")
        if not uid:
            continue
        conn.execute("INSERT OR IGNORE INTO carts VALUES (?)", (uid,))
        for item in cart.get("items", []):
            name = str(item.get("product_name", " ")).lower()
            p = record(conn, "products", name) or {
                "category": " ",
                "price": 0.0,
                "tax_rate": 0.0,
                "discount": 1.0,
            }
            conn.execute(
                "INSERT OR REPLACE INTO cart_items VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    uid,
                    name,
                    item.get("quantity", 0.0),
                    p["category"],
                    p["price"],
                    p["tax_rate"],
                    p["discount"],
                ),
            )
    for sl in seed.get("user_shopping_lists", []):
        if sl.get("user_id"):
            items = [
                {
                    "product_name": str(i.get("product_name", " ")).lower(),
                    "quantity": i.get("quantity", 0),
                }
                for i in sl.get("items", [])
            ]
            conn.execute(
                "INSERT OR REPLACE INTO shopping_lists VALUES (?, ?)", (sl["user_id"], dumps(items))
            )


def _cart(conn: sqlite3.Connection, user_id: str) -> list[dict[str, Any]]:
    cols = ("product_name", "quantity", "category", "price", "tax_rate", "discount")
    rows = conn.execute(
        "SELECT product_name, quantity, category, price, tax_rate, discount FROM cart_items "
        "WHERE user_id = ? ORDER BY rowid",
        (user_id,),
    )
    return [dict(zip(cols, r, strict=True)) for r in rows]


def dump(conn: sqlite3.Connection, rules=None) -> dict[str, Any]:
    carts = {}
    for (uid,) in conn.execute("SELECT user_id FROM carts"):
        carts[uid] = sorted(_cart(conn, uid), key=lambda x: x["product_name"])
    lists = {u: json.loads(i) for u, i in conn.execute("SELECT user_id, items FROM shopping_lists")}
    return {
        "catalog": by_name_sorted(conn, "products"),
        "user_carts": carts,
        "user_shopping_lists": lists,
    }


def lookup(conn: sqlite3.Connection, query: str) -> set[str]:
    return {p["name"] for p in containing(conn, "products", query)}


def _found(ctx: Ctx, product_name: str) -> list[dict[str, Any]]:
    return matching(
        ctx.conn, "products", product_name, f"No matching products found for '{product_name}'."
    )


PRODUCT_FIELDS = {
    "get_price": "price",
    "get_tax_rate": "tax_rate",
    "get_category": "category",
    "get_discount": "discount",
    "get_nutrition": "nutrition",
}
"""The product field each ``get_*`` tool reads from the products whose names match."""


def _matches(ctx: Ctx, product_name: str, field: str) -> dict[str, Any]:
    found = _found(ctx, product_name)
    rows = [{"product_name": p["name"], field: p[field]} for p in found]
    return {"products": rows, "count": len(rows)}


def add_product(
    ctx: Ctx,
    product_name,
    category,
    price,
    tax_rate,
    discount,
    nutritional_characteristics,
    taste,
    country_of_origin,
    nutrition,
    allergens=None,
    sell_type="single_item",
):
    check_nutrition(nutrition, NUTRITION_KEYS)
    p = _product(
        {
            "name": product_name,
            "category": category,
            "sell_type": sell_type,
            "price": price,
            "tax_rate": tax_rate,
            "discount": discount,
            "nutritional_characteristics": nutritional_characteristics,
            "taste": taste,
            "country_of_origin": country_of_origin,
            "nutrition": nutrition,
            "allergens": allergens or [],
        }
    )
    put(ctx.conn, "products", p["name"], p)
    return {"status": "success", "message": f"Product '{product_name}' added/updated successfully."}


def delete_product(ctx: Ctx, product_name):
    names = [p["name"] for p in _found(ctx, product_name)]
    for n in names:
        ctx.conn.execute("DELETE FROM products WHERE name = ?", (n,))
        ctx.conn.execute("DELETE FROM cart_items WHERE product_name = ?", (n,))
    return {"status": "success", "deleted_products": names}


PRODUCT_FINDERS = {
    "find_products_by_nutritional_characteristic": (
        "characteristic",
        "nutritional_characteristics",
        "has",
    ),
    "find_products_by_taste": ("taste", "taste", "has"),
    "find_products_by_country_of_origin": ("country", "country_of_origin", "is"),
}
"""``{product_names: [...]}`` whose field is / holds the lower-cased value."""


def _names_where(ctx: Ctx, pred) -> dict[str, Any]:
    return {"product_names": names_where(ctx.conn, "products", pred)}


def find_products_by_price_range(ctx: Ctx, min_price, max_price):
    if min_price < 0 or max_price < 0:
        raise ToolError("Price cannot be negative.")
    if min_price > max_price:
        raise ToolError("Minimum price cannot be greater than maximum price.")
    return _names_where(ctx, lambda p: min_price <= p["price"] <= max_price)


def list_discounted_products(ctx: Ctx):
    return _names_where(ctx, lambda p: p["discount"] < 1.0)


def add_to_cart(ctx: Ctx, user_id, product_name, qty, category, price, tax_rate, discount):
    if qty <= 0:
        raise ToolError("Quantity must be greater than 0.")
    if price < 0 or tax_rate < 0:
        raise ToolError("Price and tax rate cannot be negative.")
    if not 0 <= discount <= 1.0:
        raise ToolError("Discount must be between 0 and 1.0.")
    key = product_name.lower()
    conn = ctx.conn
    conn.execute("INSERT OR IGNORE INTO carts VALUES (?)", (user_id,))
    row = conn.execute(
        "SELECT quantity FROM cart_items WHERE user_id = ? AND product_name = ?", (user_id, key)
    ).fetchone()
    values = (category.lower(), float(price), float(tax_rate), float(discount))
    if row:
        total = row[0] + float(qty)
        conn.execute(
            "UPDATE cart_items SET quantity = ?, category = ?, price = ?, tax_rate = ?, "
            "discount = ? WHERE user_id = ? AND product_name = ?",
            (total, *values, user_id, key),
        )
        return {
            "status": "success",
            "message": f"Added {qty} more of '{product_name}'. Total quantity: {total}",
        }
    conn.execute(
        "INSERT INTO cart_items VALUES (?, ?, ?, ?, ?, ?, ?)", (user_id, key, float(qty), *values)
    )
    return {"status": "success", "message": f"Added {qty} of '{product_name}' to the cart."}


def get_cart(ctx: Ctx, user_id):
    if not ctx.conn.execute("SELECT 1 FROM carts WHERE user_id = ?", (user_id,)).fetchone():
        return {"cart_items": [], "message": f"User '{user_id}' has no cart or cart is empty."}
    return {"cart_items": _cart(ctx.conn, user_id)}


def remove_from_cart(ctx: Ctx, user_id, product_name, qty):
    if qty <= 0:
        raise ToolError("Quantity must be greater than 0.")
    key = product_name.lower()
    conn = ctx.conn
    row = conn.execute(
        "SELECT quantity FROM cart_items WHERE user_id = ? AND product_name = ?", (user_id, key)
    ).fetchone()
    if row is None:
        raise ToolError(f"Product '{product_name}' not found in user '{user_id}' cart.")
    if row[0] <= qty:
        conn.execute(
            "DELETE FROM cart_items WHERE user_id = ? AND product_name = ?", (user_id, key)
        )
        # the reference drops a cart that became empty (it is part of the state)
        if not conn.execute("SELECT 1 FROM cart_items WHERE user_id = ?", (user_id,)).fetchone():
            conn.execute("DELETE FROM carts WHERE user_id = ?", (user_id,))
        return {"status": "success", "message": f"Removed all '{product_name}'."}
    conn.execute(
        "UPDATE cart_items SET quantity = ? WHERE user_id = ? AND product_name = ?",
        (row[0] - qty, user_id, key),
    )
    return {
        "status": "success",
        "message": f"Removed {qty} of '{product_name}'. Remaining quantity: {row[0] - qty}",
    }


def clear_cart(ctx: Ctx, user_id):
    conn = ctx.conn
    if not conn.execute("SELECT 1 FROM carts WHERE user_id = ?", (user_id,)).fetchone():
        return {"status": "info", "message": f"User '{user_id}' has no cart to clear."}
    conn.execute("DELETE FROM cart_items WHERE user_id = ?", (user_id,))
    conn.execute("DELETE FROM carts WHERE user_id = ?", (user_id,))
    return {"status": "success", "message": f"Cart for user '{user_id}' cleared successfully."}


def _compute(ctx: Ctx, user_id, products, per_item, total_key, init, item_key=None):
    """``per_item(total, product, qty) -> total``; with ``item_key`` each ``details`` entry also
    gets the item's own amount under that key, rounded to 2 decimals (retail_db's
    ``subtotal`` / ``tax_amount``)."""
    if not products:
        raise ToolError("Products list cannot be empty.")
    total, details, missing = init(), [], []
    for item in products:
        name = str(item.get("product_name", " ")).lower()
        qty = item.get("quantity", 0)
        if not isinstance(qty, (int, float)) or qty <= 0:
            continue
        p = record(ctx.conn, "products", name)
        if p is None:
            missing.append(name)
            continue
        total = per_item(total, p, qty)
        entry = {"product_name": name, "quantity": qty}
        if item_key is not None:
            entry[item_key] = round2(per_item(0.0, p, qty))
        details.append(entry)
    out = {"user_id": user_id, total_key: total, "details": details}
    if missing:
        out["status"] = "partial_success"
        out["message"] = f"{len(missing)} product(s) not found in catalog: {', '.join(missing)}"
    else:
        out["status"] = "success"
        out["message"] = "Calculation completed successfully."
    return out


def compute_total_payment(ctx: Ctx, user_id, products):
    out = _compute(
        ctx,
        user_id,
        products,
        lambda t, p, q: t + p["price"] * p["discount"] * q,
        "total",
        float,
        "subtotal",
    )
    out["total"] = round2(out["total"])
    return out


def compute_total_tax(ctx: Ctx, user_id, products):
    def add(t, p, q):
        if p["tax_rate"] >= 0:
            t += p["price"] * p["tax_rate"] / (1 + p["tax_rate"]) * p["discount"] * q
        return t

    out = _compute(ctx, user_id, products, add, "total_tax", float, "tax_amount")
    out["total_tax"] = round2(out["total_tax"])
    return out


def compute_total_nutrition(ctx: Ctx, user_id, products):
    keys = NUTRITION_KEYS[1:]

    def add(t, p, q):
        for k in keys:
            if p["nutrition"].get(k) is not None:
                t[k] += p["nutrition"][k] * q
        return t

    out = _compute(ctx, user_id, products, add, "total_nutrition", lambda: dict.fromkeys(keys, 0.0))
    out["total_nutrition"] = {
        "basis": "TOTAL",
        **{k: round2(v) for k, v in out["total_nutrition"].items()},
    }
    return out


def get_shopping_list(ctx: Ctx, user_id):
    row = ctx.conn.execute(
        "SELECT items FROM shopping_lists WHERE user_id = ?", (user_id,)
    ).fetchone()
    if row is None:
        return {
            "shopping_list": [],
            "status": "info",
            "message": f"User '{user_id}' has no shopping list or it is empty.",
        }
    return {"shopping_list": json.loads(row[0])}


TOOL_NAMES = (
    "add_product",
    "delete_product",
    "find_products_by_nutritional_characteristic",
    "find_products_by_taste",
    "find_products_by_country_of_origin",
    "get_price",
    "find_products_by_price_range",
    "get_tax_rate",
    "get_category",
    "get_discount",
    "get_nutrition",
    "list_discounted_products",
    "add_to_cart",
    "get_cart",
    "remove_from_cart",
    "clear_cart",
    "compute_total_payment",
    "compute_total_tax",
    "compute_total_nutrition",
    "get_shopping_list",
)
TOOLS = tool_table(
    {
        **globals(),
        **table_tools(_matches, ("product_name",), PRODUCT_FIELDS),
        **finder_tools(_names_where, (), PRODUCT_FINDERS),
    },
    TOOL_NAMES,
)

SCENARIO = ScenarioDef(
    name="retail",
    ddl=DDL,
    load=load,
    dump=dump,
    tools=TOOLS,
    name_keys=("product_name",),
    name_match="lookup",
    lookup=lookup,
    query_tools=frozenset(
        {
            "get_price",
            "get_tax_rate",
            "get_category",
            "get_discount",
            "get_nutrition",
            "find_products_by_nutritional_characteristic",
            "find_products_by_taste",
            "find_products_by_country_of_origin",
            "find_products_by_price_range",
            "list_discounted_products",
        }
    ),
)
