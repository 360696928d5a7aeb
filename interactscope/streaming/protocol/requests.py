"""The decision points of an interaction and the request an adapter gets at each one.

Used by the collection driver and by adapters that check requests before a run (vLLM
preflight), so both see exactly the same request."""

from __future__ import annotations

from collections.abc import Sequence

from interactscope.streaming.bench import Benchmark
from interactscope.streaming.protocol.grid import decision_grid
from interactscope.streaming.protocol.observation import Observation
from interactscope.streaming.protocol.types import DecisionRequest
from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.settings import Settings

__all__ = ["interaction_grid", "request_at"]


def interaction_grid(bench: Benchmark, interaction: Interaction, settings: Settings) -> list[float]:
    """Decision times (s) of one interaction; just [q] when its video could not be measured."""
    video = bench.video_of(interaction)
    if video.id in bench.media_errors or video.duration_s is None:
        return [round(interaction.q, 3)]
    return decision_grid(interaction.q, video.duration_s, settings.grid.step_s)


def request_at(
    bench: Benchmark,
    interaction: Interaction,
    t: float,
    settings: Settings,
    *,
    observation: Observation | None = None,
    history: Sequence[ResponseRecord] = (),
) -> DecisionRequest:
    """The :class:`DecisionRequest` of ``interaction`` at decision time ``t`` (s): its video, the
    benchmark root, the tools offered to the model, the causal ``observation`` (built by the
    caller, or ``None``) and the model's own last non-silent responses ``history``."""
    return DecisionRequest(
        interaction=interaction,
        video=bench.video_of(interaction),
        bench_root=bench.root,
        t=t,
        settings=settings,
        tools=bench.offered_tools(interaction),
        observation=observation,
        history=list(history),
    )
