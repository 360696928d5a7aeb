"""Words in output lines: a count with its noun in the right number ("1 decision point",
"2 decision points"), so no message prints "1 interactions"."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "one_decimal", "plural"]


def plural(n: int | float, noun: str, many: str | None = None) -> str:
    """``"{n} {noun}"`` for ``n == 1``, else ``"{n} {many}"`` (default: ``noun + "s"``; give
    ``many`` for irregular plurals or a phrase whose first word inflects, e.g.
    ``plural(n, "interaction with errors", "interactions with errors")``).

    >>> plural(1, "decision point"), plural(0, "error"), plural(2, "interaction")
    ('1 decision point', '0 errors', '2 interactions')
    """
    return f"{n} {noun if n == 1 else (many or noun + 's')}"


def one_decimal(x: float | None) -> str:
    """``x`` with one decimal as Python formats it (``f"{x:.1f}"``: the exact binary value,
    ties to even, so 6.25 is "6.2"), "—" for ``None`` or NaN: the one rounding rule of the
    leaderboard and the viewer (JavaScript's ``toFixed`` would print 6.25 as "6.3").

    >>> one_decimal(6.25), one_decimal(12.5), one_decimal(None)
    ('6.2', '12.5', '—')
    """
    if x is None or x != x:
        return "—"
    return f"{x:.1f}"


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"; did you mean A or B?"`` for the close matches of ``name`` among ``choices``
    (:func:`difflib.get_close_matches`, best first, at most 3, cutoff 0.6); empty without one."""
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""
