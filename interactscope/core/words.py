"""Words in output lines: counts with the right plural (``1 task``, ``2 tasks``)."""

from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``"1 task"``, ``"2 tasks"``; ``many`` is an irregular plural (``"trajectories"``)."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"
