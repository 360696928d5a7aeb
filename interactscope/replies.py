"""Response parsing: silence and tool calls from a model's raw answer (docs/protocol.md, silence and tool calls).

``parse_response`` never raises. What it could not parse is written to ``parse_error`` and the
answer stays a (non-silent) text reply, so a malformed tool call is scored like any other text.

Silence
    An empty / whitespace-only answer, or the silence token compared case-insensitively after
    stripping surrounding whitespace and punctuation from both the answer and the token. With the
    default token ``<SILENT>`` this means ``<silent>``, ``"<SILENT>."``, ``**<SILENT>**`` and also
    the bare word ``silent`` are silence (the brackets are punctuation). ``<SILENT> nothing yet``
    is a response: anything besides the token is a response.

Tool calls
    Every JSON value found in the text (fenced in ```` ``` ```` or bare; a list or a single object)
    is decoded with :meth:`json.JSONDecoder.raw_decode` at each ``{`` / ``[``, so string values that
    contain backticks or braces stay intact. Where JSON fails, the balanced bracket span is tried as
    a Python literal (``ast.literal_eval``: single quotes, ``True``/``None``). Accepted shapes:
    ``{"name": N, "arguments": {...}}`` (aliases ``tool``/``tool_name`` for the name and
    ``args``/``parameters``/``input`` for the arguments), the OpenAI shape
    ``{"function": {"name": N, "arguments": "<json string>"}}`` (with or without ``"type"``), and
    wrappers ``{"tool_calls": [...]}`` / ``{"tool_call": {...}}``. Other JSON values are ignored.
    Backends with native tool-call fields pass them as ``native_tool_calls``; those win over text.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from interactscope.core.records import ToolCall
from interactscope.engines.toolcalls import parse_arguments as _as_arguments
from interactscope.engines.toolcalls import python_literal as _literal

__all__ = ["ParsedResponse", "is_silence", "parse_response", "parse_tool_calls"]

_STRIP = string.whitespace + string.punctuation + "“”‘’«»。，、！？…：；「」『』（）【】·—–"
_NAME_KEYS = ("name", "tool", "tool_name")
_ARG_KEYS = ("arguments", "args", "parameters", "input")
_MAX_SCAN_CHARS = 200_000
# An object whose first key names a tool: a failed decode of it is a broken tool call.
_CALL_HEAD = re.compile(
    r"""\{\s*["']?(name|tool|tool_name|function|tool_calls|tool_call)["']?\s*:"""
)


@dataclass(frozen=True)
class ParsedResponse:
    """Result of :func:`parse_response`.

    Attributes:
        silent: the answer is silence (docs/protocol.md); then ``tool_calls`` is empty.
        text: the raw answer, unchanged (``""`` for ``None``).
        tool_calls: parsed calls, in order of appearance.
        parse_error: what could not be parsed (``None`` when nothing failed).
        reply: the answer without the tool-call spans and empty code fences, stripped.
    """

    silent: bool
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    parse_error: str | None = None
    reply: str = ""


def is_silence(text: str | None, silence_token: str = "<SILENT>") -> bool:
    """True iff ``text`` is empty/whitespace or equals the silence token (case-insensitive,
    surrounding whitespace and punctuation ignored on both sides; docs/protocol.md)."""
    if text is None:
        return True
    if not text.strip():
        return True
    core = text.strip(_STRIP).casefold()
    token_core = silence_token.strip(_STRIP).casefold()
    if not token_core:  # a token made only of punctuation: compare whitespace-stripped forms
        return text.strip().casefold() == silence_token.strip().casefold()
    return core == token_core


def _balanced_end(text: str, start: int) -> int | None:
    """Index one past the bracket that closes ``text[start]``, honouring Python/JSON string
    literals (single, double and triple quotes, backslash escapes). ``None`` if unbalanced."""
    pairs = {"{": "}", "[": "]", "(": ")"}
    stack: list[str] = []
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            triple = text[i : i + 3] == c * 3
            quote = c * 3 if triple else c
            i += len(quote)
            while i < n:
                if text[i] == "\\":
                    i += 2
                    continue
                if text.startswith(quote, i):
                    i += len(quote)
                    break
                if not triple and text[i] == "\n":
                    return None
                i += 1
            else:
                return None
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                return None
            if not stack:
                return i + 1
        i += 1
    return None


def _calls_from_value(value: Any, errors: list[str]) -> list[ToolCall] | None:
    """Tool calls in a decoded value, or ``None`` if it does not look like tool calls."""
    if isinstance(value, list):
        calls: list[ToolCall] = []
        for item in value:
            found = _calls_from_value(item, errors)
            if found:
                calls.extend(found)
        return calls or None
    if not isinstance(value, dict):
        return None
    for wrapper in ("tool_calls", "tool_call", "function_call", "calls"):
        if wrapper in value and isinstance(value[wrapper], (list, dict)):
            inner = _calls_from_value(value[wrapper], errors)
            if inner:
                return inner
    fn = value.get("function")
    if isinstance(fn, dict):
        name = fn.get("name")
        args_value = next((fn[k] for k in _ARG_KEYS if k in fn), None)
    else:
        name = fn if isinstance(fn, str) else None
        for key in _NAME_KEYS:
            if name is None and isinstance(value.get(key), str):
                name = value[key]
        args_value = next((value[k] for k in _ARG_KEYS if k in value), None)
    if not isinstance(name, str) or not name.strip():
        return None
    args, err = _as_arguments(args_value)
    if err:
        errors.append(f"tool {name!r}: {err}")
    return [ToolCall(name=name.strip(), arguments=args)]


def _normalize_native(native: Sequence[Any], errors: list[str]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for item in native:
        if isinstance(item, ToolCall):
            calls.append(item)
            continue
        if not isinstance(item, dict):
            for attr in ("model_dump", "to_dict", "dict"):
                if hasattr(item, attr):
                    try:
                        item = getattr(item, attr)()
                        break
                    except Exception:  # noqa: BLE001
                        continue
        found = _calls_from_value(item, errors) if isinstance(item, dict) else None
        if found:
            calls.extend(found)
        else:
            errors.append(f"native tool call not understood: {str(item)[:80]!r}")
    return calls


def parse_tool_calls(text: str) -> tuple[list[ToolCall], list[tuple[int, int]], list[str]]:
    """Find tool calls in ``text``.

    Returns:
        (calls, spans, errors): the calls in order; the ``(start, end)`` character spans of the
        values they came from; human-readable failures (a bracket span mentioning ``name`` or
        ``function`` that neither JSON nor a Python literal could decode, bad ``arguments``).
    """
    calls: list[ToolCall] = []
    spans: list[tuple[int, int]] = []
    errors: list[str] = []
    decoder = json.JSONDecoder()
    scan = text[:_MAX_SCAN_CHARS]
    i, n = 0, len(scan)
    while i < n:
        c = scan[i]
        if c not in "{[":
            i += 1
            continue
        value: Any = None
        end: int | None = None
        json_error: str | None = None
        try:
            value, end = decoder.raw_decode(scan, i)
        except ValueError as exc:
            json_error = str(exc)
        if end is None:
            close = _balanced_end(scan, i)
            literal_error = "unbalanced brackets"
            if close is not None:
                try:
                    value = _literal(scan[i:close])
                    end = close
                except Exception as exc:  # noqa: BLE001
                    literal_error = type(exc).__name__
            if end is None and _CALL_HEAD.match(scan, i):
                errors.append(
                    f"unparsable tool call at char {i}: JSON: {json_error}; "
                    f"Python literal: {literal_error}"
                )
                i = close if close is not None else n  # the rest belongs to the broken call
                continue
        if end is None:
            i += 1
            continue
        found = _calls_from_value(value, errors)
        if found:
            calls.extend(found)
            spans.append((i, end))
            i = end
        elif isinstance(value, (dict, list)) and value:
            i = end  # a JSON value that is not a tool call: skip it whole
        else:
            i += 1
    if len(text) > _MAX_SCAN_CHARS:
        errors.append(f"only the first {_MAX_SCAN_CHARS} characters were scanned for tool calls")
    return calls, spans, errors


def _strip_spans(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text.strip()
    parts, last = [], 0
    for a, b in spans:
        parts.append(text[last:a])
        last = b
    parts.append(text[last:])
    out = "".join(parts)
    # Drop code fences left empty by the removal (```json\n``` and the like).
    out = re.sub(r"```[A-Za-z_]*\s*```", "", out)
    return out.strip()


def parse_response(
    text: str | None,
    silence_token: str = "<SILENT>",
    *,
    native_tool_calls: Sequence[Any] | None = None,
) -> ParsedResponse:
    """Parse a raw model answer into silence / text / tool calls (docs/protocol.md). Never raises.

    Args:
        text: the raw answer (``None`` is treated as empty).
        silence_token: the token the model was told to answer when silent (``settings.silence_token``).
        native_tool_calls: tool calls from the backend's own fields (OpenAI ``message.tool_calls``
            objects or dicts); when non-empty they are used instead of calls found in the text.

    Returns:
        A :class:`ParsedResponse`. An answer with tool calls is never silent.
    """
    try:
        raw = "" if text is None else (text if isinstance(text, str) else str(text))
        errors: list[str] = []
        native = _normalize_native(native_tool_calls, errors) if native_tool_calls else []
        if native:
            return ParsedResponse(
                silent=False,
                text=raw,
                tool_calls=native,
                parse_error="; ".join(errors) or None,
                reply="" if is_silence(raw, silence_token) else raw.strip(),
            )
        if is_silence(raw, silence_token):
            return ParsedResponse(
                silent=True, text=raw, tool_calls=[], parse_error="; ".join(errors) or None
            )
        calls, spans, text_errors = parse_tool_calls(raw)
        errors.extend(text_errors)
        return ParsedResponse(
            silent=False,
            text=raw,
            tool_calls=calls,
            parse_error="; ".join(errors) or None,
            reply=_strip_spans(raw, spans),
        )
    except Exception as exc:  # noqa: BLE001 - the contract is: never raise
        raw = text if isinstance(text, str) else ""
        return ParsedResponse(
            silent=False, text=raw, tool_calls=[], parse_error=f"internal parser error: {exc!r}"
        )
