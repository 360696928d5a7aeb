"""The one error base of the package."""

from __future__ import annotations


class InteractScopeError(Exception):
    """Base of every error interactscope raises on purpose (bad input, a run folder that cannot
    be resumed, an engine that fails): the message is one line naming the file/field and the
    fix, so a CLI command catches this one type and prints ``str(exc)``, never a traceback."""


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
