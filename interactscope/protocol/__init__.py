"""Collection protocol: decision grid, observations, prompts, response parsing, drivers (docs/protocol.md, collection)."""

from interactscope.protocol.grid import decision_grid
from interactscope.protocol.parsing import ParsedResponse, parse_response

__all__ = ["ParsedResponse", "decision_grid", "parse_response"]
