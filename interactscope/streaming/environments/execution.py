"""Streamed T1 tool calls executed against an EgoBench scenario environment
(docs/protocol.md#environments).

:class:`StreamEnvironments` is the driver's ``tool_executor``: a fresh :class:`Environment` per
environment interaction per run (built from the benchmark's ``environments`` declaration); each
call's :class:`ToolResult` is returned as JSON for the record."""

from __future__ import annotations

import json
from typing import Any

from interactscope.egobench.env import Environment
from interactscope.egobench.records import ToolSpec
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.schema import Interaction, ToolCall

__all__ = ["InteractionEnvironment", "StreamEnvironments", "fresh_environment"]


def fresh_environment(bench: Benchmark, env_id: str) -> Environment:
    """A fresh environment of the benchmark's declared environment ``env_id``."""
    info = bench.environments[env_id]
    tools = [
        ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
        for t in info.tools.values()
    ]
    return Environment(info.decl.scenario, tools, info.seed)


class InteractionEnvironment:
    """One interaction's environment for one run."""

    def __init__(self, env: Environment):
        self.env = env

    def execute(self, call: ToolCall) -> dict[str, Any]:
        result = self.env.call(call.name, call.arguments)
        # a JSON round trip: the record stores exactly what a resume reads back
        return json.loads(json.dumps(result.model_dump(mode="json"), default=str))

    def state_hash(self) -> str:
        return self.env.state_hash()

    def close(self) -> None:
        self.env.close()


class StreamEnvironments:
    """``tool_executor`` of a benchmark with environments: opens a fresh environment for each
    interaction that names one (``query.environment``), ``None`` for the others."""

    def __init__(self, bench: Benchmark):
        self.bench = bench

    def open(self, interaction: Interaction) -> InteractionEnvironment | None:
        env_id = interaction.query.environment
        if env_id is None:
            return None
        return InteractionEnvironment(fresh_environment(self.bench, env_id))
