"""Decision grid (docs/protocol.md, collection)."""

from __future__ import annotations

import math


def decision_grid(q: float, duration: float, step: float = 1.0) -> list[float]:
    """Decision times of an interaction: the sorted set {q, D} ∪ {k·step : k ∈ ℤ, q ≤ k·step ≤ D}.

    Args:
        q: query time in seconds.
        duration: clip duration D in seconds.
        step: grid step in seconds (``grid.step_s``; 1 = the paper's per-second grid).

    Returns:
        Times in seconds, ascending, each rounded to milliseconds, without duplicates.
        Example: ``decision_grid(3.4, 7.0) == [3.4, 4.0, 5.0, 6.0, 7.0]``.

    Raises:
        ValueError: q < 0, q > duration, or step <= 0.
    """
    if step <= 0:
        raise ValueError(f"grid step must be > 0, got {step}")
    if q < 0 or q > duration + 1e-9:
        raise ValueError(f"query time {q} outside [0, {duration}]")
    times = {round(float(q), 3), round(float(duration), 3)}
    k = math.ceil(round(q / step, 9))
    while k * step <= duration + 1e-9:
        times.add(round(float(k * step), 3))
        k += 1
    return sorted(t for t in times if t <= round(duration, 3))
