"""The one error base of the package."""

from __future__ import annotations


class InteractScopeError(Exception):
    """Base of every error interactscope raises on purpose (bad input, a run folder that cannot
    be resumed, an engine that fails): the message is one line naming the file/field and the
    fix, so a CLI command catches this one type and prints ``str(exc)``, never a traceback."""
