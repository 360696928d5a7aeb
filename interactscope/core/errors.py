"""The base of every error this package raises for bad input or a failed write."""

from __future__ import annotations


class InteractScopeError(Exception):
    """Base of interactscope's errors: the message is one line naming the file/field and the fix."""


def first_problem(exc: Exception) -> str:
    """One line for ``exc``: a pydantic ``ValidationError`` as ``field 'a.b': message`` (and how
    many more problems), anything else as the first line of its text."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            errs = errors()
        except Exception:  # not a pydantic error after all
            errs = []
        if errs:
            loc = ".".join(str(x) for x in errs[0].get("loc", ()))
            more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
            return (f"field '{loc}': " if loc else "") + str(errs[0].get("msg", "")) + more
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
