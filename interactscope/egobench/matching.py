"""Parameter equality and GT-to-agent call matching (docs/egobench.md, "Equality rules")."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable
from typing import Any, TypeVar

import numpy as np
from scipy.optimize import linear_sum_assignment

from interactscope.egobench.records import ToolCall, ToolSpec
from interactscope.egobench.scenarios import ScenarioDef
from interactscope.egobench.settings import ScoreSettings

#: Keys that name an item inside a list, in priority order (merging duplicates).
MERGE_NAME_KEYS = (
    "product_name",
    "ingredient_name",
    "equipment",
    "item_name",
    "dish_name",
    "set_meal_name",
    "restaurant_name",
    "recipe_name",
    "name",
)


Call = TypeVar("Call", bound=Any)


def clean_calls(
    calls: Iterable[Call], tools: Iterable[ToolSpec], settings: ScoreSettings
) -> list[Call]:
    """The calls as the environment executes them, for matching: with ``undeclared_params:
    drop`` (default) the arguments a tool does not declare are dropped, as
    :meth:`interactscope.egobench.env.Environment.call` drops them at run time (one rule for run
    time and scoring, docs/egobench.md); calls to tools the schema does not know are kept as
    they are. Each call keeps its class (EgoBench or streaming ``ToolCall``); nothing is
    changed in place.

    Args:
        calls: objects with ``name`` and ``arguments`` (pydantic models).
        tools: the catalogue (objects with ``name`` and ``declared``, the declared parameters).
        settings: the scorer's settings (``undeclared_params``).
    """
    calls = list(calls)
    if settings.undeclared_params != "drop":
        return calls
    specs = {t.name: t for t in tools}
    return [
        c.model_copy(
            update={
                "arguments": {k: v for k, v in c.arguments.items() if k in specs[c.name].declared}
            }
        )
        if c.name in specs
        else c
        for c in calls
    ]


class _OfficialCompareCrash(Exception):
    """The official evaluators' comparison raises here (``.lower()`` on a non-string agent
    value under a name key); their ``compare_tool_calls`` then returns 0 matched of 0 GT calls."""


def _canon(s: Any) -> str:
    return "" if s is None else str(s).strip().lower()


def _num(x: Any, settings: ScoreSettings) -> float | None:
    if isinstance(x, bool):
        return float(x) if settings.bool_is_number else None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str) and x.strip():
        try:
            return float(x.strip())
        except ValueError:
            return None
    return None


def _num_equal(a: float, b: float, settings: ScoreSettings) -> bool:
    if settings.float_tolerance == 0:
        return a == b
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= settings.float_tolerance


def merge_items(value: Any) -> Any:
    """Merge items of lists of objects that carry the same name (case-insensitive) by summing
    ``quantity``, then sort by name; recursively. Other lists are left as they are."""
    if isinstance(value, dict):
        return {k: merge_items(v) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    items = [merge_items(v) for v in value]
    if not items or not all(isinstance(x, dict) for x in items):
        return items
    groups: list[dict[str, Any]] = []
    for item in items:
        key = next((k for k in MERGE_NAME_KEYS if item.get(k) is not None), None)
        target = None
        if key is not None:
            for g in groups:
                gk = next((k for k in MERGE_NAME_KEYS if g.get(k) is not None), None)
                if gk == key and (
                    _canon(g[key]) == _canon(item[key])
                    if isinstance(item[key], str) and isinstance(g[key], str)
                    else g[key] == item[key]
                ):
                    target = g
                    break
        if target is None:
            groups.append(dict(item))
            continue
        for k, v in item.items():
            if k == "quantity":
                a, b = _num(target.get(k), ScoreSettings()), _num(v, ScoreSettings())
                if a is not None and b is not None:
                    s = a + b
                    target[k] = int(s) if s.is_integer() else s
                elif target.get(k) is None:
                    target[k] = v
            elif target.get(k) is None or (
                isinstance(target.get(k), str) and not target[k].strip()
            ):
                target[k] = v

    def sort_key(x: dict[str, Any]) -> str:
        k = next((k for k in MERGE_NAME_KEYS if x.get(k) is not None), None)
        return _canon(x[k]) if k else json.dumps(x, sort_keys=True, default=str)

    return sorted(groups, key=sort_key)


class ParamComparer:
    """Compares GT parameters with agent parameters for one scenario database.

    ``conn`` is a database of the scenario in its seed state, used by the ``lookup`` name rule
    (the sets of entities that the scenario's own name search finds for the two strings must
    intersect; when either set is empty, case-insensitive containment decides)."""

    def __init__(self, sdef: ScenarioDef, conn: sqlite3.Connection | None, settings: ScoreSettings):
        self.sdef, self.conn, self.s = sdef, conn, settings
        self.name_keys = settings.name_keys.get(sdef.name) or sdef.name_keys
        self._lookups: dict[str, set[str]] = {}

    def _names(self, q: str) -> set[str]:
        if q not in self._lookups:
            self._lookups[q] = self.sdef.lookup(self.conn, q) if self.conn is not None else set()
        return self._lookups[q]

    def names_equal(self, gt: Any, agent: Any) -> bool:
        """The name rule for a top-level name key (e.g. ``product_name``).

        Raises:
            _OfficialCompareCrash: ``compare_errors=official`` and ``agent`` is a non-empty
                non-string (the official ``fuzzy_match_str`` calls ``.lower()`` on it)."""
        if not isinstance(gt, str) or not isinstance(agent, str):
            if self.s.compare_errors == "official" and isinstance(gt, str) and agent:
                raise _OfficialCompareCrash(f"name {gt!r} compared with {agent!r}")
            return False
        mode = self.sdef.name_match if self.s.name_match == "scenario" else "exact"
        if mode == "exact":
            return _canon(gt) == _canon(agent)
        if mode == "lookup" and self.sdef.lookup is not None:
            a, b = self._names(gt), self._names(agent)
            if a and b:
                return bool(a & b)
        if not gt or not agent:
            return False
        g, x = gt.lower(), agent.lower()
        return g in x or x in g

    def equal(self, gt: Any, agent: Any, key: str | None = None, inside_list: bool = False) -> bool:
        """Recursive equality of two parameter values (``key``: the parameter name above)."""
        s = self.s
        gnum, anum = isinstance(gt, bool), isinstance(agent, bool)
        if type(gt) is not type(agent):
            if gnum or anum:
                if not s.bool_is_number:
                    return False
            a, b = _num(gt, s), _num(agent, s)
            return a is not None and b is not None and _num_equal(a, b, s)
        if isinstance(gt, list):
            if s.merge_duplicate_items:
                gt, agent = merge_items(gt), merge_items(agent)
            if len(gt) != len(agent):
                return False
            used = [False] * len(agent)
            for g in gt:
                for j, a in enumerate(agent):
                    if not used[j] and self.equal(g, a, key, True):
                        used[j] = True
                        break
                else:
                    return False
            return True
        if isinstance(gt, dict):
            if set(gt) != set(agent):
                return False
            top = not inside_list or s.list_names == "scenario"
            for k, g in gt.items():
                if top and k in self.name_keys and isinstance(g, str):
                    if not self.names_equal(g, agent[k]):
                        return False
                elif not self.equal(g, agent[k], k, inside_list):
                    return False
            return True
        if isinstance(gt, str):
            if key in self.name_keys:
                return _canon(gt) == _canon(agent)
            return gt == agent
        if isinstance(gt, float) or isinstance(agent, float):
            return _num_equal(float(gt), float(agent), s)
        return gt == agent

    def params_equal(self, gt: dict[str, Any], agent: dict[str, Any]) -> bool:
        """Top-level comparison of two argument objects (lists merged first when set)."""
        if self.s.merge_duplicate_items:
            gt, agent = merge_items(gt), merge_items(agent)
        return self.equal(gt, agent)


def match_calls(
    gt: list[ToolCall], agent: list[ToolCall], cmp: ParamComparer, how: str = "greedy"
) -> list[int | None]:
    """For each GT call, the index of the distinct agent call it is matched to (or None).

    ``greedy``: GT calls in order each take the first unused agent call with the same tool name
    and equal parameters (the reference; pairs are compared lazily in that order, so a
    comparison the reference never makes is never made). ``optimal``: a maximum matching of the
    same relation."""

    def ok(g: ToolCall, a: ToolCall) -> bool:
        return g.name == a.name and cmp.params_equal(g.arguments, a.arguments)

    out: list[int | None] = [None] * len(gt)
    if how == "optimal":
        m = np.array([[ok(g, a) for a in agent] for g in gt], dtype=bool).reshape(
            len(gt), len(agent)
        )
        if m.size:
            rows, cols = linear_sum_assignment(-m.astype(float))
            for r, c in zip(rows, cols, strict=True):
                if m[r, c]:
                    out[r] = int(c)
        return out
    used: set[int] = set()
    for i, g in enumerate(gt):
        for j, a in enumerate(agent):
            if j not in used and ok(g, a):
                out[i] = j
                used.add(j)
                break
    return out
