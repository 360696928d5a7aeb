"""Words in output lines: a count with its noun in the right number ("1 decision point",
"2 decision points"), so no message prints "1 interactions"."""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int | float, noun: str, many: str | None = None) -> str:
    """``"{n} {noun}"`` for ``n == 1``, else ``"{n} {many}"`` (default: ``noun + "s"``; give
    ``many`` for irregular plurals or a phrase whose first word inflects, e.g.
    ``plural(n, "interaction with errors", "interactions with errors")``).

    >>> plural(1, "decision point"), plural(0, "error"), plural(2, "interaction")
    ('1 decision point', '0 errors', '2 interactions')
    """
    return f"{n} {noun if n == 1 else (many or noun + 's')}"
