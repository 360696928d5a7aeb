"""EgoBench data loading, the shipped copy, and `interactscope ego validate`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.egobench import EgoBenchError, list_variants, load_variant, package_data_dir

DATA = package_data_dir()
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "egobench"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/egobench not present")


def test_shipped_variants_and_counts():
    assert list_variants(DATA) == [
        "household1",
        "kitchen1",
        "restaurant1",
        "restaurant5",
        "retail1",
        "retail6",
        "warehouse1",
    ]
    counts = {
        n: (len(v.tasks), sum(len(t.ground_truth) for t in v.tasks))
        for n in list_variants(DATA)
        for v in [load_variant(DATA, n)]
    }
    # the counts table of the data README
    assert counts == {
        "household1": (15, 76),
        "kitchen1": (46, 173),
        "restaurant1": (40, 145),
        "restaurant5": (50, 174),
        "retail1": (32, 79),
        "retail6": (49, 165),
        "warehouse1": (15, 80),
    }


def test_both_id_fields_and_both_schema_shapes():
    r1, r6 = load_variant(DATA, "retail1"), load_variant(DATA, "retail6")  # task_id / scenario_id
    assert [t.task_id for t in r1.tasks] == list(range(1, 33))
    assert [t.task_id for t in r6.tasks] == list(range(1, 50))
    assert len(r1.tools) == 20 and len(load_variant(DATA, "kitchen1").tools) == 28  # wrapped / flat
    assert load_variant(DATA, "restaurant1").seed_is_ours and not r1.seed_is_ours


def test_today_and_user_id_from_instruction():
    k = load_variant(DATA, "kitchen1")
    assert str(k.task(2).today) == "2026-05-07" and k.task(2).user_id == "cook_010"
    assert load_variant(DATA, "retail1").task(1).today is None


def test_name_key_accepted_in_schema(tmp_path):
    d = tmp_path / "data"
    shutil.copytree(DATA, d)
    tools = json.loads((d / "tools" / "retail_tools.json").read_text())
    for e in tools:
        e["function"]["name"] = e["function"].pop("tool_name")
    (d / "tools" / "retail_tools.json").write_text(json.dumps(tools))
    assert [t.name for t in load_variant(d, "retail1").tools][:2] == [
        "add_product",
        "delete_product",
    ]


@needs_shared
def test_shipped_copy_equals_the_shared_data():
    for sub in ("tasks", "tools", "db"):
        for p in (SHARED / sub).glob("*.json"):
            assert (DATA / sub / p.name).read_bytes() == p.read_bytes(), p
    assert (DATA / "ATTRIBUTION.md").read_bytes() == (SHARED / "ATTRIBUTION.md").read_bytes()


def test_our_seeds_regenerate_identically(tmp_path):
    from interactscope.egobench.seedgen import write_seeds

    d = tmp_path / "data"
    shutil.copytree(DATA, d)
    for p in write_seeds(d):
        assert p.read_bytes() == (DATA / "db" / p.name).read_bytes()


@pytest.mark.parametrize("case", ["missing", "invalid", "unknown", "shape"])
def test_bad_inputs_one_line(tmp_path, case):
    d = tmp_path / "data"
    shutil.copytree(DATA, d)
    name = "retail1"
    if case == "missing":
        (d / "db" / "retail1.json").unlink()
        target = d / "db" / "retail.json"
    elif case == "invalid":
        (d / "tasks" / "retail1.json").write_text("[{")
        target = d / "tasks" / "retail1.json"
    elif case == "unknown":
        name, target = "retail9", d / "tasks" / "retail9.json"
    else:
        (d / "tools" / "retail_tools.json").write_text('{"a": 1}')
        target = d / "tools" / "retail_tools.json"
    with pytest.raises(EgoBenchError) as exc:
        load_variant(d, name)
    assert str(target) in str(exc.value) and "\n" not in str(exc.value)


def test_unknown_scenario_is_one_line():
    with pytest.raises(EgoBenchError, match="unknown variant 'pharmacy1'"):
        load_variant(DATA, "pharmacy1")


@needs_shared
def test_validate_lists_the_documented_defects():
    res = CliRunner().invoke(app, ["ego", "validate", "--data", str(SHARED), "--known"])
    assert res.exit_code == 1  # besides the README's list: names listed twice in retail6
    out = res.output
    expected = [
        "db/retail1.json: user_carts[bill_donk_143]: cart has no 'items' key",
        "db/retail1.json: user_carts[mark_taylor_789].items: product 'kim orawford sauvignon blanc'",
        "tasks/kitchen1.json: task 39: ground_truth[1].parameters.user_id: add_to_shopping_list: empty user_id",
        "tasks/kitchen1.json: task 18: analysis: text starts with a stray prefix",
        "tasks/kitchen1.json: task 34: Instruction: text starts with a stray prefix",
        "tasks/kitchen1.json: task 40: ground_truth[1].parameters.ingredients.0: compute_total_nutritions",
        "tasks/restaurant1.json: task 1: ground_truth[0].parameters: add_dish_to_order: undeclared parameter(s) category, discount, price, tax_rate",
        "tasks/restaurant5.json: task 1: key: field 'key' is absent",
        "tasks/restaurant5.json: task 1: value: field 'value' is absent",
        "tasks/retail1.json: task 5: ground_truth[1].parameters.user_id: compute_total_nutrition: empty user_id",
        "tasks/retail1.json: task 29: ground_truth[1].parameters: 'GLITZ Sauvignon Blan' matches no catalogue entry",
        "tasks/retail1.json: task 31: ground_truth: the same call add_to_cart appears 2 times",
        "tasks/retail1.json: task 6: Instruction: text starts with a stray prefix",
        "tasks/retail6.json: task 29: ground_truth[0].tool_name: tool 'get_taste' is not in tools/retail_tools.json",
        "tasks/retail6.json: task 29: ground_truth[1].tool_name: tool 'get_allergens'",
        "tasks/retail6.json: task 30: ground_truth[0].tool_name: tool 'get_nutritional_characteristics'",
        "tasks/retail6.json: task 43: ground_truth.user_id: GT user id ['user_101'] differs from the Instruction's 'user_789'",
        "tools/retail_tools.json: add_product.taste: enum holds the stray value '·'",
        "db/kitchen.json: no seed database for kitchen1",
        "tasks/restaurant1.json: task 24: ground_truth[3].parameters.dishes: compute_total_tax lists 'walnut bread' 2 times",
    ]
    for line in expected:
        assert line in out, line
    for tid in (2, 3, 4, 5, 6, 7, 9, 12, 14, 15):
        assert (
            f"tasks/household1.json: task {tid}: ground_truth: adds an action and later removes"
            in out
        )
    for tid in (1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15):
        assert (
            f"tasks/warehouse1.json: task {tid}: ground_truth: adds an action and later removes"
            in out
        )
    for tid in (8, 9, 34, 35):
        assert f"tasks/restaurant1.json: task {tid}: ground_truth: the same call" in out
    for tid in (14, 31):
        assert (
            f"tasks/restaurant5.json: task {tid}: ground_truth: the same call add_dish_to_order"
            in out
        )
    string_qty = [
        ln
        for ln in out.splitlines()
        if "add_to_shopping_list: fails the schema" in ln and "is not of type 'number'" in ln
    ]
    assert len(string_qty) == 74  # the README's count


def test_validate_unknown_variant_one_line():
    res = CliRunner().invoke(app, ["ego", "validate", "--variant", "retail9"])
    assert res.exit_code == 1 and "unknown variant 'retail9'" in res.output
    assert "Traceback" not in res.output
