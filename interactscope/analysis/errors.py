"""The one error type of the analysis package."""

from __future__ import annotations

__all__ = ["AnalysisError"]


class AnalysisError(ValueError):
    """A run cannot be analysed as asked (not scored, not comparable, wrong control run); the
    message says why and what to run instead."""
