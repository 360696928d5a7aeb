"""Scene rules: the per-scenario table of which tools change state covers every shipped tool,
agrees with the verb-based derivation, and loads by scenario name."""

from __future__ import annotations

import pytest

from interactscope.egobench import list_variants, package_data_dir
from interactscope.egobench.data import load_variant
from interactscope.egobench.egointeract.rules import RulesError, classify_by_name, load_rules
from interactscope.egobench.records import SCENARIOS


def _tools_by_scenario() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name in list_variants(package_data_dir()):
        v = load_variant(package_data_dir(), name)
        out.setdefault(v.scenario, set()).update(t.name for t in v.tools)
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_table_covers_exactly_the_scenario_tools_and_matches_the_verbs(scenario):
    from interactscope.egobench.scenarios import SCENARIO_DEFS

    rules = load_rules(scenario)
    assert rules.scenario == scenario
    # order ships no data: its tools are the scenario module's
    shipped = _tools_by_scenario().get(scenario) or set(SCENARIO_DEFS[scenario].tools)
    assert set(rules.tools) == shipped
    assert {n: classify_by_name(n) for n in shipped} == rules.tools
    assert rules.grounding.strip() and rules.branches.strip() and rules.compute.strip()


def test_hand_classified_examples():
    table = {
        "add_to_cart": "write",
        "remove_dish_from_order": "write",
        "clear_user_order": "write",
        "create_set_meal": "write",
        "delete_product": "write",
        "update_dish_discount": "write",
        "get_cart": "read",
        "find_recipes_by_taste": "read",
        "list_all_discounted_dishes": "read",
        "filter_dishes_by_price_range": "read",
        "compute_total_tax": "compute",
        "tally_total_tastes": "compute",
        "frobnicate_inventory": "write",  # unknown verb: audited, the safe side
    }
    assert {n: classify_by_name(n) for n in table} == table
    assert load_rules("retail").classify("set_price") == "write"  # not in the table: by verb


def test_unknown_scenario_is_one_line():
    with pytest.raises(RulesError, match=r"rules/garden\.yaml not found; add one \(present: "):
        load_rules("garden")
