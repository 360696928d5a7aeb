"""EgoBench agents and their registry: ``oracle`` (replays the ground truth), ``none`` (never
calls a tool), and any configured model through the engine interface. A new agent policy
(e.g. EgoInteract) registers a factory with :func:`register_agent`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interactscope.core import registry as plugins
from interactscope.egobench.agents.base import (
    Agent,
    AgentStep,
    EpisodeContext,
    ToolEvent,
    Visual,
)
from interactscope.egobench.agents.baselines import NoneAgent, OracleAgent
from interactscope.egobench.agents.model import ModelAgent, engine_has_native_tools
from interactscope.egobench.agents.visual import VideoMissingError, load_visual, video_path
from interactscope.egobench.chat_models import load_chat_engine, unknown_name

__all__ = [
    "AGENTS",
    "Agent",
    "AgentStep",
    "EpisodeContext",
    "ModelAgent",
    "NoneAgent",
    "OracleAgent",
    "ToolEvent",
    "VideoMissingError",
    "Visual",
    "build_agent",
    "engine_has_native_tools",
    "load_visual",
    "register_agent",
    "video_path",
]

AgentFactory = Callable[[str], Agent]
"""``factory(spec) -> Agent``; ``spec`` is what followed the name (``egointeract:MODEL``)."""


KIND = "agents"
plugins.register(KIND, "oracle", lambda spec: OracleAgent())
plugins.register(KIND, "none", lambda spec: NoneAgent())
plugins.register(
    KIND, "egointeract", "interactscope.egobench.egointeract.factory:build_egointeract"
)
AGENTS: dict[str, AgentFactory] = plugins.table(KIND)
"""``--agent`` name -> factory (the ``agents`` table of :mod:`interactscope.core.registry`;
``interactscope.agents`` entry points add more)."""


def register_agent(name: str, factory: AgentFactory | str) -> None:
    """Make ``--agent NAME`` (or ``NAME:SPEC``) build ``factory(SPEC)`` (``"module:attr"``:
    imported on first use)."""
    plugins.register(KIND, name, factory)


def build_agent(spec: str) -> tuple[Agent, dict[str, Any]]:
    """The agent ``--agent SPEC`` names and its description for ``run.json``: a registered
    name (``oracle``, ``none``, ``NAME:ARG``) or a model name (``configs/models``).

    Raises:
        ChatModelError: a model that cannot be resolved or cannot chat (one line)."""

    head, _, rest = spec.partition(":")
    if plugins.registered(KIND, head):
        agent = plugins.lookup(KIND, head, what="agent")(rest)
        return agent, {"name": spec, **agent.describe()}
    unknown = unknown_name("--agent", spec, plugins.names(KIND))
    if unknown is not None:
        raise unknown
    engine, info = load_chat_engine(spec, "--agent")
    agent = ModelAgent(engine, info.name, wants_pixels=info.sees_pixels)
    return agent, {**info.model_dump(), **agent.describe()}
