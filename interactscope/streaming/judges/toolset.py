"""T1's content check: the set of called tool names equals the target's set exactly
(case-insensitive; docs/protocol.md#content-check). No judge model is involved."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["toolset_match", "tool_names"]


def tool_names(calls: Iterable[Any]) -> frozenset[str]:
    """Case-folded, stripped names of tool calls (objects with ``name`` or dicts)."""
    out = set()
    for c in calls:
        name = c.get("name") if isinstance(c, dict) else getattr(c, "name", None)
        if isinstance(name, str) and name.strip():
            out.add(name.strip().casefold())
    return frozenset(out)


def toolset_match(calls: Iterable[Any], expected: Iterable[str]) -> bool:
    """True iff {called names} == {expected names}, case-insensitively. Repeated calls of the same
    tool count once; an extra or a missing tool makes it False."""
    return tool_names(calls) == frozenset(n.strip().casefold() for n in expected if n.strip())
