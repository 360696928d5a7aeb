"""What warehouse and household share: a catalogue of named records and per-user action lists
(append-only entries ``(name, required_action, due_date)``; removal needs all three to match
exactly)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from interactscope.egobench.scenarios.base import (
    Ctx,
    ScenarioDef,
    ToolError,
    by_name_sorted,
    catalogue_ddl,
    named_tool,
    names_where,
    nonempty,
    one_of,
    parse_day,
    put,
    required,
    table_tools,
)

DDL = """
CREATE TABLE action_users (user_id TEXT PRIMARY KEY);
CREATE TABLE actions (seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL,
  name TEXT NOT NULL, required_action TEXT NOT NULL, due_date TEXT NOT NULL);
"""


def load(conn: sqlite3.Connection, lists: list[dict[str, Any]], name_field: str) -> None:
    for entry in lists:
        uid = entry.get("user_id")
        if not uid:
            continue
        conn.execute("INSERT OR IGNORE INTO action_users VALUES (?)", (uid,))
        for a in entry.get("actions", []):
            conn.execute(
                "INSERT INTO actions(user_id, name, required_action, due_date) VALUES (?, ?, ?, ?)",
                (uid, a[name_field], a["required_action"], a["due_date"]),
            )


def entries(conn: sqlite3.Connection, user_id: str, name_field: str) -> list[dict[str, str]]:
    rows = conn.execute(
        "SELECT name, required_action, due_date FROM actions WHERE user_id = ? ORDER BY seq",
        (user_id,),
    )
    return [{name_field: n, "required_action": a, "due_date": d} for n, a, d in rows]


def dump(conn: sqlite3.Connection, name_field: str) -> dict[str, Any]:
    return {
        uid: sorted(
            entries(conn, uid, name_field),
            key=lambda a: (a[name_field], a["required_action"], a["due_date"]),
        )
        for (uid,) in conn.execute("SELECT user_id FROM action_users")
    }


def add(conn: sqlite3.Connection, user_id: str, name: str, action: str, due_date: str) -> None:
    nonempty(user_id, "user_id")
    parse_day(due_date, "due_date")
    conn.execute("INSERT OR IGNORE INTO action_users VALUES (?)", (user_id,))
    conn.execute(
        "INSERT INTO actions(user_id, name, required_action, due_date) VALUES (?, ?, ?, ?)",
        (user_id, name, action, due_date),
    )


def remove(conn: sqlite3.Connection, user_id: str, name: str, action: str, due_date: str) -> None:
    parse_day(due_date, "due_date")
    row = conn.execute(
        "SELECT seq FROM actions WHERE user_id = ? AND name = ? AND "
        "required_action = ? AND due_date = ? ORDER BY seq LIMIT 1",
        (user_id, name, action, due_date),
    ).fetchone()
    if row is None:
        raise ToolError("matching action was not found")
    conn.execute("DELETE FROM actions WHERE seq = ?", (row[0],))


# The tools' shared steps; ``label`` is the scenario's word for an entry ("household", "equipment").


def check_action(action: str, actions: frozenset[str], label: str) -> None:
    one_of(action, actions, f"{label} required action")


def add_tool(
    conn: sqlite3.Connection, user_id: str, name: str, action: str, due_date: str, label: str
) -> dict[str, str]:
    add(conn, user_id, name, action, due_date)
    return {"message": f"{label.capitalize()} action added successfully."}


def remove_tool(
    conn: sqlite3.Connection,
    user_id: str,
    name: str,
    action: str,
    due_date: str,
    actions: frozenset[str],
    label: str,
) -> dict[str, str]:
    check_action(action, actions, label)
    remove(conn, user_id, name, action, due_date)
    return {"message": f"{label.capitalize()} action removed successfully."}


def list_tool(conn: sqlite3.Connection, user_id: str, name_field: str) -> list[dict[str, str]]:
    nonempty(user_id, "user_id")
    return entries(conn, user_id, name_field)


@dataclass(frozen=True)
class Catalogue:
    """The named records of a household or warehouse scenario and its users' action lists.

    ``table``: the SQLite table, also the seed's and the state's key for the records.
    ``name_field``: the record field that names it (also the action entries' key and the
    action-list writers' parameter naming a record). ``noun``: what a record is ("household item",
    "equipment"; errors say it). ``label``: the scenario's word for an action ("household",
    "equipment"; the seed's action lists are ``<label>_action_lists``). ``param``: the
    parameter naming a record of the other tools. ``actions``: the required actions an entry may
    name. ``categories``, ``locations``: the values ``category`` and ``ideal_storage_location``
    may take. ``history_required``: a history field the record lacks fails the tool (KeyError,
    warehouse) instead of reading as empty (household). ``check``: a further check
    ``check(record, action)`` of an entry to add (ToolError when it fails)."""

    table: str
    name_field: str
    noun: str
    label: str
    param: str
    actions: frozenset[str]
    categories: frozenset[str]
    locations: frozenset[str]
    history_required: bool
    check: Callable[[dict[str, Any], str], None] | None = None

    @property
    def ddl(self) -> str:
        return catalogue_ddl(self.table) + DDL

    def load(self, conn: sqlite3.Connection, seed: dict[str, Any]) -> None:
        for raw in seed.get(self.table, []):
            name = raw[self.name_field]
            put(conn, self.table, name, {**raw, "name": name})
        load(conn, seed.get(f"{self.label}_action_lists", []), self.name_field)

    def dump(self, conn: sqlite3.Connection, rules=None) -> dict[str, Any]:
        return {
            self.table: by_name_sorted(conn, self.table),
            "user_action_lists": dump(conn, self.name_field),
        }

    def record(self, ctx: Ctx, name: str) -> dict[str, Any]:
        """The record named exactly ``name``; ToolError ``<noun> not found: <name>``."""
        return required(ctx.conn, self.table, name, f"{self.noun} not found: {name}")

    def names(self, ctx: Ctx, pred: Callable[[dict[str, Any]], bool]) -> list[str]:
        return names_where(ctx.conn, self.table, pred, self.name_field)

    def tools(
        self,
        names: tuple[str, str, str],
        fields: tuple[str, ...],
        histories: tuple[str, ...],
        instructions: str,
    ) -> dict[str, Callable[..., Any]]:
        """The tools every such scenario has; ``names`` = (the tool listing every record, the
        prefix of the getters, the prefix of the finders). Getters ``<get><field>`` for each of
        ``fields`` (as stored) and ``histories`` (a list copy), and
        ``<get>maintenance_and_usage_instructions`` (the ``instructions`` field of each of a
        list of records); finders ``<find>category`` and ``<find>ideal_storage_location``
        (values checked against :attr:`categories`, :attr:`locations`);
        ``add_to_<label>_action_list``, ``remove_from_<label>_action_list`` and
        ``get_<label>_action_list``."""
        all_names, prefix, find = names
        one = (self.param,)
        entry = ("user_id", self.name_field, "required_action", "due_date")
        made = [
            (f"add_to_{self.label}_action_list", entry, self._add_action),
            (f"remove_from_{self.label}_action_list", entry, self._remove_action),
            (f"get_{self.label}_action_list", ("user_id",), self._list_actions),
        ]
        return {
            **table_tools(self._value, one, {prefix + f: f for f in fields}),
            **table_tools(self._history, one, {prefix + f: f for f in histories}),
            **table_tools(
                self._instructions,
                one,
                {f"{prefix}maintenance_and_usage_instructions": instructions},
            ),
            **table_tools(
                self._choice,
                ("category",),
                {f"{find}category": ("category", self.categories, f"{self.noun} category")},
            ),
            **table_tools(
                self._choice,
                ("location",),
                {
                    f"{find}ideal_storage_location": (
                        "ideal_storage_location",
                        self.locations,
                        f"{self.label} storage location",
                    )
                },
            ),
            all_names: named_tool(all_names, (), self._all),
            **{name: named_tool(name, params, impl) for name, params, impl in made},
        }

    def scenario(
        self, name: str, tools: dict[str, Callable[..., Any]], name_keys: tuple[str, ...], **kw: Any
    ) -> ScenarioDef:
        """The scenario over this catalogue: names match by containment, every tool but the two
        action-list writers (``add_to_<label>_action_list``, ``remove_from_...``) is a query
        tool; ``kw``: further :class:`ScenarioDef` fields."""
        writes = {f"add_to_{self.label}_action_list", f"remove_from_{self.label}_action_list"}
        return ScenarioDef(
            name=name,
            ddl=self.ddl,
            load=self.load,
            dump=self.dump,
            tools=tools,
            name_keys=name_keys,
            name_match="contains",
            query_tools=frozenset(set(tools) - writes),
            **kw,
        )

    def _all(self, ctx: Ctx) -> list[str]:
        """Every record's name, in insertion order."""
        return self.names(ctx, lambda r: True)

    def _choice(self, ctx: Ctx, value: str, spec: tuple[str, frozenset[str], str]) -> list[str]:
        field, choices, what = spec
        one_of(value, choices, what)
        return self.names(ctx, lambda r: r[field] == value)

    def _value(self, ctx: Ctx, name: str, field: str) -> Any:
        return self.record(ctx, name)[field]

    def _history(self, ctx: Ctx, name: str, field: str) -> list[Any]:
        rec = self.record(ctx, name)
        return list(rec[field] if self.history_required else rec.get(field) or [])

    def _instructions(self, ctx: Ctx, names: list[str], field: str) -> dict[str, Any]:
        if not names:
            raise ToolError(f"{self.param} must be a non-empty list of {self.noun} names")
        return {n: self.record(ctx, n)[field] for n in names}

    def _add_action(
        self, ctx: Ctx, user_id: str, name: str, action: str, due_date: str
    ) -> dict[str, str]:
        """Add an entry for a record that exists, with an allowed (and checked) action."""
        nonempty(user_id, "user_id")
        rec = self.record(ctx, name)
        check_action(action, self.actions, self.label)
        if self.check is not None:
            self.check(rec, action)
        return add_tool(ctx.conn, user_id, name, action, due_date, self.label)

    def _remove_action(
        self, ctx: Ctx, user_id: str, name: str, action: str, due_date: str
    ) -> dict[str, str]:
        """Remove the first entry matching all three exactly."""
        return remove_tool(ctx.conn, user_id, name, action, due_date, self.actions, self.label)

    def _list_actions(self, ctx: Ctx, user_id: str) -> list[dict[str, str]]:
        """The user's entries in the order they were added."""
        return list_tool(ctx.conn, user_id, self.name_field)
