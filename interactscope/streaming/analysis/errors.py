"""The one error type of the analysis package."""

from __future__ import annotations

from interactscope.core.errors import InteractScopeError

__all__ = ["AnalysisError", "CompareError"]


class AnalysisError(InteractScopeError, ValueError):
    """A run cannot be analysed as asked (not scored, not comparable, wrong control run); the
    message says why and what to run instead."""


CompareError = AnalysisError
"""Old name of :class:`AnalysisError` (raised by compare, controls and report alike)."""
