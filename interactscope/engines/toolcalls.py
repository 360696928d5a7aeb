"""Tool-call arguments from what a model wrote: a JSON object string, a Python-literal string
(single quotes, ``True``/``None``, or JSON's ``true``/``false``/``null``), or a mapping.

Used for the native tool-call fields of chat backends here and for tool calls found in answer
text (``interactscope.replies``). Never raises: what cannot be read is kept under
``_unparsed`` with a reason.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from interactscope.core.records import ToolCall

__all__ = ["native_tool_call", "parse_arguments", "python_literal"]


def python_literal(span: str) -> Any:
    """Python literal of ``span``; JSON's ``true``/``false``/``null`` also accepted.

    Raises:
        ValueError, SyntaxError: ``span`` is not a literal.
    """
    try:
        return ast.literal_eval(span)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    fixed = _replace_bare_words(span, {"true": "True", "false": "False", "null": "None"})
    return ast.literal_eval(fixed)


def _replace_bare_words(span: str, table: dict[str, str]) -> str:
    """Replace whole bare words outside string literals (for JSON-ish Python literals)."""
    out: list[str] = []
    i, n = 0, len(span)
    while i < n:
        c = span[i]
        if c in "\"'":
            j = i + 1
            while j < n and span[j] != c:
                j += 2 if span[j] == "\\" else 1
            out.append(span[i : j + 1])
            i = j + 1
            continue
        if c.isalpha():
            j = i
            while j < n and (span[j].isalnum() or span[j] == "_"):
                j += 1
            word = span[i:j]
            out.append(table.get(word, word))
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_arguments(value: Any) -> tuple[dict[str, Any], str | None]:
    """(arguments dict, error or None). ``None`` and blank strings are no arguments."""
    if value is None:
        return {}, None
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}, None
    if isinstance(value, str):
        if not value.strip():
            return {}, None
        try:
            decoded = json.loads(value)
        except ValueError:
            try:
                decoded = python_literal(value)
            except Exception:  # noqa: BLE001 - anything unparsable is recorded, never raised
                return {"_unparsed": value}, "arguments string is not JSON"
        if isinstance(decoded, dict):
            return {str(k): v for k, v in decoded.items()}, None
        return {"_unparsed": value}, "arguments string is not a JSON object"
    return {"_unparsed": value}, f"arguments of type {type(value).__name__} is not an object"


def native_tool_call(name: Any, arguments: Any) -> tuple[ToolCall | None, str | None]:
    """One native call (``function.name``, ``function.arguments``) as a :class:`ToolCall`;
    ``(None, reason)`` when it has no name."""
    if not isinstance(name, str) or not name.strip():
        return None, f"native tool call without a name: {str(arguments)[:80]!r}"
    args, err = parse_arguments(arguments)
    return ToolCall(name=name.strip(), arguments=args), (f"tool {name!r}: {err}" if err else None)
