"""The base of every error this package raises for bad input or a failed write."""

from __future__ import annotations


class InteractScopeError(Exception):
    """Base of interactscope's errors: the message is one line naming the file/field and the fix."""
