"""Reference profiles (ours / paper / egolink2026): one tool-rule set for run and score, and
one test per named rule. Expected values are worked out by hand from reading the official code
(ego-link/egolink2026 ``code/track2/EgoBench/analysis_scripts/evaluate_interaction.py`` and
``tools/<scenario>/<scenario>_db.py``; Wind-Flipped/EgoBench's evaluator), none of it copied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interactscope.egobench import Environment, load_variant, package_data_dir, score_log
from interactscope.egobench.agents.base import Visual
from interactscope.egobench.agents.baselines import OracleAgent
from interactscope.egobench.episode_settings import build_settings
from interactscope.egobench.episodes import run_episode
from interactscope.egobench.logs import from_episode
from interactscope.egobench.matching import ParamComparer
from interactscope.egobench.profiles import profile, run_profile
from interactscope.egobench.records import AgentLog, ToolCall
from interactscope.egobench.scenarios import SCENARIO_DEFS
from interactscope.egobench.scorer import gt_log
from interactscope.egobench.user_sim import ScriptedUser

DATA = package_data_dir()
EGOLINK, PAPER, OURS = profile("egolink2026"), profile("paper"), profile("ours")


# ------------------------------------------------------------------ run-time == scored state


@pytest.mark.parametrize("name", ["ours", "egolink2026", "paper"])
def test_kitchen1_task1_run_time_and_scored_state_hashes_are_equal(name: str) -> None:
    # task 1's GT gives quantities as strings ("5", "0.5"): before profiles the run coerced
    # them and the scorer did not, so the scorer judged a state the agent never reached
    v = load_variant(DATA, "kitchen1")
    t = v.task(1)
    settings = build_settings("easy", {"reference": name})
    rec = run_episode(
        v, t, OracleAgent(), ScriptedUser([t.instruction]), settings, Visual(sees_pixels=False)
    )
    scored = score_log(
        [from_episode(rec)], v.model_copy(update={"tasks": [t]}), settings=run_profile(settings)
    )
    assert rec.final_state_hash == scored.tasks[0].agent_hash
    assert scored.tasks[0].joint_succ


def test_egolink_kitchen_stores_numeric_strings_as_floats() -> None:
    # KitchenDB.add_to_shopping_list: float(quantity) when a string; the hash keeps 5.0
    v = load_variant(DATA, "kitchen1")
    with Environment.from_variant(v, rules=EGOLINK) as env:
        assert env.call(
            "add_to_shopping_list", {"user_id": "u", "ingredient_name": "Apple", "quantity": "5"}
        ).ok
        assert env.state()["user_shopping_lists"]["u"] == [
            {"ingredient_name": "apple", "quantity": 5.0}
        ]
        assert '"quantity":5.0' in env.state_json()
    with Environment.from_variant(v, rules=OURS) as env:
        # ours converts as KitchenDB does; its hash writes the integral 5.0 as 5
        assert env.call(
            "add_to_shopping_list", {"user_id": "u", "ingredient_name": "Apple", "quantity": "5"}
        ).ok
        assert env.state()["user_shopping_lists"]["u"] == [
            {"ingredient_name": "apple", "quantity": 5.0}
        ]
        assert '"quantity":5}' in env.state_json()
    # a paper/egolink2026 run's `reject` changes nothing (the tools convert): read as `float`
    assert profile("egolink2026", kitchen_numeric_strings="reject").kitchen_numeric_strings == (
        "float"
    )


def test_hash_numbers_as_stored_keeps_one_and_one_point_zero_apart() -> None:
    # egolink calculate_db_hash: json.dumps without normalisation ("1.0" != "1");
    # the paper's normalize_for_hash turns 1.0 into 1
    v = load_variant(DATA, "kitchen1")
    t = v.task(1)
    gt = [
        ToolCall(
            name="add_to_shopping_list",
            arguments={"user_id": "cook_009", "ingredient_name": "Apple", "quantity": 1},
        )
    ]
    agent = [gt[0].model_copy(update={"arguments": {**gt[0].arguments, "quantity": 1.0}})]
    sub = v.model_copy(update={"tasks": [t.model_copy(update={"ground_truth": gt})]})
    log = [AgentLog(task_id=1, calls=agent)]
    assert score_log(log, sub, settings=PAPER).tasks[0].joint_succ
    egolink = score_log(log, sub, settings=EGOLINK).tasks[0]
    assert egolink.tool_succ and not egolink.result_succ


def test_log_alignment_by_position() -> None:
    # egolink: interaction_data[task_idx] is task_idx's log whatever its scenario_id
    v = load_variant(DATA, "retail6")
    t1, t2 = v.tasks[0], v.tasks[1]
    sub = v.model_copy(update={"tasks": [t1, t2]})
    log = [
        AgentLog(task_id=t2.task_id, calls=list(t1.ground_truth)),
        AgentLog(task_id=t1.task_id, calls=list(t2.ground_truth)),
    ]
    assert [x.joint_succ for x in score_log(log, sub, settings=EGOLINK).tasks] == [True, True]
    assert [x.joint_succ for x in score_log(log, sub, settings=PAPER).tasks] == [False, False]


def _cmp(scenario: str, s, variant: str | None = None):
    if variant is None:
        return ParamComparer(SCENARIO_DEFS[scenario], None, s)
    env = Environment.from_variant(load_variant(DATA, variant))
    return ParamComparer(SCENARIO_DEFS[scenario], env.conn, s)


def test_names_inside_lists_use_the_name_rule_under_egolink() -> None:
    # egolink compare_parameters_recursive: a FUZZY_KEYS key inside a list's object still goes
    # through fuzzy_match_field; the paper compares lists exactly (case-insensitive names)
    gt = {"user_id": "u", "products": [{"product_name": "Dukan Chocolate Bar", "quantity": 3}]}
    agent = {"user_id": "u", "products": [{"product_name": "dukan chocolate", "quantity": 3}]}
    assert _cmp("retail", EGOLINK, "retail6").params_equal(gt, agent)
    assert not _cmp("retail", PAPER, "retail6").params_equal(gt, agent)
    assert not _cmp("retail", OURS, "retail6").params_equal(gt, agent)


def test_duplicate_list_items_merged_by_paper_not_by_egolink() -> None:
    gt = {"products": [{"product_name": "a", "quantity": 3}]}
    agent = {
        "products": [{"product_name": "a", "quantity": 1}, {"product_name": "A", "quantity": 2}]
    }
    assert _cmp("retail", PAPER).params_equal(gt, agent)
    assert not _cmp("retail", EGOLINK).params_equal(gt, agent)


def test_set_meal_name_compared_exactly_under_egolink() -> None:
    # egolink FUZZY_KEYS["restaurant"] == ["dish_name"]: set_meal_name falls to `gt == agent`
    gt, agent = {"set_meal_name": "Family Feast"}, {"set_meal_name": "family feast"}
    assert not _cmp("restaurant", EGOLINK).params_equal(gt, agent)
    assert _cmp("restaurant", PAPER).params_equal(gt, agent)


def test_bool_is_a_number_in_both_reference_evaluators() -> None:
    # type(True) != type(1) -> float(True) == float(1)
    assert _cmp("retail", EGOLINK).params_equal({"qty": 1}, {"qty": True})
    assert not _cmp("retail", OURS).params_equal({"qty": 1}, {"qty": True})


# ------------------------------------------------------------------ kitchen semantics


def _kitchen(rules):
    return Environment.from_variant(load_variant(DATA, "kitchen1"), rules=rules)


def test_kitchen_menus_in_insertion_order_and_emptied_menus_kept() -> None:
    # KitchenDB.user_menus is hashed as stored: a list in insertion order, [] kept on removal
    names = ["beef & black bean stew"]
    with _kitchen(OURS) as env:
        recipes = env.call("get_all_recipe_names").output["recipes"]
    a, b = recipes[0], recipes[1]
    hashes = {}
    for label, rules in (("ours", OURS), ("egolink", EGOLINK)):
        out = []
        for order in ((a, b), (b, a)):
            with _kitchen(rules) as env:
                for r in order:
                    assert env.call(
                        "add_recipe_to_menu", {"user_id": "cook_999", "recipe_name": r}
                    ).ok
                out.append(env.state_hash())
        with _kitchen(rules) as env:
            seed = env.state_hash()
            env.call("add_recipe_to_menu", {"user_id": "cook_999", "recipe_name": a})
            env.call("remove_recipe_from_menu", {"user_id": "cook_999", "recipe_name": a})
            out.append(env.state_hash() == seed)
            menus = env.state()["user_menus"]
        hashes[label] = (out, menus.get("cook_999"))
    assert hashes["ours"] == ([hashes["ours"][0][0]] * 2 + [True], None)
    (ab, ba, same), kept = hashes["egolink"]
    assert ab != ba and same is False and kept == []
    assert names  # the synthetic seed's recipe names are lower-cased on load


def test_kitchen_empty_user_id_and_unknown_ingredient() -> None:
    call = {"user_id": "", "ingredient_name": "dragon fruit", "quantity": 1}
    with _kitchen(OURS) as env:
        assert env.call("add_to_shopping_list", call).error_kind == "precondition"
    with _kitchen(EGOLINK) as env:
        assert env.call("add_to_shopping_list", call).ok
        assert env.state()["user_shopping_lists"][""] == [
            {"ingredient_name": "dragon fruit", "quantity": 1}
        ]


def test_kitchen_catalogue_keeps_every_field_and_official_shapes() -> None:
    seed = {
        "ingredients": [
            {
                "name": "Oats",
                "quantity": 4,
                "category": "Grain",
                "storage_location": "Pantry",
                "expiry_date": "2026-09-01",
                "nutrition": {"basis": "PER_SERVING", "serving_size_g": 40, "calories_kcal": 150},
            },
            {
                "name": "Milk",
                "quantity": 2.5,
                "category": "dairy",
                "expiry_date": "2026-08-31",
                "nutrition": {"calories_kcal": 64},
            },
        ],
        "recipes": [],
    }
    tools = load_variant(DATA, "kitchen1").tools
    with Environment("kitchen", tools, seed) as env:
        n = env.call("get_ingredient_nutrition", {"ingredient_name": "Oats"}).output["nutrition"]
        assert (n["basis"], n["serving_size_g"], n["calories_kcal"]) == ("PER_SERVING", 40, 150)
        milk = env.call("get_ingredient_nutrition", {"ingredient_name": "milk"}).output
        assert milk["nutrition"]["basis"] == "PER_100G"  # NutritionInfo default
        assert env.call("get_ingredient_quantity", {"ingredient_name": "MILK"}).output == {
            "ingredient_name": "MILK",
            "quantity": 2.5,
        }
        # `expiry_date >= date`: inclusive
        assert env.call("find_ingredients_by_expiry_date", {"date": "2026-08-31"}).output == {
            "date": "2026-08-31",
            "ingredients": ["oats", "milk"],
        }
        assert env.call("get_ingredient_location", {"ingredient_name": "oats"}).output == {
            "ingredient_name": "oats",
            "storage_location": "Pantry",
        }


# ------------------------------------------------------------------ restaurant semantics


def _restaurant_seed():
    return {
        "dishes": [
            {"name": "A", "category": "Pizza", "price": 10, "tax_rate": 0.1, "discount": 1.0},
            {"name": "B", "category": "Pasta", "price": 5, "tax_rate": 0.1, "discount": 1.0},
        ],
        "set_meals": [
            {
                "name": "Combo",
                "included_dishes": [
                    {"dish_name": "A", "quantity": 1},
                    {"dish_name": "B", "quantity": 2},
                ],
                "set_meal_discount": 0.9,
            },
        ],
    }


def test_unpriced_set_meal_stored_price_under_official_tools() -> None:
    tools = load_variant(DATA, "restaurant1").tools
    call = {"user_id": "u", "dishes": [{"dish_name": "combo", "quantity": 2}]}
    with Environment("restaurant", tools, _restaurant_seed(), rules=OURS) as env:
        # (10*1 + 5*2) * 0.9 * 2
        assert env.call("compute_total_payment", call).output["total"] == 36.0
    with Environment("restaurant", tools, _restaurant_seed(), rules=EGOLINK) as env:
        assert env.call("compute_total_payment", call).output["total"] == 0.0  # 0.0 * 0.9 * 2


def test_invalid_enum_is_an_empty_result_under_official_tools() -> None:
    tools = load_variant(DATA, "restaurant1").tools
    with Environment("restaurant", tools, _restaurant_seed(), rules=OURS) as env:
        r = env.call("find_dishes_by_category", {"category": "Desserts"})
        assert r.error_kind == "invalid_arguments"
    with Environment("restaurant", tools, _restaurant_seed(), rules=EGOLINK) as env:
        assert env.call("find_dishes_by_category", {"category": "Desserts"}).output == {
            "dishes": []
        }


def test_restaurant_stores_a_string_quantity_under_official_tools() -> None:
    tools = load_variant(DATA, "restaurant1").tools
    call = {"user_id": "u", "dish_name": "a", "quantity": "1"}
    with Environment("restaurant", tools, _restaurant_seed(), rules=EGOLINK) as env:
        assert env.call("add_dish_to_order", call).ok
        assert env.state()["user_orders"]["u"] == [{"dish_name": "a", "quantity": "1"}]
        # "1" + 1 raises in the official tool: nothing changes
        assert not env.call("add_dish_to_order", {**call, "quantity": 1}).ok
    with Environment("restaurant", tools, _restaurant_seed(), rules=OURS) as env:
        assert env.call("add_dish_to_order", call).error_kind == "invalid_arguments"


def test_profiles_are_recorded_and_unknown_ones_refused() -> None:
    assert EGOLINK.log_alignment == "position" and PAPER.merge_duplicate_items
    with pytest.raises(ValueError, match="unknown reference profile"):
        profile("nope")
    with pytest.raises(ValueError, match="unknown reference profile"):
        build_settings("easy", {"reference": "nope"})


# ------------------------------------------------------------------ the order scenario


def _order_data(tmp_path: Path) -> Path:
    """A hand-made order variant: two restaurants, one task (our own schema subset)."""
    s = {"type": "string"}
    num = {"type": "number"}
    items = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"product_name": s, "quantity": {"type": "integer"}},
            "required": ["product_name", "quantity"],
        },
    }

    def tool(name, props, req=None):
        return {
            "type": "function",
            "function": {
                "tool_name": name,
                "parameters": {
                    "type": "object",
                    "properties": props,
                    "required": req or list(props),
                },
            },
        }

    r_u = {"restaurant_name": s, "user_id": s}
    tools = [
        tool("get_dish_price", {"restaurant_name": s, "dish_name": s}),
        tool("add_dish_to_order", {**r_u, "dish_name": s, "quantity": num}),
        tool("add_set_meal_to_order", {**r_u, "set_meal_name": s, "quantity": num}),
        tool("remove_dish_from_order", {**r_u, "dish_name": s, "quantity": num}),
        tool("compute_total_payment", {**r_u, "dishes": items}),
        tool("compute_total_tax", {**r_u, "dishes": items}),
    ]
    seed = {
        "dishes": [
            {
                "restaurant_name": "Luigi",
                "name": "Margherita",
                "price": 11.0,
                "tax_rate": 0.1,
                "discount": 1.0,
                "category": "Pizza",
                "nutrition": {"basis": "PER_SERVING"},
            },
            {
                "restaurant_name": "Luigi",
                "name": "Tiramisu",
                "price": 6.6,
                "tax_rate": 0.1,
                "discount": 0.5,
                "category": "Antipasti & Snacks",
            },
            {
                "restaurant_name": "Sakura",
                "name": "Miso Soup",
                "price": 4.0,
                "tax_rate": 0.0,
                "discount": 1.0,
                "category": "Salads",
            },
        ],
        "set_meals": [
            {
                "restaurant_name": "Luigi",
                "name": "Duo",
                "set_meal_price": 15.0,
                "set_meal_discount": 0.8,
                "included_dishes": [
                    {"dish_name": "Margherita", "quantity": 1},
                    {"dish_name": "Tiramisu", "quantity": 1},
                ],
            },
        ],
        "user_orders": [
            {
                "restaurant_name": "Sakura",
                "user_id": "u1",
                "items": [{"dish_name": "Miso Soup", "quantity": 1}],
            }
        ],
    }
    gt = [
        {
            "tool_name": "add_dish_to_order",
            "parameters": {
                "restaurant_name": "Luigi",
                "user_id": "u1",
                "dish_name": "Margherita",
                "quantity": 2,
            },
        },
        {
            "tool_name": "add_set_meal_to_order",
            "parameters": {
                "restaurant_name": "Luigi",
                "user_id": "u1",
                "set_meal_name": "Duo",
                "quantity": 1,
            },
        },
        {
            "tool_name": "remove_dish_from_order",
            "parameters": {
                "restaurant_name": "Sakura",
                "user_id": "u1",
                "dish_name": "Miso Soup",
                "quantity": 1,
            },
        },
        {
            "tool_name": "compute_total_payment",
            "parameters": {
                "restaurant_name": "Luigi",
                "user_id": "u1",
                "dishes": [
                    {"product_name": "Margherita", "quantity": 2},
                    {"product_name": "Duo", "quantity": 1},
                ],
            },
        },
    ]
    task = {
        "scenario_id": 1,
        "Instruction": "I am u1. Today is May 7, 2026. Order for me.",
        "ground_truth": gt,
        "key": "dish_name",
        "value": ["Margherita"],
        "image_description": "a pizza menu",
    }
    for sub, name, obj in (
        ("tasks", "order1.json", [task]),
        ("db", "order1.json", seed),
        ("tools", "order_tools.json", tools),
    ):
        (tmp_path / sub).mkdir(exist_ok=True)
        (tmp_path / sub / name).write_text(json.dumps(obj), encoding="utf-8")
    return tmp_path


def test_order_tools_per_restaurant(tmp_path: Path) -> None:
    v = load_variant(_order_data(tmp_path), "order1")
    with Environment.from_variant(v, 1) as env:
        assert env.call(
            "get_dish_price", {"restaurant_name": "luigi", "dish_name": "tira"}
        ).output == {"status": "success", "matching_dishes": {"tiramisu": 6.6}}
        # the dish exists, but at another restaurant
        r = env.call(
            "add_dish_to_order",
            {
                "restaurant_name": "Sakura",
                "user_id": "u1",
                "dish_name": "Margherita",
                "quantity": 1,
            },
        )
        assert r.error_kind == "precondition"
        pay = env.call(
            "compute_total_payment",
            {
                "restaurant_name": "Luigi",
                "user_id": "u1",
                "dishes": [
                    {"product_name": "Margherita", "quantity": 2},
                    {"product_name": "Duo", "quantity": 1},
                    {"product_name": "Tiramisu", "quantity": 0},
                ],
            },
        )
        assert pay.output["total_payment"] == 34.0  # 11*1*2 + 15*0.8*1; quantity 0 skipped
        tax = env.call(
            "compute_total_tax",
            {
                "restaurant_name": "Luigi",
                "user_id": "u1",
                "dishes": [{"product_name": "Duo", "quantity": 2}],
            },
        )
        assert tax.output["total_tax"] == 2.6  # (11*.1/1.1*1 + 6.6*.1/1.1*.5) * 2 = (1 + .3) * 2
        assert (
            env.call("get_dish_price", {"restaurant_name": "Nowhere", "dish_name": "x"}).error_kind
            == "precondition"
        )
    with Environment.from_variant(v, 1, rules=EGOLINK) as env:
        before = env.state_hash()
        env.call("get_dish_price", {"restaurant_name": "Nowhere", "dish_name": "x"})
        # OrderDB._get_store creates the restaurant: the state changed
        assert env.state_hash() != before and "nowhere" in env.state()["restaurants"]


def test_order1_oracle_episode_plays_and_scores_one(tmp_path: Path) -> None:
    v = load_variant(_order_data(tmp_path), "order1")
    t = v.task(1)
    rec = run_episode(
        v,
        t,
        OracleAgent(),
        ScriptedUser([t.instruction]),
        build_settings("easy"),
        Visual(sees_pixels=False),
    )
    assert all(c.result.ok for c in rec.calls)
    score = score_log([from_episode(rec)], v)
    assert (score.summary.joint_succ, score.summary.matched, score.summary.total_gt) == (1.0, 4, 4)
    assert score_log(gt_log(v), v, settings=EGOLINK).summary.joint_succ == 1.0
    with Environment.from_variant(v, 1) as env:
        state = env.state()["restaurants"]
    assert state["sakura"]["user_orders"]["u1"] == [{"dish_name": "miso soup", "quantity": 1}]


def test_retail_payment_and_tax_details_carry_the_item_amounts() -> None:
    # retail_db compute_total_payment / compute_total_tax: details[i].subtotal / .tax_amount;
    # Dukan Chocolate Bar: price 14.8, discount 1, tax rate 0.09 (retail6 seed), qty 3
    v = load_variant(DATA, "retail6")
    args = {"user_id": "u", "products": [{"product_name": "Dukan Chocolate Bar", "quantity": 3}]}
    with Environment.from_variant(v) as env:
        pay = env.call("compute_total_payment", args).output
        tax = env.call("compute_total_tax", args).output
    assert pay["details"] == [
        {"product_name": "dukan chocolate bar", "quantity": 3, "subtotal": 44.4}  # 14.8 * 3
    ]
    # 14.8 * 0.09 / 1.09 * 3 = 3.666...
    assert tax["details"][0]["tax_amount"] == 3.67 and tax["total_tax"] == 3.67


def test_a_number_for_a_name_is_the_reference_evaluators_crash() -> None:
    # fuzzy_match_field(gt, 5) ends in fuzzy_match_str(5, gt) -> 5.lower(): AttributeError,
    # caught by compare_tool_calls, which returns (0, 0, 0) for the task
    v = load_variant(DATA, "retail6")
    t = v.task(39)
    bad = t.ground_truth[0].model_copy(
        update={"arguments": {**t.ground_truth[0].arguments, "product_name": 5}}
    )
    sub = v.model_copy(update={"tasks": [t]})
    log = [AgentLog(task_id=39, calls=[bad, *t.ground_truth[1:]])]
    ref = score_log(log, sub, settings=EGOLINK).tasks[0]
    assert (ref.matched, ref.total_gt, ref.tool_succ) == (0, 0, False)
    ours = score_log(log, sub, settings=OURS).tasks[0]
    assert (ours.matched, ours.total_gt) == (5, 6)


def test_ego_score_reference_profile_option(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interactscope.cli import app

    v = load_variant(DATA, "retail6")
    t1, t2 = v.tasks[0], v.tasks[1]
    log = tmp_path / "retail6_easy.json"
    entries = [  # swapped ids, in task order: by position both succeed
        {
            "scenario_id": t2.task_id,
            "tool_calls": [
                {
                    "turn": 0,
                    "calls": [
                        {"tool_name": c.name, "parameters": c.arguments} for c in t1.ground_truth
                    ],
                }
            ],
        },
        {
            "scenario_id": t1.task_id,
            "tool_calls": [
                {
                    "turn": 0,
                    "calls": [
                        {"tool_name": c.name, "parameters": c.arguments} for c in t2.ground_truth
                    ],
                }
            ],
        },
    ]
    log.write_text(json.dumps(entries), encoding="utf-8")
    run = CliRunner().invoke(
        app,
        [
            "ego",
            "score",
            "--log",
            str(log),
            "--variant",
            "retail6",
            "--out",
            str(tmp_path / "out"),
            "--reference",
            "egolink2026",
        ],
    )
    assert run.exit_code == 0, run.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["settings"]["log_alignment"] == "position"
    assert summary["n_logged"] == 2 and summary["reference_view"]["joint_succ"] == 1.0
    bad = CliRunner().invoke(
        app,
        [
            "ego",
            "score",
            "--log",
            str(log),
            "--variant",
            "retail6",
            "--out",
            str(tmp_path / "o2"),
            "--reference",
            "nope",
        ],
    )
    assert bad.exit_code == 1 and "expected one of ours, paper, egolink2026" in bad.output


def test_retail_bool_quantity_runs_under_official_tools() -> None:
    # RetailDB.add_to_cart: True <= 0 is False, float(True) == 1.0 is stored
    v = load_variant(DATA, "retail6")
    call = dict(v.task(39).ground_truth[0].arguments, qty=True)
    states = []
    for qty in (True, 1):
        with Environment.from_variant(v, rules=EGOLINK) as env:
            assert env.call("add_to_cart", {**call, "qty": qty}).ok
            states.append(env.state_json())
    assert states[0] == states[1]
    with Environment.from_variant(v, rules=OURS) as env:
        assert env.call("add_to_cart", call).error_kind == "invalid_arguments"


def test_a_run_under_egolink2026_is_scored_with_its_rules_and_by_id(tmp_path: Path) -> None:
    # `ego run --set reference=egolink2026` records the profile; `ego score RUN` replays with
    # it; episodes align by their task ids even though the profile aligns lists by position
    from interactscope.egobench.run_folder import load_run
    from interactscope.egobench.run_score import score_run
    from interactscope.egobench.runner import RunRequest, execute, prepare

    out = tmp_path / "run"
    req = RunRequest(
        agent="oracle",
        data=DATA,
        variants=["kitchen1"],
        tasks="1,3",
        out=out,
        sets={"reference": "egolink2026"},
    )
    execute(prepare(req))
    manifest, records = load_run(out)
    assert manifest.settings["reference"] == "egolink2026"
    # the episodes file written in reverse task order: still scored by id
    lines = (out / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
    (out / "episodes.jsonl").write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")
    score = score_run(out)
    r = score.results["kitchen1"]
    assert r.summary.settings["arguments"] == "official"
    assert [t.joint_succ for t in r.tasks] == [True, True]
    by_id = {rec.task_id: rec.final_state_hash for rec in records}
    assert {t.task_id: t.agent_hash for t in r.tasks} == by_id
