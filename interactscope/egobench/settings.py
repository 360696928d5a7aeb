"""Named EgoBench settings: the tools' execution rules (:class:`ToolRules`, shared by ``ego run``
and the scorer's replays) and the evaluator's equality rules (:class:`ScoreSettings`). Every one
is recorded in ``summary.json``; docs/egobench.md lists each with the value of every reference
profile (:mod:`interactscope.egobench.profiles`) and the official source line it comes from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ToolRules(BaseModel):
    """How a tool call is executed and how the state is hashed. One object of these is used at
    run time (the episode's environment) and when the scorer replays calls, so the state an
    agent reached and the state that is scored are the same by construction."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    undeclared_params: Literal["drop", "reject"] = Field(
        "drop",
        description="parameters the tool does not declare: dropped (one rule for run time and scoring) or rejected at run time and compared at scoring",
    )
    coerce_numeric_strings: bool = Field(
        False,
        description="numeric strings where the schema declares a number: invalid, or converted ('3' -> 3) before validation",
    )
    arguments: Literal["schema", "official"] = Field(
        "schema",
        description="schema: arguments validated with jsonschema; official: only required parameters are checked and values run as the official Python tools take them (bools and numeric strings where a number is declared; kitchen quantities given as strings become floats; other scenarios store them as given)",
    )
    hash_numbers: Literal["normalise", "as_stored"] = Field(
        "normalise",
        description="state hash: integral floats written as integers (1.0 == 1), or as stored (1.0 != 1)",
    )
    kitchen_lists: Literal["sorted", "insertion"] = Field(
        "sorted",
        description="kitchen menus in the hash: sorted, emptied menus dropped (ours), or in insertion order with emptied menus kept",
    )
    empty_user_id: Literal["reject", "accept"] = Field(
        "reject", description="kitchen writes with an empty user_id: refused, or executed"
    )
    kitchen_numeric_strings: Literal["float", "reject"] = Field(
        "float",
        description="kitchen add_to_shopping_list quantity and compute_total_nutritions ingredients[].quantity given as a finite numeric string: converted to float before validation, as the official kitchen tools do ('5' -> 5.0), or rejected by schema validation (ours before this rule; arguments=official converts anyway)",
    )
    shopping_names: Literal["catalogue", "any"] = Field(
        "catalogue",
        description="kitchen add_to_shopping_list: the ingredient must be in the catalogue, or any name is added",
    )
    set_meal_price: Literal["from_dishes", "stored"] = Field(
        "from_dishes",
        description="restaurant/order set meal without a price in compute_total_payment: priced from its dishes, or its stored price (0 when absent)",
    )
    unknown_restaurant: Literal["error", "create"] = Field(
        "error",
        description="order: a tool naming a restaurant that does not exist fails, or creates an empty restaurant (part of the state)",
    )

    @model_validator(mode="before")
    @classmethod
    def _official_kitchen_converts(cls, data: Any) -> Any:
        # under arguments=official KitchenDB converts the quantities itself, so `reject` would
        # change nothing: one value, so an old paper/egolink2026 run compares equal on resume
        if isinstance(data, dict) and data.get("arguments") == "official":
            return {**data, "kitchen_numeric_strings": "float"}
        return data

    def tool_rules(self) -> ToolRules:
        """Just the execution rules (a :class:`ScoreSettings` carries them too)."""
        return ToolRules(**{k: getattr(self, k) for k in ToolRules.model_fields})


class ScoreSettings(ToolRules):
    """Equality rules and bookkeeping of the EgoBench scorer, plus the :class:`ToolRules` its
    replays use. Defaults are this project's profile (``ours``); :func:`profile` gives the
    others."""

    float_tolerance: float = Field(0.0, ge=0, description="numbers equal when |a-b| <= this")
    bool_is_number: bool = Field(
        False, description="ours: True==1 is no match (reference: matches)"
    )
    merge_duplicate_items: bool = Field(
        True,
        description="items of a list with the same name are merged by summing quantities before comparing",
    )
    merge_before_replay: bool = Field(
        False,
        description="the merged lists are also what the replays execute (paper evaluator)",
    )
    matching: Literal["greedy", "optimal"] = Field(
        "greedy", description="greedy first fit in GT order (reference) or a maximum matching"
    )
    name_match: Literal["scenario", "exact"] = Field(
        "scenario",
        description="name keys: the scenario's lookup rule (reference) or case-insensitive equality",
    )
    list_names: Literal["casefold", "scenario"] = Field(
        "casefold",
        description="name keys inside lists of objects: case-insensitive equality, or the scenario's name rule as at the top level",
    )
    name_keys: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="per scenario, the parameters compared by the name rule (empty: the scenario's own list); other strings compare exactly",
    )
    compare_errors: Literal["note", "official"] = Field(
        "note",
        description="a name parameter whose agent value is a non-empty non-string: unequal (ours), or the official evaluator's crash: the task counts 0 matched of 0 GT calls",
    )
    log_alignment: Literal["id", "position"] = Field(
        "id",
        description="log entries paired with tasks by scenario_id/task_id, or by list position",
    )
    accept_arguments_key: bool = Field(
        True,
        description="ours: a call's 'arguments' stands in for a missing 'parameters' (reference: ignored, the call has no parameters)",
    )
    missing_log: Literal["fail", "skip"] = Field(
        "fail",
        description="ours: a task without a log entry fails and stays in the denominator (reference: skipped)",
    )
    error_classes: Literal["six", "paper"] = Field(
        "six", description="six classes, or the paper's five (memory folded into logic)"
    )

    @classmethod
    def reference(cls, name: str = "paper") -> ScoreSettings:
        """A reference profile's settings (``paper`` or ``egolink2026``); see :func:`profile`."""
        # circular: profiles builds ScoreSettings
        from interactscope.egobench.profiles import profile

        return profile(name)
