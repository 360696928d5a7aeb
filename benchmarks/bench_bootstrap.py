"""Bootstrap every metric of a paper-scale synthetic scored run and time it.

Run by hand (prints figures, asserts nothing about time):

    . .venv/bin/activate && python benchmarks/bench_bootstrap.py [--resamples 10000] [--seed 0]

The synthetic run mirrors the paper's scale (Omni-InteractScope, Yan et al., 2026): 1,112 video-record clusters (905
online videos for the explicit-request panel T1–T7, 207 self-recorded videos for the
assistance panel T8) and 1,790 targets: T1 200, T2 207, T3 208, T4 206, T5 115, T6 37,
T7 457 (207 interactions), T8 360 (T8-A 122, T8-B 151, T8-C 87 steps in 26 sequences).
Hits are Bernoulli draws near the paper's scores. Timed:

1. every metric with its own call (``cluster_bootstrap`` per ratio, ``balanced_mean_bootstrap``
   for the six-task mean) — what a naive report does;
2. every metric in one ``bootstrap_metrics`` call (one shared resample matrix);
3. ``paired_metrics`` for two runs (every metric, paired);
4. ``permutation_reference`` for Complete T8-C (20 three-step sequences);
5. ``scipy.stats.bootstrap`` on one ratio (the pooled target-level score over all clusters,
   and T7) with per-cluster (numerator, denominator) pairs, ``paired=True``,
   ``vectorized=True``, ``method='percentile'`` — against ``cluster_bootstrap`` on the same
   statistic.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings

import numpy as np
import scipy
from scipy import stats as sps

from interactscope.stats import (
    Ratio,
    balanced_mean_bootstrap,
    bootstrap_metrics,
    cluster_bootstrap,
    paired_metrics,
    permutation_reference,
)

N_ONLINE, N_SELF = 905, 207
#: task → (interactions, targets, hit rate near the paper's best model)
EXPLICIT = {
    "T1": (200, 200, 0.30),
    "T2": (207, 207, 0.25),
    "T3": (208, 208, 0.20),
    "T4": (206, 206, 0.11),
    "T5": (115, 115, 0.15),
    "T6": (37, 37, 0.20),
    "T7": (207, 457, 0.11),
}
ASSIST = {"T8-A": (122, 122, 0.23), "T8-B": (151, 151, 0.62), "T8-C": (26, 87, 0.52)}
SIX = ["T1", "T2", "T3", "T4", "T6", "T7"]


def synthetic_run(seed: int, shift: float = 0.0) -> tuple[dict, np.ndarray]:
    """Per-target rows → metrics as ``Ratio`` objects, plus T8-C 3-step outcomes.

    The benchmark structure (which target belongs to which video) is fixed; ``seed`` draws
    the hits, so two runs are paired over the same clusters.
    """
    structure = np.random.default_rng(12345)
    rng = np.random.default_rng(seed)
    online = np.array([f"online-{i:04d}" for i in range(N_ONLINE)])
    own = np.array([f"self-{i:03d}" for i in range(N_SELF)])
    metrics: dict[str, object] = {}
    per_task: dict[str, Ratio] = {}
    all_hits, all_clusters = [], []
    for panel, videos in ((EXPLICIT, online), (ASSIST, own)):
        for task, (n_inter, n_targets, p) in panel.items():
            inter_cluster = structure.choice(videos, size=n_inter)
            # spread targets over interactions (T7: 457 targets on 207 interactions)
            extra = structure.integers(0, n_inter, n_targets - n_inter)
            owner = np.r_[np.arange(n_inter), extra]
            clusters = inter_cluster[owner]
            hits = (rng.random(n_targets) < np.clip(p + shift, 0, 1)).astype(float)
            per_task[task] = Ratio(hits, None, clusters)
            all_hits.append(hits)
            all_clusters.append(clusters)
            if task == "T1":
                on_time = np.maximum(hits, rng.random(n_targets) < 0.1).astype(float)
                metrics["T1 on-time"] = Ratio(on_time, None, clusters)
                metrics["T1 joint"] = per_task[task]
                metrics["T1 conditional"] = Ratio(hits, on_time, clusters)
            else:
                metrics[task] = per_task[task]
    metrics["six-task mean"] = {t: per_task[t] for t in SIX}
    metrics["all targets"] = Ratio(np.concatenate(all_hits), None, np.concatenate(all_clusters))
    # output volume: non-silent responses per minute of probed stream, per cluster
    videos = np.r_[online, own]
    minutes = structure.uniform(0.5, 5.0, size=videos.size)
    responses = rng.poisson(3.0 * minutes)
    metrics["output volume (/min)"] = Ratio(responses.astype(float), minutes, videos)
    steps = (rng.random((20, 3)) < [0.4, 0.5, 0.6]).astype(int)
    return metrics, steps


def timed(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def per_cluster(r: Ratio) -> tuple[np.ndarray, np.ndarray]:
    labels, inv = np.unique(r.clusters, return_inverse=True)
    return (
        np.bincount(inv, weights=r.numerators, minlength=labels.size),
        np.bincount(inv, weights=r.denominators, minlength=labels.size),
    )


def ratio_stat(num, den, axis=-1):
    return num.sum(axis=axis) / den.sum(axis=axis)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="best of N timings")
    args = ap.parse_args()
    B, seed, rep = args.resamples, args.seed, args.repeat
    warnings.simplefilter("ignore")  # rare dropped resamples in tiny tasks are reported below

    run_a, steps = synthetic_run(1)
    run_b, _ = synthetic_run(2, shift=0.02)
    n_clusters = np.unique(
        np.concatenate(
            [m.clusters for m in run_a.values() if isinstance(m, Ratio)]
            + [r.clusters for r in run_a["six-task mean"].values()]
        )
    ).size
    n_targets = sum(n for _, n, _ in list(EXPLICIT.values()) + list(ASSIST.values()))
    print(f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}")
    print(f"synthetic run: {n_clusters} clusters, {n_targets} targets, {len(run_a)} metrics")
    print(f"B = {B} resamples, seed = {seed}, best of {rep}\n")

    def each():
        out = {}
        for name, m in run_a.items():
            if isinstance(m, Ratio):
                out[name] = cluster_bootstrap(
                    m.numerators, m.denominators, m.clusters, n_resamples=B, seed=seed
                )
            else:
                out[name] = balanced_mean_bootstrap(m, n_resamples=B, seed=seed)
        return out

    t_each, res_each = timed(each, rep)
    t_all, res_all = timed(lambda: bootstrap_metrics(run_a, n_resamples=B, seed=seed), rep)
    t_pair, res_pair = timed(lambda: paired_metrics(run_a, run_b, n_resamples=B, seed=seed), rep)
    t_perm, perm = timed(lambda: permutation_reference(steps, n_permutations=B, seed=seed), rep)

    print(f"{'metric':22s} {'estimate':>9s} {'95% interval':>20s} {'clusters':>8s} {'dropped':>7s}")
    for name, r in res_all.items():
        unit = "" if "volume" in name else " %"
        k = 1 if "volume" in name else 100
        print(
            f"{name:22s} {k * r.estimate:8.2f}{unit[:1]} "
            f"[{k * r.low:7.2f}, {k * r.high:7.2f}]{unit} {r.n_clusters:8d} {r.n_dropped:7d}"
        )
    d = res_pair["six-task mean"]
    print(f"\npaired six-task mean b − a: {d.estimate:+.2f} points [{d.low:+.2f}, {d.high:+.2f}]")
    print(
        f"Complete T8-C: observed {perm.observed}, expected {perm.expected:.2f}, "
        f"reference [{perm.low:.0f}, {perm.high:.0f}] (step rates {perm.step_rates})\n"
    )

    print("time (s)")
    print(f"  every metric, one call each ({len(res_each):2d} calls) : {t_each:8.3f}")
    print(f"  every metric, bootstrap_metrics (1 call) : {t_all:8.3f}")
    print(f"  every metric, paired_metrics (2 runs)    : {t_pair:8.3f}")
    print(f"  permutation_reference (20 × 3)           : {t_perm:8.3f}")

    for name in ("all targets", "T7"):
        m = run_a[name]
        num, den = per_cluster(m)
        t_ours, ours = timed(
            lambda m=m: cluster_bootstrap(
                m.numerators, m.denominators, m.clusters, n_resamples=B, seed=seed
            ),
            rep,
        )
        t_sp, sp = timed(
            lambda num=num, den=den: sps.bootstrap(
                (num, den),
                ratio_stat,
                paired=True,
                vectorized=True,
                n_resamples=B,
                method="percentile",
                confidence_level=0.95,
                rng=np.random.default_rng(seed),
            ),
            rep,
        )
        ci = sp.confidence_interval
        print(
            f"\none ratio '{name}' ({num.size} clusters): cluster_bootstrap {t_ours:.3f} s, "
            f"scipy.stats.bootstrap {t_sp:.3f} s → scipy / ours = {t_sp / t_ours:.1f}×"
        )
        print(
            f"  interval ours [{100 * ours.low:.2f}, {100 * ours.high:.2f}] %, scipy "
            f"[{100 * ci.low:.2f}, {100 * ci.high:.2f}] %, estimate {100 * ours.estimate:.2f} %"
        )
    print(
        f"\nevery metric via bootstrap_metrics vs one scipy call per ratio metric "
        f"(≈ {len(run_a) - 1} ratios): scipy would take ≈ {(len(run_a) - 1) * t_sp:.2f} s "
        "at the T7 cost per ratio"
    )


if __name__ == "__main__":
    main()
