"""Collection protocol: decision grid, observations, prompts, response parsing, drivers (docs/protocol.md, collection)."""

from interactscope.replies import ParsedResponse, parse_response
from interactscope.streaming.protocol.grid import decision_grid

__all__ = ["ParsedResponse", "decision_grid", "parse_response"]
