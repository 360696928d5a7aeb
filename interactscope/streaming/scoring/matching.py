"""Order-preserving maximum matching for T8 (docs/protocol.md, order-preserving matching).

Targets k = 1..K and non-silent responses j = 1..M, both in time order, no grouping:

    D[k][j] = max(D[k+1][j], D[k][j+1], E[k][j] · (1 + D[k+1][j+1])),  D = 0 past either end.

The matched count is D[1][1]. Pairs (k, j) in a matching are strictly increasing in both indices,
so a response serves at most one target and a later step is never matched before an earlier one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["MatchResult", "match_order_preserving", "match_with_unjudged"]


@dataclass(frozen=True)
class MatchResult:
    """``count`` matched targets; ``pairs`` the recovered (target, response) index pairs, 0-based
    into the rows/columns of the matrix; ``excluded`` targets (rows) left out because their
    verdicts were unparseable and changed the maximum (see :func:`match_with_unjudged`)."""

    count: int
    pairs: list[tuple[int, int]]
    excluded: list[int] = field(default_factory=list)


def _as_bool_matrix(eligibility: Any) -> np.ndarray:
    arr = np.asarray(eligibility, dtype=object)
    if arr.size == 0:
        rows = len(eligibility) if isinstance(eligibility, Sequence) else 0
        return np.zeros((rows, 0), dtype=bool)
    if arr.ndim != 2:
        raise ValueError(f"eligibility must be a K×M matrix, got shape {arr.shape}")
    return np.vectorize(lambda v: bool(v) if v is not None else False, otypes=[bool])(arr)


def match_order_preserving(eligibility_matrix: Any) -> MatchResult:
    """Maximum order-preserving matching of targets (rows) to responses (columns) (docs/protocol.md, order-preserving matching).

    Args:
        eligibility_matrix: K×M array-like of E[k][j] ∈ {0, 1} (truthy = eligible; ``None`` counts
            as 0 here — use :func:`match_with_unjudged` for unparseable verdicts).

    Returns:
        :class:`MatchResult` with ``count`` = D[1][1] and one optimal matching. Ties are broken
        towards pairing the earliest target with the earliest response that keeps the optimum.

    Runs in O(K·M) time and memory.
    """
    e = _as_bool_matrix(eligibility_matrix)
    k_n, m_n = e.shape
    d = np.zeros((k_n + 1, m_n + 1), dtype=np.int64)
    for k in range(k_n - 1, -1, -1):
        for j in range(m_n - 1, -1, -1):
            best = max(d[k + 1, j], d[k, j + 1])
            if e[k, j]:
                best = max(best, 1 + d[k + 1, j + 1])
            d[k, j] = best
    pairs: list[tuple[int, int]] = []
    k = j = 0
    while k < k_n and j < m_n and d[k, j] > 0:
        if e[k, j] and d[k, j] == 1 + d[k + 1, j + 1]:
            pairs.append((k, j))
            k, j = k + 1, j + 1
        elif d[k, j] == d[k, j + 1]:
            j += 1
        else:
            k += 1
    return MatchResult(count=int(d[0, 0]), pairs=pairs)


def match_with_unjudged(eligibility_matrix: Sequence[Sequence[bool | None]]) -> MatchResult:
    """Order-preserving matching when some verdicts are unparseable (``None``).

    If reading every ``None`` as 0 and as 1 gives the same maximum, the ``None`` entries cannot
    matter and the result is that of the 0 reading. Otherwise the targets (rows) holding a ``None``
    are excluded — left out of numerator and denominator, never scored 0 (docs/protocol.md, metrics "judge
    health") — and the remaining rows are matched. ``excluded`` lists those rows; ``pairs`` index
    the original rows.
    """
    rows = [list(r) for r in eligibility_matrix]
    unknown = [k for k, r in enumerate(rows) if any(v is None for v in r)]
    low = match_order_preserving([[v is True for v in r] for r in rows]) if rows else None
    if not unknown or low is None:
        return low if low is not None else MatchResult(0, [])
    high = match_order_preserving([[v is not False for v in r] for r in rows])
    if high.count == low.count:
        return low
    keep = [k for k in range(len(rows)) if k not in set(unknown)]
    if not keep:
        return MatchResult(0, [], excluded=unknown)
    sub = match_order_preserving([[v is True for v in rows[k]] for k in keep])
    return MatchResult(
        count=sub.count, pairs=[(keep[a], b) for a, b in sub.pairs], excluded=unknown
    )
