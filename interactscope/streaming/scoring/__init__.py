"""Scoring: first-response allocation (T1–T7), order-preserving matching (T8), the metric table.

The run-level entry point is :func:`interactscope.streaming.scoring.run.score_run` (``interactscope score``);
every metric is defined once, in :data:`interactscope.streaming.scoring.metrics.METRICS`.
"""

from interactscope.streaming.scoring.allocation import (
    OUTCOMES,
    Group,
    TargetAllocation,
    allocate_first_response,
)
from interactscope.streaming.scoring.matching import (
    MatchResult,
    match_order_preserving,
    match_with_unjudged,
)

__all__ = [
    "OUTCOMES",
    "Group",
    "MatchResult",
    "TargetAllocation",
    "allocate_first_response",
    "match_order_preserving",
    "match_with_unjudged",
]
