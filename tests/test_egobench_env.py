"""EgoBench environment: tool semantics, structured errors, state hash, dates, saving."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
import time

import pytest

from interactscope.egobench import Environment, load_variant, package_data_dir
from interactscope.egobench.canonical import canonical_json, normalise
from interactscope.egobench.settings import ToolRules

DATA = package_data_dir()


def _add(env, name, qty, price=10.0):
    return env.call(
        "add_to_cart",
        {
            "user_id": "user_101",
            "product_name": name,
            "qty": qty,
            "category": "cookie",
            "price": price,
            "tax_rate": 0.1,
            "discount": 1,
        },
    )


def test_add_to_cart_accumulates_and_stores_callers_fields(retail6):
    env = Environment.from_variant(retail6)
    assert _add(env, "Leibniz Keks", 1).ok
    r = _add(env, "LEIBNIZ KEKS", 2, price=12.5)
    assert r.ok and r.changed
    item = next(
        i
        for i in env.call("get_cart", {"user_id": "user_101"}).output["cart_items"]
        if i["product_name"] == "leibniz keks"
    )
    # 1 + 2, and the last call's price: the caller's values are part of the state
    assert (item["quantity"], item["price"], item["category"]) == (3.0, 12.5, "cookie")


def test_reads_match_by_containment_either_way(retail6):
    env = Environment.from_variant(retail6)
    out = env.call("get_price", {"product_name": "highland speciality shortbread"}).output
    names = {p["product_name"] for p in out["products"]}
    assert names == {
        "highland speciality shortbread assortment",
        "highland speciality shortbread teddy bear",
        "highland speciality shortbread mini",
    }
    longer = env.call("get_price", {"product_name": "a box of Leibniz Keks please"}).output
    assert [p["product_name"] for p in longer["products"]] == ["leibniz keks"]


def test_compute_is_a_pure_function_of_its_list(retail6):
    env = Environment.from_variant(retail6)
    before = env.state_hash()
    # Pallets Biscuits: price 33.6, discount 0.8; 2 of them = 53.76 (not the cart's contents)
    out = env.call(
        "compute_total_payment",
        {"user_id": "user_606", "products": [{"product_name": "Pallets Biscuits", "quantity": 2}]},
    ).output
    assert out["total"] == 53.76 and env.state_hash() == before


def test_errors_are_results_and_change_nothing(retail6):
    env = Environment.from_variant(retail6)
    before = env.state_hash()
    cases = [
        ("no_such_tool", {}, "unknown_tool"),
        (
            "get_taste",
            {"product_name": "x"},
            "unknown_tool",
        ),  # named by a GT, absent from the schema
        ("add_to_cart", {"user_id": "u"}, "invalid_arguments"),
        (
            "add_to_cart",
            {
                "user_id": "u",
                "product_name": "x",
                "qty": "lots",
                "category": "c",
                "price": 1,
                "tax_rate": 0,
                "discount": 1,
            },
            "invalid_arguments",
        ),
        ("get_cart", [1, 2], "invalid_arguments"),
        (
            "remove_from_cart",
            {"user_id": "user_606", "product_name": "nothing", "qty": 1},
            "precondition",
        ),
        (
            "add_to_cart",
            {
                "user_id": "u",
                "product_name": "x",
                "qty": 0,
                "category": "c",
                "price": 1,
                "tax_rate": 0,
                "discount": 1,
            },
            "invalid_arguments",
        ),  # schema: qty > 0
        ("find_products_by_price_range", {"min_price": 5, "max_price": 1}, "precondition"),
    ]
    for name, args, kind in cases:
        r = env.call(name, args)
        assert (r.ok, r.error_kind) == (False, kind), (name, r)
        assert r.error and "\n" not in r.error
    assert env.state_hash() == before


def test_undeclared_arguments_dropped_or_rejected(retail6):
    args = {
        "user_id": "user_101",
        "product_name": "Leibniz Keks",
        "qty": 1,
        "category": "cookie",
        "price": 10,
        "tax_rate": 0.1,
        "discount": 1,
        "note": "gift",
    }
    r = Environment.from_variant(retail6).call("add_to_cart", args)
    assert r.ok and r.ignored == ["note"]
    r = Environment.from_variant(retail6, undeclared="reject").call("add_to_cart", args)
    assert (r.ok, r.error_kind) == (False, "invalid_arguments")


def test_remove_last_item_drops_the_cart(retail6):
    env = Environment.from_variant(retail6)
    seed = env.state_hash()
    assert _add(env, "Leibniz Keks", 2).ok
    assert env.call(
        "remove_from_cart", {"user_id": "user_101", "product_name": "leibniz keks", "qty": 5}
    ).ok
    cart = env.call("get_cart", {"user_id": "user_101"}).output
    seed_cart = Environment.from_variant(retail6).call("get_cart", {"user_id": "user_101"}).output
    assert cart == seed_cart
    assert env.state_hash() == seed


def test_state_hash_independent_of_call_order(retail6):
    a, b = Environment.from_variant(retail6), Environment.from_variant(retail6)
    _add(a, "Leibniz Keks", 1), _add(a, "Desobry Speculoos", 2)
    _add(b, "Desobry Speculoos", 2), _add(b, "Leibniz Keks", 1)
    assert a.state_hash() == b.state_hash() != Environment.from_variant(retail6).state_hash()
    h = load_variant(DATA, "household1")
    x, y = Environment.from_variant(h, 1), Environment.from_variant(h, 1)
    calls = [("Cup", "disinfect", "2026-08-20"), ("Building Blocks", "clean", "2026-08-21")]
    for env, order in ((x, calls), (y, calls[::-1])):
        for name, action, due in order:
            assert env.call(
                "add_to_household_action_list",
                {
                    "user_id": "household_user_02",
                    "name": name,
                    "required_action": action,
                    "due_date": due,
                },
            ).ok
    assert x.state_hash() == y.state_hash()


def test_integral_floats_normalise():
    assert canonical_json({"b": 2.0, "a": [1.5, 3.0, True]}) == '{"a":[1.5,3,true],"b":2}'
    assert canonical_json({"n": "é"}) == '{"n":"é"}'
    from interactscope.egobench.canonical import sha256_of

    assert sha256_of({"a": 2.0}) == hashlib.sha256(b'{"a":2}').hexdigest()


def test_integral_float_arguments_reach_the_same_state(retail6):
    a, b = Environment.from_variant(retail6), Environment.from_variant(retail6)
    _add(a, "Leibniz Keks", 2, price=10)
    _add(b, "Leibniz Keks", 2.0, price=10.0)
    assert a.state_hash() == b.state_hash()


def test_today_phrases_parse():
    from interactscope.egobench.dates import parse_date_phrase

    # August 2026: the 1st is a Saturday and the 31st a Monday
    expect = {
        "the fourth Saturday of August 2026": dt.date(2026, 8, 22),
        "the third Thursday of August 2026": dt.date(2026, 8, 20),
        "two days before August 31, 2026": dt.date(2026, 8, 29),
        "the Friday of the week containing August 17, 2026": dt.date(2026, 8, 21),
        "seven days before the last Monday of August 2026": dt.date(2026, 8, 24),
        "the fifth day after August 20, 2026": dt.date(2026, 8, 25),
        "the last day of August 2026": dt.date(2026, 8, 31),
        "May 7, 2026": dt.date(2026, 5, 7),
    }
    for phrase, day in expect.items():
        assert parse_date_phrase(phrase) == day, phrase


def test_household_present_is_task_today_not_wall_clock(monkeypatch):
    v = load_variant(DATA, "household1")
    # freeze the wall clock far away; nothing may read it
    monkeypatch.setattr(time, "time", lambda: 946684800.0)  # 2000-01-01
    monkeypatch.setattr(time, "time_ns", lambda: 946684800 * 10**9)
    args = {"start_date": "2026-08-10", "end_date": "2026-08-31"}
    task = next(t for t in v.tasks if t.today_text == "August 18, 2026")
    assert task.today == dt.date(2026, 8, 18)
    late = Environment.from_variant(v, task).call("find_items_used_during_date_range", args)
    early = Environment(v.scenario, v.tools, v.seed, today=dt.date(2026, 8, 5)).call(
        "find_items_used_during_date_range", args
    )
    # Building Blocks: purchased 2025-10-17, used "PURCHASE_DATE/PRESENT" -> in use until today
    assert "Building Blocks" in late.output and "Building Blocks" not in early.output
    none = Environment(v.scenario, v.tools, v.seed, today=None).call(
        "find_items_used_during_date_range", args
    )
    assert (none.ok, none.error_kind) == (False, "precondition")


def test_warehouse_dates_from_arguments_only(monkeypatch):
    v = load_variant(DATA, "warehouse1")
    monkeypatch.setattr(time, "time", lambda: 946684800.0)
    env = Environment.from_variant(v, v.tasks[0])
    out = env.call(
        "find_equipment_by_purchase_date_range",
        {"start_date": "2025-11-23", "end_date": "2025-11-23"},
    )
    assert "Walk-Behind Lawn Mower" in out.output
    bad = env.call(
        "add_to_equipment_action_list",
        {
            "user_id": "warehouse_user_01",
            "equipment": "Walk-Behind Lawn Mower",
            "required_action": "inspect",
            "due_date": "24/08/2026",
        },
    )
    assert (bad.ok, bad.error_kind) == (False, "precondition")
    # "calibrate" is not prescribed in the mower's instructions (clean, inspect, lubricate)
    no = env.call(
        "add_to_equipment_action_list",
        {
            "user_id": "warehouse_user_01",
            "equipment": "Walk-Behind Lawn Mower",
            "required_action": "calibrate",
            "due_date": "2026-08-24",
        },
    )
    assert not no.ok
    assert env.call(
        "add_to_equipment_action_list",
        {
            "user_id": "warehouse_user_01",
            "equipment": "Walk-Behind Lawn Mower",
            "required_action": "inspect",
            "due_date": "2026-08-24",
        },
    ).ok


def test_kitchen_numeric_strings_coerced_by_setting():
    """KitchenDB (egolink2026 kitchen_db.py) turns exactly two quantities given as strings into
    floats itself: add_to_shopping_list(quantity) and compute_total_nutritions'
    ingredients[].quantity. Under `ours` the kitchen tools now do so too
    (kitchen_numeric_strings=float), so kitchen1 task 1's 7 GT writes ("5", "0.5", ... read
    off the task file) all succeed; `reject` is ours' old rule (schema validation)."""
    v = load_variant(DATA, "kitchen1")
    gt = v.task(1).ground_truth
    assert [c.arguments.get("quantity") for c in gt[:7]] == [
        "5",
        "0.5",
        "0.3",
        "2",
        "1",
        "2.5",
        "0.1",
    ]
    with Environment.from_variant(v, 1) as env:
        assert [env.call(c.name, c.arguments).ok for c in gt] == [True] * 8
        # cook_009's seed list is empty; each GT quantity stored as float(string)
        assert env.state()["user_shopping_lists"]["cook_009"] == [
            {"ingredient_name": n, "quantity": q}
            for n, q in [("butter", 0.1), ("carrots", 0.5), ("celery", 0.3), ("chicken", 2.5),
                         ("salt", 5.0), ("strawberry", 1.0), ("yogurt", 2.0)]
        ]  # fmt: skip
        gt_hash = env.state_hash()
        first = env.call("add_to_shopping_list", {**gt[0].arguments, "quantity": "5"})
        assert first.output["message"] == "Added 5.0 x salt to shopping list."  # float, not 5
    with Environment.from_variant(v, 1) as env:  # the same writes with numbers: same state
        for c in gt[:7]:
            assert env.call(c.name, {**c.arguments, "quantity": float(c.arguments["quantity"])}).ok
        assert env.state_hash() == gt_hash
    with Environment.from_variant(v, 1) as env:
        # seed nutrition per 100 g unit: salt fiber 5.8, kcal 151; celery fiber 1.2, kcal 135
        out = env.call(
            "compute_total_nutritions",
            {"user_id": "cook_009", "ingredients": [{"ingredient_name": "Salt", "quantity": "5"},
                                                     {"ingredient_name": "Celery", "quantity": 0.3}]},
        ).output["total_nutrition"]  # fmt: skip
        assert (out["fiber_g"], out["calories_kcal"]) == (29.36, 795.5)  # 5*5.8+.3*1.2, 755+40.5
        for bad in ("five", "nan", "inf", ""):  # not a finite number: still a schema error
            r = env.call("add_to_shopping_list", {**gt[0].arguments, "quantity": bad})
            assert (r.ok, r.error_kind) == (False, "invalid_arguments"), bad
    old = Environment.from_variant(v, 1, rules=ToolRules(kitchen_numeric_strings="reject"))
    strict = old.call(gt[0].name, gt[0].arguments)
    assert (strict.ok, strict.error_kind) == (False, "invalid_arguments")
    coerced = Environment.from_variant(
        v, 1, rules=ToolRules(kitchen_numeric_strings="reject", coerce_numeric_strings=True)
    )
    assert coerced.call(gt[0].name, gt[0].arguments).ok  # the all-scenario override still works


def test_restaurant_set_meal_priced_from_dishes_when_unpriced():
    v = load_variant(DATA, "restaurant1")
    env = Environment.from_variant(v)
    meal = next(m for m in v.seed["set_meals"] if not m["set_meal_price"])
    dishes = {d["name"].lower(): d for d in v.seed["dishes"]}
    base = sum(
        dishes[i["dish_name"].lower()]["price"]
        * dishes[i["dish_name"].lower()]["discount"]
        * i["quantity"]
        for i in meal["included_dishes"]
    )
    out = env.call(
        "compute_total_payment",
        {"user_id": "customer_001", "dishes": [{"dish_name": meal["name"], "quantity": 2}]},
    ).output
    assert out["total"] == round(base * meal["set_meal_discount"] * 2, 2)


def test_tool_specs_and_save(retail6, tmp_path):
    env = Environment.from_variant(retail6)
    specs = env.tool_specs()
    assert [s["function"]["name"] for s in specs] == [t.name for t in retail6.tools]
    assert len(specs) == 20 and specs[0]["type"] == "function"
    kitchen = load_variant(DATA, "kitchen1")  # flat schema entries
    assert len(Environment.from_variant(kitchen).tool_specs()) == 28
    _add(env, "Leibniz Keks", 4)
    path = env.save(tmp_path / "final.sqlite")
    with sqlite3.connect(path) as db:
        q = db.execute(
            "SELECT quantity FROM cart_items WHERE user_id = 'user_101' AND product_name = 'leibniz keks'"
        ).fetchone()
    assert q == (4.0,)


@pytest.mark.parametrize("name", ["retail6", "restaurant1", "kitchen1", "warehouse1", "household1"])
def test_spliced_state_json_equals_plain_canonical_json(name):
    # the catalogue is spliced in as stored canonical text; re-encoding the decoded state from
    # scratch must give the same bytes, after the task's own writes too
    v = load_variant(DATA, name)
    env = Environment.from_variant(v, v.tasks[0])
    for c in v.tasks[0].ground_truth:
        env.call(c.name, c.arguments)
    plain = json.dumps(
        normalise(env.state()), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    assert env.state_json() == plain


@pytest.mark.parametrize(
    "variant",
    ["household1", "kitchen1", "restaurant1", "retail1", "warehouse1"],
)
def test_tool_functions_take_the_schema_parameters(variant):
    """Every schema tool is a function whose parameters (after ``ctx``) are the schema's
    properties (keyword arguments, as the environment passes them) and which needs nothing
    the schema leaves out. Several tools are built from shared bodies
    (``scenarios.base.named_tool``); a wrong parameter name there would fail every call."""
    import inspect

    from interactscope.egobench.scenarios import SCENARIO_DEFS

    v = load_variant(DATA, variant)
    tools = SCENARIO_DEFS[v.scenario].tools
    for spec in v.tools:
        params = dict(inspect.signature(tools[spec.name]).parameters)
        assert list(params)[0] == "ctx", spec.name
        del params["ctx"]
        props = set(spec.parameters.get("properties", {}))
        needed = {n for n, p in params.items() if p.default is inspect.Parameter.empty}
        assert props <= set(params) and needed <= props, (spec.name, sorted(params), props)


def test_shared_body_tools_bind_arguments_like_def_tools(retail6):
    """A tool made from a shared body (``get_price`` reads one field for ``_matches``) takes
    its arguments by position or keyword and names itself when one is missing or unknown."""
    from interactscope.egobench.scenarios import SCENARIO_DEFS, Ctx

    env = Environment.from_variant(retail6)
    get_price = SCENARIO_DEFS["retail"].tools["get_price"]
    ctx = Ctx(env.conn)
    assert get_price.__name__ == "get_price"
    by_keyword = get_price(ctx, product_name="Leibniz Keks")
    assert by_keyword == get_price(ctx, "Leibniz Keks")
    assert by_keyword["count"] == len(by_keyword["products"]) >= 1
    with pytest.raises(TypeError, match=r"^get_price\(\) missing .*product_name"):
        get_price(ctx)
    with pytest.raises(TypeError, match=r"^get_price\(\) got an unexpected keyword argument .qty."):
        get_price(ctx, product_name="x", qty=1)
