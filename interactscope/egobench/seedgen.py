"""This project's own seed databases for kitchen and restaurant (the published ones are not
available under a clear licence). Every name the task files use gets a catalogue entry with
invented, deterministic attributes (a ``random.Random`` seeded by the name), in the published
shape; ``python -m interactscope.egobench.seedgen DATA_DIR`` rewrites ``db/kitchen.json``,
``db/restaurant.json`` and ``db/restaurant5.json``."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

NOTE = (
    "interactscope's own seed database (invented values in the published shape; not "
    "EgoBench data); built by interactscope.egobench.seedgen from the task files"
)
TASTES = ["sweet", "salty", "spicy", "sour", "bitter", "umami", "mild", "savory"]
TAGS = [
    "low_calories",
    "low_fat",
    "low_sugar",
    "low_sodium",
    "high_fiber",
    "high_protein",
    "gluten_free",
    "vegan",
]
ALLERGENS = ["gluten", "dairy", "nuts", "shellfish", "soy", "egg"]
LOCATIONS = ["fridge", "freezer", "pantry", "countertop", "spice_rack"]
CATEGORIES = ["vegetable", "meat", "dairy", "carbs/grains", "seasoning", "fruits", "drinks"]


def _rng(name: str) -> random.Random:
    return random.Random(name.lower())


def _nutrition(r: random.Random, basis: str | None) -> dict[str, Any]:
    out = {
        "calories_kcal": r.randint(20, 600),
        "protein_g": round(r.uniform(0, 40), 1),
        "fat_g": round(r.uniform(0, 40), 1),
        "carbs_g": round(r.uniform(0, 80), 1),
        "sugar_g": round(r.uniform(0, 30), 1),
        "sodium_mg": r.randint(0, 1200),
        "fiber_g": round(r.uniform(0, 10), 1),
    }
    if basis:
        out = {"basis": basis, "serving_size_g": r.choice([100, 150, 250, 350]), **out}
    return out


def _names(
    tasks: list[dict[str, Any]], keys: tuple[str, ...], tools: tuple[str, ...] = ()
) -> list[str]:
    seen: dict[str, str] = {}
    for t in tasks:
        for c in t.get("ground_truth", []):
            p = c.get("parameters", {})
            for k in keys:
                if isinstance(p.get(k), str) and p[k].strip():
                    seen.setdefault(p[k].lower(), p[k])
            for v in p.values():
                if isinstance(v, list):
                    for x in v:
                        if isinstance(x, str) and c.get("tool_name") in tools:
                            seen.setdefault(x.lower(), x)
                        if isinstance(x, dict):
                            for k in keys:
                                if isinstance(x.get(k), str):
                                    seen.setdefault(x[k].lower(), x[k])
        if t.get("key") in keys:
            for v in t.get("value") or []:
                seen.setdefault(str(v).lower(), str(v))
    return sorted(seen.values(), key=str.lower)


def _users(tasks: list[dict[str, Any]]) -> list[str]:
    return sorted(
        {
            c["parameters"]["user_id"]
            for t in tasks
            for c in t.get("ground_truth", [])
            if c.get("parameters", {}).get("user_id")
        }
    )


def _prior_items(
    tasks: list[dict[str, Any]], removers: dict[str, str], adders: set[str]
) -> dict[str, dict[str, float]]:
    """Items that a GT removes before adding them in the same task: they must be in the seed
    (user -> name -> largest quantity removed)."""
    out: dict[str, dict[str, float]] = {}
    for t in tasks:
        added: set[tuple[str, str]] = set()
        for c in t.get("ground_truth", []):
            p, tool = c.get("parameters", {}), c.get("tool_name")
            uid = p.get("user_id")
            if tool in adders:
                added.add(
                    (uid, str(p.get(next(iter(set(p) & set(removers.values())), ""), "")).lower())
                )
            elif tool in removers and uid:
                name = str(p.get(removers[tool], "")).lower()
                if (uid, name) not in added:
                    q = p.get("quantity", 1)
                    q = float(q) if isinstance(q, (int, float)) else 1.0
                    cur = out.setdefault(uid, {})
                    cur[name] = max(cur.get(name, 0.0), q)
    return out


def kitchen_seed(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """Kitchen seed: ingredients, recipes (each using 3-5 of the ingredients), empty menus."""
    ingredients = _names(tasks, ("ingredient_name", "product_name"))
    recipes = _names(
        tasks, ("recipe_name",), ("tally_total_tastes", "tally_total_nutritional_characteristics")
    )
    ing = []
    for n in ingredients:
        r = _rng(n)
        ing.append(
            {
                "name": n,
                "quantity": r.choice([0, 0, 1, 2, 3, 5]),
                "category": r.choice(CATEGORIES),
                "storage_location": r.choice(LOCATIONS),
                "expiry_date": f"2026-{r.randint(5, 8):02d}-{r.randint(1, 28):02d}",
                "nutrition": _nutrition(r, None),
            }
        )
    rec = []
    for n in recipes:
        r = _rng(n)
        parts = r.sample(ingredients, k=min(len(ingredients), r.randint(3, 5)))
        rec.append(
            {
                "name": n,
                "ingredients": [
                    {"ingredient_name": p, "quantity": r.choice([0.5, 1, 2, 3])} for p in parts
                ],
                "allergens": r.sample(ALLERGENS, k=r.randint(0, 2)),
                "taste": r.sample(TASTES, k=r.randint(1, 3)),
                "nutritional_characteristics": r.sample(TAGS, k=r.randint(1, 3)),
                "steps": [f"Step {i + 1}: prepare {p}." for i, p in enumerate(parts)],
            }
        )
    users = _users(tasks)
    prior = _prior_items(
        tasks, {"remove_from_shopping_list": "ingredient_name"}, {"add_to_shopping_list"}
    )
    return {
        "_interactscope_seed": NOTE,
        "ingredients": ing,
        "recipes": rec,
        "user_menus": [{"user_id": u, "recipes": []} for u in users],
        "user_shopping_lists": [
            {
                "user_id": u,
                "items": [
                    {"ingredient_name": n, "quantity": q}
                    for n, q in sorted(prior.get(u, {}).items())
                ],
            }
            for u in users
        ],
    }


def restaurant_seed(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """Restaurant seed: dishes (category/price/tax/discount from the GT calls that give them),
    set meals (named by the set-meal calls) of 2-3 dishes, empty orders."""
    given: dict[str, dict[str, Any]] = {}
    sets: dict[str, str] = {}
    for t in tasks:
        for c in t.get("ground_truth", []):
            p = c.get("parameters", {})
            if c.get("tool_name") == "add_dish_to_order" and "price" in p:
                given.setdefault(p["dish_name"].lower(), p)
            if "set_meal_name" in p:
                sets.setdefault(p["set_meal_name"].lower(), p["set_meal_name"])
    names = [n for n in _names(tasks, ("dish_name",)) if n.lower() not in sets]
    dishes = []
    for n in names:
        r = _rng(n)
        g = given.get(n.lower(), {})
        dishes.append(
            {
                "name": n,
                "category": g.get(
                    "category", r.choice(["Pizza", "Pasta", "Salads", "Antipasti & Snacks"])
                ),
                "price": g.get("price", r.randint(8, 60)),
                "tax_rate": g.get("tax_rate", r.choice([0.06, 0.08, 0.1])),
                "discount": g.get("discount", r.choice([1, 1, 0.9, 0.8])),
                "nutritional_characteristics": r.sample(TAGS, k=r.randint(1, 3)),
                "taste": r.sample(TASTES, k=r.randint(1, 3)),
                "allergens": r.sample(ALLERGENS, k=r.randint(0, 2)),
                "nutrition": _nutrition(r, "PER_SERVING"),
            }
        )
    meals = []
    for n in sorted(sets.values(), key=str.lower):
        r = _rng(n)
        parts = r.sample(names, k=min(len(names), r.randint(2, 3)))
        meals.append(
            {
                "name": n,
                "included_dishes": [{"dish_name": p, "quantity": 1} for p in parts],
                "set_meal_price": r.choice([0, r.randint(40, 120)]),
                "set_meal_discount": r.choice([1, 0.9, 0.85]),
            }
        )
    prior = _prior_items(
        tasks,
        {"remove_dish_from_order": "dish_name", "remove_set_meal_from_order": "set_meal_name"},
        {"add_dish_to_order", "add_set_meal_to_order"},
    )
    return {
        "_interactscope_seed": NOTE,
        "dishes": dishes,
        "set_meals": meals,
        "user_orders": [
            {
                "user_id": u,
                "items": [
                    {"dish_name": n, "quantity": q} for n, q in sorted(prior.get(u, {}).items())
                ],
            }
            for u in _users(tasks)
        ],
    }


def write_seeds(data_dir: str | Path) -> list[Path]:
    """(Re)write our kitchen and restaurant seeds from the task files in ``data_dir``."""
    d = Path(data_dir)

    def tasks(*names: str) -> list[dict[str, Any]]:
        out = []
        for n in names:
            p = d / "tasks" / f"{n}.json"
            if p.exists():
                out += json.loads(p.read_text(encoding="utf-8"))
        return out

    plan = {
        "kitchen": kitchen_seed(tasks("kitchen1", "kitchen2", "kitchen3", "kitchen4")),
        "restaurant": restaurant_seed(
            tasks("restaurant1", "restaurant2", "restaurant3", "restaurant4")
        ),
        "restaurant5": restaurant_seed(tasks("restaurant5")),
    }
    written = []
    for name, seed in plan.items():
        p = d / "db" / f"{name}.json"
        p.write_text(json.dumps(seed, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        written.append(p)
    return written


if __name__ == "__main__":
    for path in write_seeds(sys.argv[1]):
        print(path)
