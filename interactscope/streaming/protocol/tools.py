"""Executing streamed tool calls (docs/protocol.md#environments): the driver's view.

An interaction that names an environment (``query.environment``) gets its own executor for the
run; the driver executes each record's tool calls through it in time order, keeps each result on
the record (``tool_results``) and the final state hash on the last decision point
(``env_state_hash``). The implementation lives below in the layers' sense
(``interactscope.streaming.environments.execution``) and is injected by ``collect``."""

from __future__ import annotations

import json
from typing import Any, Protocol

from interactscope.streaming.schema import Interaction, ResponseRecord, ToolCall

__all__ = ["InteractionTools", "ToolExecutor", "fmt_results", "results_so_far"]


class InteractionTools(Protocol):
    """One interaction's environment: executes calls, reports its state hash."""

    def execute(self, call: ToolCall) -> dict[str, Any]: ...

    def state_hash(self) -> str: ...

    def close(self) -> None: ...


class ToolExecutor(Protocol):
    """Gives a fresh :class:`InteractionTools` per interaction, or ``None`` for an interaction
    without an environment."""

    def open(self, interaction: Interaction) -> InteractionTools | None: ...


def results_so_far(spoken: list[ResponseRecord]) -> list[dict[str, Any]]:
    """The executed calls of an interaction's records, in time order:
    ``{t, name, arguments, result}`` each (records without ``tool_results`` give nothing)."""
    out: list[dict[str, Any]] = []
    for rec in sorted(spoken, key=lambda r: r.t):
        results = (rec.model_extra or {}).get("tool_results") or []
        for call, res in zip(rec.tool_calls, results, strict=False):
            out.append({"t": rec.t, "name": call.name, "arguments": call.arguments, "result": res})
    return out


def fmt_results(executed: list[dict[str, Any]]) -> str:
    """The prompt text of executed calls and their results (``environment.show_results``)."""

    lines = ["Tool calls you made so far in this stream and their results:"]
    for e in executed:
        res = e["result"] or {}
        shown = res.get("output") if res.get("ok") else {"error": res.get("error")}
        args = json.dumps(e["arguments"], sort_keys=True, ensure_ascii=False, default=str)
        out = json.dumps(shown, sort_keys=True, ensure_ascii=False, default=str)
        lines.append(f"[{e['t']:g} s] {e['name']}({args}) -> {out}")
    return "\n".join(lines)
