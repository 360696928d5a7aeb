"""Trials and pass^k (τ-bench): a task played n times with c successes (JointSucc) has
pass^k = C(c, k) / C(n, k), the chance that k trials drawn without replacement from its n all
succeed; a run's pass^k is the mean over tasks (Yao et al., τ-bench, 2024, eq. 1). pass^1 is
the mean success rate. Intervals: cluster bootstrap over variants (``interactscope.stats``),
as the report's (docs/egobench.md, "Trials and pass^k")."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from math import comb

from interactscope.stats import StatsWarning, cluster_bootstrap


def pass_hat_k(c: int, n: int, k: int) -> float:
    """C(c, k) / C(n, k) for one task: ``c`` successes of ``n`` trials, ``1 <= k <= n``.

    Raises:
        ValueError: ``k`` outside 1..n or ``c`` outside 0..n."""
    if not 1 <= k <= n:
        raise ValueError(f"pass^k: k={k} must be between 1 and the trials n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"pass^k: successes c={c} must be between 0 and n={n}")
    return comb(c, k) / comb(n, k)


def pass_k(
    outcomes: Mapping[tuple[str, int], Sequence[bool]],
    trials: int,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> dict[int, dict[str, float | int | str | None]]:
    """pass^k for k = 1..``trials`` over tasks.

    Args:
        outcomes: ``(variant, task_id) -> [JointSucc of each trial played]``; a trial not
            played counts as a failure (n is always ``trials``, as a task without an episode
            fails).
        trials: K, the trials planned per task.

    Returns:
        ``{k: {"estimate", "low", "high", "tasks", "clusters", "note"}}``: the mean of
        C(c,k)/C(n,k) over tasks with its 95 % cluster-bootstrap percentile interval (cluster
        = variant; one variant gives a zero-width interval and a note).

    Raises:
        ValueError: no tasks, or a task with more outcomes than ``trials``."""
    if not outcomes:
        raise ValueError("pass^k: no tasks to score")
    keys = sorted(outcomes)
    counts = []
    for key in keys:
        got = list(outcomes[key])
        if len(got) > trials:
            raise ValueError(f"pass^k: {key[0]}:{key[1]} has {len(got)} outcomes > {trials} trials")
        counts.append(sum(bool(x) for x in got))
    clusters = [v for v, _ in keys]
    out: dict[int, dict[str, float | int | str | None]] = {}
    for k in range(1, trials + 1):
        values = [pass_hat_k(c, trials, k) for c in counts]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StatsWarning)
            r = cluster_bootstrap(values, None, clusters, n_resamples=n_resamples, seed=seed)
        notes = [str(w.message) for w in caught if issubclass(w.category, StatsWarning)]
        out[k] = {
            "estimate": r.estimate,
            "low": r.low,
            "high": r.high,
            "tasks": len(keys),
            "clusters": r.n_clusters,
            "note": "; ".join(notes) or None,
        }
    return out
