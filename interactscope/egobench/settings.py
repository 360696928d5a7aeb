"""Named scorer settings; every one is recorded in ``summary.json`` (docs/egobench.md lists
each with the reference evaluator's value)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ScoreSettings(BaseModel):
    """Equality rules and bookkeeping of the EgoBench scorer.

    Defaults reproduce the reference evaluator's verdicts except where a field says "ours";
    :meth:`reference` gives the reference's behaviour for every field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    float_tolerance: float = Field(0.0, ge=0, description="numbers equal when |a-b| <= this")
    bool_is_number: bool = Field(
        False, description="ours: True==1 is no match (reference: matches)"
    )
    merge_duplicate_items: bool = Field(
        True,
        description="items of a list with the same name are merged by summing quantities before comparing",
    )
    matching: Literal["greedy", "optimal"] = Field(
        "greedy", description="greedy first fit in GT order (reference) or a maximum matching"
    )
    name_match: Literal["scenario", "exact"] = Field(
        "scenario",
        description="name keys: the scenario's lookup rule (reference) or case-insensitive equality",
    )
    undeclared_params: Literal["drop", "reject"] = Field(
        "drop",
        description="parameters the tool does not declare: dropped at run time and at scoring (ours, one rule) or rejected at run time and compared at scoring",
    )
    accept_arguments_key: bool = Field(
        True,
        description="ours: a call's 'arguments' stands in for a missing 'parameters' (reference: ignored, the call has no parameters)",
    )
    coerce_numeric_strings: bool = Field(
        False,
        description="numeric strings where the schema declares a number: invalid (reference: the call fails) or converted before validation",
    )
    missing_log: Literal["fail", "skip"] = Field(
        "fail",
        description="ours: a task without a log entry fails and stays in the denominator (reference: skipped)",
    )
    error_classes: Literal["six", "paper"] = Field(
        "six", description="six classes, or the paper's five (memory folded into logic)"
    )

    @classmethod
    def reference(cls) -> ScoreSettings:
        """The reference evaluator's behaviour on every switchable rule."""
        return cls(bool_is_number=True, accept_arguments_key=False, missing_log="skip")
