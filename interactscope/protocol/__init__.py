"""Collection protocol: decision grid, observations, prompts, response parsing, drivers (SPEC §2)."""

from interactscope.protocol.grid import decision_grid

__all__ = ["decision_grid"]
