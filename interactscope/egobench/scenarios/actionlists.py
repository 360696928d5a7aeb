"""Per-user action lists shared by warehouse and household: append-only entries
``(name, required_action, due_date)``; removal needs all three to match exactly."""

from __future__ import annotations

import sqlite3
from typing import Any

from interactscope.egobench.scenarios.base import ToolError, nonempty, one_of, parse_day

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
