"""What every scenario module provides, and small helpers shared by them.

A scenario keeps its catalogue tables as ``(name PRIMARY KEY, record JSON)`` rows in insertion
order (rowid) and its per-user state in plain relational tables. Tools are plain functions
``tool(ctx, **arguments) -> JSON value``; a failed precondition raises :class:`ToolError`, which
the environment turns into an error result after rolling the database back."""

from __future__ import annotations

import datetime as dt
import inspect
import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from interactscope.core.errors import InteractScopeError
from interactscope.egobench.canonical import RawJSON, canonical_json
from interactscope.egobench.settings import ToolRules


class ToolError(InteractScopeError):
    """A tool's precondition failed; the message is the one-line reason shown to the agent."""


NUTRIENTS = ("calories_kcal", "protein_g", "fat_g", "carbs_g", "sugar_g", "sodium_mg", "fiber_g")
"""The nutrients every scenario totals (a kitchen ingredient records just these)."""
LABELLED_NUTRITION_KEYS = ("basis", "serving_size_g", *NUTRIENTS)
"""A restaurant dish's or retail product's nutrition label."""


@dataclass
class Ctx:
    """What a tool sees: the database, the task's today (None when the task names none) and
    the execution rules of the profile in use."""

    conn: sqlite3.Connection
    today: dt.date | None = None
    rules: ToolRules = field(default_factory=ToolRules)

    @property
    def official(self) -> bool:
        """Arguments run as the official Python tools take them (``arguments=official``)."""
        return self.rules.arguments == "official"


@dataclass
class ScenarioDef:
    """One scenario: DDL, seed loader, canonical state dump and its tools.

    ``name_keys``: parameter names carrying catalogue names (matched by name rules when
    scoring). ``name_match``: how the scorer compares two such names: ``lookup`` (the sets of
    entities that :attr:`lookup` finds intersect, else containment), ``exact`` (case-insensitive
    equality) or ``contains`` (case-insensitive containment either way). ``query_tools``: the read
    tools the error classifier inspects for visual referents. ``user_key_aliases``: parameter
    names under which a task's ``key`` may also appear. ``convert_arguments(tool, arguments,
    rules)``: the scenario's own conversion of a call's arguments before validation (kitchen:
    the numeric-string quantities its official tools turn into floats)."""

    name: str
    ddl: str
    load: Callable[[sqlite3.Connection, dict[str, Any]], None]
    dump: Callable[..., dict[str, Any]]  # (conn, rules=None)
    tools: dict[str, Callable[..., Any]]
    name_keys: tuple[str, ...]
    name_match: str
    query_tools: frozenset[str]
    lookup: Callable[[sqlite3.Connection, str], set[str]] | None = None
    key_aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    convert_arguments: Callable[[str, dict[str, Any], ToolRules], dict[str, Any]] | None = None


def catalogue_ddl(*tables: str) -> str:
    """The ``CREATE TABLE`` statements of catalogue tables: ``(name PRIMARY KEY, record JSON)``."""
    return "".join(
        f"CREATE TABLE {t} (name TEXT PRIMARY KEY, record TEXT NOT NULL);\n" for t in tables
    )


def tool_table(namespace: dict[str, Any], names: Iterable[str]) -> dict[str, Callable[..., Any]]:
    """``{name: namespace[name]}``: a scenario module's tool functions (``globals()``) by name.

    Raises:
        KeyError: a listed tool has no function.
    """
    return {n: namespace[n] for n in names}


def named_tool(name: str, params: tuple[str, ...], impl: Callable[..., Any]) -> Callable[..., Any]:
    """A tool function ``name(ctx, <params>)`` calling ``impl(ctx, *arguments)``, the arguments
    in ``params`` order (positional or keyword, as a ``def`` tool takes them): for tools that
    several scenarios or fields share one body.

    Raises (from the tool): TypeError ``<name>() ...`` on a missing or unexpected argument, as a
    ``def`` tool does; whatever ``impl`` raises (its ToolError carries the official message).
    """
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    sig = inspect.Signature(
        [inspect.Parameter("ctx", kind, annotation=Ctx)]
        + [inspect.Parameter(p, kind) for p in params]
    )

    def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{name}() {exc}") from None
        return impl(*bound.args)

    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = sig  # type: ignore[attr-defined]
    tool.__doc__ = impl.__doc__
    return tool


def table_tools(
    impl: Callable[..., Any], params: tuple[str, ...], table: dict[str, Any]
) -> dict[str, Callable[..., Any]]:
    """One tool per ``table`` entry (tool name -> value), for tools that differ only in one
    value (the record field they read, the kind of line they add to an order):
    ``tool(ctx, <params>)`` returns ``impl(ctx, *arguments, value)`` (see :func:`named_tool`)."""

    def bound(value: Any) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            return impl(*args, value)

        call.__doc__ = impl.__doc__
        return call

    return {name: named_tool(name, params, bound(v)) for name, v in table.items()}


def finder_tools(
    where: Callable[..., Any], scope: tuple[str, ...], specs: dict[str, tuple[str, str, str]]
) -> dict[str, Callable[..., Any]]:
    """Tools listing the records whose ``field`` equals (``"is"``) or holds (``"has"``) the
    lower-cased value of parameter ``param``; ``specs``: tool name -> (param, field, rule).
    ``tool(ctx, <scope>, <param>)`` returns ``where(ctx, *scope arguments, predicate)``; a
    value that is no string fails (AttributeError) before ``where`` runs."""

    def finder(field_name: str, rule: str) -> Callable[..., Any]:
        def impl(ctx: Ctx, *args: Any) -> Any:
            *scoped, value = args
            v = value.lower()
            if rule == "is":
                return where(ctx, *scoped, lambda r: r[field_name] == v)
            return where(ctx, *scoped, lambda r: v in r[field_name])

        impl.__doc__ = f"The records whose {field_name} {rule} the value."
        return impl

    return {
        name: named_tool(name, (*scope, param), finder(field_name, rule))
        for name, (param, field_name, rule) in specs.items()
    }


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def catalogue(conn: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    """Every record of a catalogue table, in insertion order."""
    return [json.loads(r[0]) for r in conn.execute(f"SELECT record FROM {table} ORDER BY rowid")]


def record(conn: sqlite3.Connection, table: str, name: str) -> dict[str, Any] | None:
    """The record keyed by exactly ``name``, or None."""
    row = conn.execute(f"SELECT record FROM {table} WHERE name = ?", (name,)).fetchone()
    return json.loads(row[0]) if row else None


def put(conn: sqlite3.Connection, table: str, name: str, rec: dict[str, Any]) -> None:
    """Insert or replace (keeping the original position) a catalogue record."""
    conn.execute(
        f"INSERT INTO {table}(name, record) VALUES (?, ?) "
        "ON CONFLICT(name) DO UPDATE SET record = excluded.record",
        (name, canonical_json(rec)),
    )


def required(conn: sqlite3.Connection, table: str, name: str, missing: str) -> dict[str, Any]:
    """The record keyed by exactly ``name``; ToolError ``missing`` when there is none."""
    rec = record(conn, table, name)
    if rec is None:
        raise ToolError(missing)
    return rec


def names_where(conn: sqlite3.Connection, table: str, pred, key: str = "name") -> list[str]:
    """``record[key]`` of every record (in insertion order) that ``pred`` accepts."""
    return [r[key] for r in catalogue(conn, table) if pred(r)]


def containing(conn: sqlite3.Connection, table: str, query: str) -> list[dict[str, Any]]:
    """Records whose name contains ``query`` or is contained in it, case-insensitively."""
    q = query.lower()
    out = []
    for rec in catalogue(conn, table):
        n = str(rec.get("name", "")).lower()
        if q in n or n in q:
            out.append(rec)
    return out


def by_name_sorted(conn: sqlite3.Connection, table: str) -> RawJSON:
    """A catalogue table as canonical JSON ``{name: record}`` in key order (records are stored
    canonical, and SQLite's binary order of UTF-8 text is code-point order, as JSON's)."""
    rows = conn.execute(f"SELECT name, record FROM {table} ORDER BY name")
    return RawJSON(
        "{" + ",".join(json.dumps(n, ensure_ascii=False) + ":" + r for n, r in rows) + "}"
    )


def matching(conn: sqlite3.Connection, table: str, query: str, none: str) -> list[dict[str, Any]]:
    """:func:`containing`, or ToolError ``none`` when nothing matches."""
    found = containing(conn, table, query)
    if not found:
        raise ToolError(none)
    return found


def parse_day(value: Any, field_name: str) -> dt.date:
    """A ``YYYY-MM-DD`` string as a date; ToolError naming the field otherwise."""
    if not isinstance(value, str):
        raise ToolError(f"{field_name} must be a YYYY-MM-DD string")
    try:
        return dt.datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        raise ToolError(f"{field_name} must use YYYY-MM-DD format, got {value!r}") from None


def day_range(start_date: Any, end_date: Any) -> tuple[dt.date, dt.date]:
    """The two ends of a ``start_date``..``end_date`` query; ToolError when reversed."""
    start, end = parse_day(start_date, "start_date"), parse_day(end_date, "end_date")
    if start > end:
        raise ToolError("start_date cannot be later than end_date")
    return start, end


def one_of(value: Any, choices: frozenset[str], what: str) -> None:
    """ToolError ``invalid <what>: <value>`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ToolError(f"invalid {what}: {value}")


def check_nutrition(nutrition: dict[str, Any], keys: tuple[str, ...]) -> None:
    """A nutrition label given to a tool: it needs ``basis`` and only ``keys``."""
    if set(nutrition) - set(keys) or "basis" not in nutrition:
        raise ToolError(f"nutrition needs 'basis' and only the keys {', '.join(keys)}")


def lower_list(values: Any) -> list[Any]:
    return [v.lower() if isinstance(v, str) else v for v in (values or [])]


def nonempty(value: Any, field_name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"{field_name} must be a non-empty string")
    return value


def round2(x: float) -> float:
    return round(x, 2)
