"""Tests for interactscope.stats (docs/protocol.md#uncertainty-and-controls).

Reference numbers come from the Omni-InteractScope paper: the T8-C permutation reference
(20 three-step sequences, step coverage 8/20, 10/20, 12/20 → expected 2.40, interval [0, 5])
and the cooldown control on T8-A (22/122 → 10/122 recalled, −9.84 points, [−17.24, −2.46]).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from interactscope.stats import (
    BalancedBootstrapResult,
    BootstrapOptions,
    PairedDifference,
    Ratio,
    StatsWarning,
    UndefinedRatioError,
    balanced_mean_bootstrap,
    bootstrap_metrics,
    cluster_bootstrap,
    paired_difference,
    paired_metrics,
    permutation_reference,
)

B = 10_000


# ---------------------------------------------------------------- degenerate and small inputs


def test_all_equal_twenty_clusters_gives_zero_width_interval():
    r = cluster_bootstrap(np.ones(20), np.ones(20), np.arange(20))
    assert (r.estimate, r.low, r.high) == (1.0, 1.0, 1.0)
    assert r.n_clusters == 20 and r.n_resamples == B and r.n_valid == B and r.n_dropped == 0
    assert r.boot_se == 0.0


def test_all_equal_non_unit_ratio_is_exactly_c_despite_rounding():
    # per-cluster ratios 3/10, 6/20, 9/30 … all 0.3; resampled sums would round differently.
    k = np.arange(1, 21)
    r = cluster_bootstrap(3.0 * k, 10.0 * k, np.arange(20))
    assert r.estimate == 0.3 and r.low == 0.3 and r.high == 0.3


def test_identical_paired_runs_give_exactly_zero():
    rng = np.random.default_rng(1)
    clusters = rng.integers(0, 40, size=300)
    num = rng.random(300)  # non-integer numerators: rounding must still cancel
    den = num + rng.random(300)
    d = paired_difference((num, den, clusters), (num.copy(), den.copy(), clusters.copy()))
    assert (d.estimate, d.low, d.high) == (0.0, 0.0, 0.0)
    assert not any(math.isnan(v) for v in (d.estimate, d.low, d.high, d.boot_mean, d.boot_se))
    assert d.unit == "percentage points"


def test_one_cluster_of_fifty_items_warns_and_returns_point_estimate():
    hits = np.r_[np.ones(30), np.zeros(20)]
    with pytest.warns(StatsWarning, match="fewer than 2 clusters"):
        r = cluster_bootstrap(hits, np.ones(50), np.full(50, "rec-1"))
    assert r.estimate == 0.6 and r.low == 0.6 and r.high == 0.6
    assert r.n_clusters == 1 and r.n_valid == 0
    assert "fewer than 2 clusters" in r.note


def test_one_cluster_paired_and_balanced_also_warn():
    c = np.zeros(10, dtype=int)
    with pytest.warns(StatsWarning, match="fewer than 2 clusters"):
        d = paired_difference((np.ones(10), None, c), (np.zeros(10), None, c))
    assert d.estimate == d.low == d.high == -100.0
    with pytest.warns(StatsWarning, match="fewer than 2 clusters"):
        m = balanced_mean_bootstrap(
            {"T1": (np.ones(10), None, c), "T2": (np.zeros(5), None, c[:5])}
        )
    assert m.estimate == m.low == m.high == 0.5


def test_no_clusters_is_a_value_error():
    empty = np.array([])
    with pytest.raises(ValueError, match="no clusters"):
        cluster_bootstrap(empty, empty, empty)
    with pytest.raises(ValueError, match="no clusters"):
        paired_difference((empty, empty, empty), (empty, empty, empty))
    with pytest.raises(ValueError, match="no clusters"):
        balanced_mean_bootstrap({"T1": (empty, empty, empty)})
    with pytest.raises(ValueError):
        permutation_reference(np.zeros((0, 3)))


def test_issue_cooldown_difference_minus_9_84_points():
    # 122 single-episode clusters; plain run recalls 22, cooldown run 10 (the paper's cooldown control, docs/protocol.md#controls).
    n = 122
    plain = np.zeros(n)
    plain[:22] = 1
    cooldown = np.zeros(n)
    # Overlap of 5 recalled episodes: an assumption (the paper gives only the totals), chosen
    # because it reproduces the paper's interval width; the estimate does not depend on it.
    cooldown[17:27] = 1
    ep = np.arange(n)
    d = paired_difference((plain, None, ep), (cooldown, None, ep))
    assert d.estimate == pytest.approx(100 * (10 - 22) / 122)
    assert round(d.estimate, 2) == -9.84
    assert d.estimate_a == pytest.approx(22 / 122) and d.estimate_b == pytest.approx(10 / 122)
    # Paper: [−17.24, −2.46]; Monte-Carlo error of a 2.5 % quantile with B = 10^4 is ~0.3 pt.
    assert d.low == pytest.approx(-17.24, abs=1.0)
    assert d.high == pytest.approx(-2.46, abs=1.0)
    assert d.high < 0


def test_issue_permutation_five_by_two():
    x = np.array([[1, 1], [1, 0], [1, 1], [0, 1], [0, 0]])
    p = permutation_reference(x)
    assert p.observed == 2
    assert p.expected == 1.8  # 5 · 0.6 · 0.6, computed as one exact rational
    assert p.step_rates == (0.6, 0.6)
    assert p.low <= p.expected <= p.high


# ---------------------------------------------------------------- permutation reference


def _paper_t8c_outcomes() -> np.ndarray:
    """20 three-step episodes, step coverage 8, 10, 12 of 20, 3 complete (as the paper)."""
    x = np.zeros((20, 3), dtype=int)
    x[0:3] = 1  # 3 complete episodes
    x[3:8, 0] = 1  # step 1: 3 + 5 = 8
    x[8:15, 1] = 1  # step 2: 3 + 7 = 10
    x[3:12, 2] = 1  # step 3: 3 + 9 = 12
    assert x.sum(axis=0).tolist() == [8, 10, 12]
    return x


def _exact_complete_pmf(n: int, sizes: list[int]) -> np.ndarray:
    """Exact distribution of |S_1 ∩ … ∩ S_K| for independent uniform subsets of fixed sizes."""
    pmf = np.zeros(n + 1)
    pmf[sizes[0]] = 1.0
    for s in sizes[1:]:
        new = np.zeros(n + 1)
        for h, ph in enumerate(pmf):
            if ph:
                xs = np.arange(h + 1)
                new[: h + 1] += ph * sps.hypergeom(n, h, s).pmf(xs)
        pmf = new
    return pmf


def test_paper_t8c_permutation_reference():
    x = _paper_t8c_outcomes()
    p = permutation_reference(x, n_permutations=B, seed=0, keep_distribution=True)
    assert p.observed == 3
    assert p.expected == 2.4  # hand: 20 · 0.4 · 0.5 · 0.6
    assert p.step_rates == (0.4, 0.5, 0.6)
    # The exact permutation distribution (nested hypergeometrics) has mean 2.40,
    # P(X = 0) = 0.033 ≥ 0.025 and P(X ≤ 4) = 0.970 < 0.975 ≤ P(X ≤ 5) = 0.997, so its 95 %
    # reference interval is exactly [0, 5], the paper's. The Monte-Carlo CDF at 0 and 4 is ~4.5
    # and ~3 standard errors (B = 10^4) from the 2.5 / 97.5 % cut-offs, so [0, 5] is stable.
    pmf = _exact_complete_pmf(20, [8, 10, 12])
    assert (np.arange(21) * pmf).sum() == pytest.approx(2.4)
    cdf = np.cumsum(pmf)
    assert cdf[0] >= 0.025 and cdf[4] < 0.975 <= cdf[5]
    assert (p.low, p.high) == (0.0, 5.0)
    freq = np.bincount(p.distribution, minlength=21) / B
    assert np.max(np.abs(freq - pmf)) < 0.02
    assert p.permutation_mean == pytest.approx(2.4, abs=0.05)
    assert p.low <= p.observed <= p.high  # "3 lies inside the interval"
    assert 0 < p.p_at_least < 1 and 0 < p.p_at_most <= 1


def test_permutation_reference_is_reproducible_and_validates():
    x = _paper_t8c_outcomes()
    a = permutation_reference(x, n_permutations=2000, seed=7, keep_distribution=True)
    b = permutation_reference(x, n_permutations=2000, seed=7, keep_distribution=True)
    assert a == b and np.array_equal(a.distribution, b.distribution)
    assert permutation_reference(x.astype(bool), n_permutations=2000, seed=7) == a
    with pytest.raises(ValueError, match="0/1"):
        permutation_reference(x * 2)
    with pytest.raises(ValueError, match="2-D"):
        permutation_reference(x[:, 0])


def test_permutation_single_step_is_fixed():
    p = permutation_reference(np.array([[1], [0], [1]]), n_permutations=500)
    assert p.observed == 2 and p.expected == 2.0 and (p.low, p.high) == (2.0, 2.0)


# ---------------------------------------------------------------- hand-enumerable bootstrap


def test_two_clusters_enumerable_distribution():
    # Clusters 0/1 and 1/1: resamples {A,A}, {A,B}×2, {B,B} → ratio 0, 0.5, 1 w.p. 1/4, 1/2, 1/4.
    r = cluster_bootstrap([0, 1], [1, 1], ["A", "B"], keep_distribution=True)
    assert r.estimate == 0.5
    values, counts = np.unique(r.distribution, return_counts=True)
    assert values.tolist() == [0.0, 0.5, 1.0]
    assert counts / B == pytest.approx([0.25, 0.5, 0.25], abs=0.02)  # sd ≈ 0.005
    # 2.5 % and 97.5 % percentiles fall inside the 25 % masses at 0 and at 1.
    assert (r.low, r.high) == (0.0, 1.0)
    assert r.boot_mean == pytest.approx(0.5, abs=0.015)  # sd of the mean ≈ 0.0035
    assert r.boot_se == pytest.approx(math.sqrt(0.125), abs=0.01)


def test_two_clusters_unequal_denominators():
    # A = 1/1, B = 1/3: ratios AA = 1, AB = 2/4, BB = 2/6 (w.p. 1/4, 1/2, 1/4).
    r = cluster_bootstrap([1, 1], [1, 3], [0, 1], keep_distribution=True)
    assert r.estimate == 0.5
    assert sorted(set(np.round(r.distribution, 12))) == [round(1 / 3, 12), 0.5, 1.0]
    assert r.low == pytest.approx(1 / 3) and r.high == 1.0
    assert r.boot_mean == pytest.approx((1 + 1 + 1 / 3) / 4, abs=0.01)


def test_zero_denominator_resamples_are_dropped_and_reported():
    # Cluster "b" exists but has no target: the {b, b} resample (p = 1/4) is undefined.
    with pytest.warns(StatsWarning, match="dropped"):
        r = cluster_bootstrap([1, 0], [1, 0], ["a", "b"], keep_distribution=True)
    assert (r.estimate, r.low, r.high) == (1.0, 1.0, 1.0)
    assert r.n_valid + r.n_dropped == B
    assert r.n_dropped / B == pytest.approx(0.25, abs=0.02)
    assert r.distribution.size == r.n_valid and not np.isnan(r.distribution).any()
    assert "dropped" in r.note


def test_undefined_observed_ratio_raises():
    with pytest.raises(UndefinedRatioError):
        cluster_bootstrap([0, 0], [0, 0], [1, 2])
    with pytest.raises(ValueError):  # UndefinedRatioError is a ValueError
        paired_difference(([0, 0], [0, 0], [1, 2]), ([1, 0], [1, 1], [1, 2]))


# ---------------------------------------------------------------- conventions, reproducibility


def _synthetic(seed=0, n_clusters=60, n_items=400):
    rng = np.random.default_rng(seed)
    clusters = rng.integers(0, n_clusters, size=n_items)
    hits = (rng.random(n_items) < 0.3).astype(float)
    return hits, clusters


def test_reproducible_for_fixed_seed_and_seed_matters():
    hits, clusters = _synthetic()
    a = cluster_bootstrap(hits, None, clusters, seed=3, keep_distribution=True)
    b = cluster_bootstrap(hits, None, clusters, seed=3, keep_distribution=True)
    c = cluster_bootstrap(hits, None, clusters, seed=4, keep_distribution=True)
    assert a == b and np.array_equal(a.distribution, b.distribution)
    assert not np.array_equal(a.distribution, c.distribution)
    assert a.seed == 3


def test_item_rows_and_cluster_sums_and_row_order_agree():
    hits, clusters = _synthetic()
    per_item = cluster_bootstrap(hits, np.ones_like(hits), clusters)
    labels = np.unique(clusters)
    num = np.array([hits[clusters == c].sum() for c in labels])
    den = np.array([(clusters == c).sum() for c in labels], dtype=float)
    per_cluster = cluster_bootstrap(num, den, labels)
    perm = np.random.default_rng(9).permutation(hits.size)
    shuffled = cluster_bootstrap(hits[perm], None, clusters[perm])
    assert per_item == per_cluster == shuffled
    assert per_item.estimate == pytest.approx(hits.mean())


def test_ratio_from_frame():
    pd = pytest.importorskip("pandas")
    hits, clusters = _synthetic()
    frame = pd.DataFrame({"hit": hits, "cluster": [f"v{c:03d}" for c in clusters]})
    r = Ratio.from_frame(frame)
    assert r.estimate == pytest.approx(hits.mean()) and r.n_clusters == np.unique(clusters).size
    res = cluster_bootstrap(r.numerators, r.denominators, r.clusters, n_resamples=500)
    assert res.low <= res.estimate <= res.high


def test_close_to_scipy_bootstrap_on_the_same_statistic():
    hits, clusters = _synthetic(n_clusters=200, n_items=1500)
    labels = np.unique(clusters)
    num = np.bincount(np.searchsorted(labels, clusters), weights=hits)
    den = np.bincount(np.searchsorted(labels, clusters)).astype(float)
    ours = cluster_bootstrap(num, den, labels)
    ref = sps.bootstrap(
        (num, den),
        lambda n, d, axis=-1: n.sum(axis=axis) / d.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=B,
        method="percentile",
        rng=np.random.default_rng(1),
    )
    se = ref.standard_error
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.25 * se)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.25 * se)
    assert ours.boot_se == pytest.approx(se, rel=0.05)


def test_paired_difference_uses_the_same_resampled_clusters():
    hits, clusters = _synthetic()
    better = hits.copy()
    better[np.flatnonzero(hits == 0)[0]] = 1.0  # exactly one extra hit, in one cluster
    a, b = (hits, None, clusters), (better, None, clusters)
    d = paired_difference(a, b, keep_distribution=True)
    assert d.estimate == pytest.approx(100 / hits.size)
    assert d.distribution.min() >= 0.0 and d.low >= 0.0  # b ≥ a in every cluster
    # The paired distribution is exactly the difference of the two standalone bootstraps
    # (same seed, same cluster set → same resampled clusters).
    ra = cluster_bootstrap(*a, keep_distribution=True)
    rb = cluster_bootstrap(*b, keep_distribution=True)
    assert np.allclose(d.distribution, 100 * (rb.distribution - ra.distribution))
    assert (100 * (rb.distribution - ra.distribution)).min() >= -1e-12
    # Unpaired resampling (different seeds for a and b) would often go below 0.
    rb_other = cluster_bootstrap(*b, seed=1, keep_distribution=True)
    assert (rb_other.distribution - ra.distribution).min() < 0


def test_paired_strict_refuses_different_clusters():
    hits, clusters = _synthetic()
    keep = clusters != clusters[0]
    with pytest.raises(ValueError, match="different clusters"):
        paired_difference((hits, None, clusters), (hits[keep], None, clusters[keep]))
    d = paired_difference(
        (hits, None, clusters), (hits[keep], None, clusters[keep]), strict=False, n_resamples=500
    )
    assert isinstance(d, PairedDifference) and np.isfinite(d.low)


# ---------------------------------------------------------------- balanced mean, many metrics


def _tasks(seed=0):
    rng = np.random.default_rng(seed)
    comps = {}
    for j, task in enumerate(["T1", "T2", "T3", "T4", "T6", "T7"]):
        n = 40 + 10 * j
        clusters = rng.integers(0, 50 + 5 * j, size=n)  # clusters lack some tasks
        comps[task] = Ratio((rng.random(n) < 0.1 + 0.05 * j).astype(float), None, clusters)
    return comps


def test_balanced_mean_estimate_and_components():
    comps = _tasks()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatsWarning)  # no dropped resamples expected here
        m = balanced_mean_bootstrap(comps, n_resamples=2000)
    assert isinstance(m, BalancedBootstrapResult)
    assert m.estimate == pytest.approx(np.mean([c.estimate for c in comps.values()]))
    assert set(m.components) == set(comps)
    for name, c in m.components.items():
        assert c.estimate == pytest.approx(comps[name].estimate)
        assert c.low <= c.estimate <= c.high
    assert m.low <= m.estimate <= m.high
    # averaging six noisy ratios narrows the interval relative to the average component width
    assert m.high - m.low < np.mean([c.high - c.low for c in m.components.values()])


def test_balanced_mean_all_equal_and_identical_paired():
    k = np.arange(1, 11)
    comps = {t: (1.0 * k, 10.0 * k, k + i) for i, t in enumerate(["T1", "T2", "T3"])}
    m = balanced_mean_bootstrap(comps)
    assert m.estimate == m.low == m.high == 0.1
    comps6 = _tasks()
    d = paired_difference(comps6, dict(comps6), n_resamples=1000)
    assert d.estimate == d.low == d.high == 0.0
    assert all(c.low == c.high == 0.0 for c in d.components.values())


def test_bootstrap_metrics_matches_standalone_over_the_same_clusters():
    hits, clusters = _synthetic()
    on_time = np.maximum(hits, (np.random.default_rng(2).random(hits.size) < 0.2))
    metrics = {
        "on_time": (on_time.astype(float), None, clusters),
        "joint": (hits, None, clusters),
        "conditional": (hits, on_time.astype(float), clusters),
    }
    many = bootstrap_metrics(metrics, n_resamples=1000)
    for name, spec in metrics.items():
        assert many[name] == cluster_bootstrap(*spec, n_resamples=1000)
    pm = paired_metrics(metrics, metrics, n_resamples=500)
    assert all(v.low == v.high == 0.0 for v in pm.values())
    with pytest.raises(ValueError, match="different metrics"):
        paired_metrics(metrics, {"joint": metrics["joint"]})


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "args, match",
    [
        (([1, 0], [1], [0, 1]), "same length"),
        (([1, np.nan], [1, 1], [0, 1]), "finite"),
        (([1, 0], [1, -1], [0, 1]), ">= 0"),
        (([[1, 0]], [[1, 1]], [[0, 1]]), "1-D"),
    ],
)
def test_input_validation(args, match):
    with pytest.raises(ValueError, match=match):
        cluster_bootstrap(*args)


def test_option_validation():
    with pytest.raises(ValueError, match="confidence"):
        cluster_bootstrap([1, 0], None, [0, 1], confidence=95)
    with pytest.raises(ValueError, match="n_resamples"):
        cluster_bootstrap([1, 0], None, [0, 1], n_resamples=0)
    with pytest.raises(ValueError, match="one dtype|numbers or all strings"):
        paired_difference(([1, 0], None, [0, 1]), ([1, 0], None, ["0", "1"]), strict=False)


def test_confidence_changes_interval_width():
    hits, clusters = _synthetic()
    wide = cluster_bootstrap(hits, None, clusters, confidence=0.99)
    narrow = cluster_bootstrap(hits, None, clusters, confidence=0.5)
    assert wide.low < narrow.low <= narrow.high < wide.high
    assert narrow.confidence == 0.5


def test_undefined_metric_nan_option_in_many_metric_functions():
    hits, clusters = _synthetic()
    metrics = {
        "joint": (hits, None, clusters),
        "conditional": (np.zeros_like(hits), np.zeros_like(hits), clusters),  # no on-time
    }
    with pytest.raises(UndefinedRatioError, match="conditional"):
        bootstrap_metrics(metrics, n_resamples=200)
    with pytest.warns(StatsWarning, match="undefined"):
        res = bootstrap_metrics(metrics, n_resamples=200, undefined="nan")
    assert math.isnan(res["conditional"].estimate) and res["conditional"].n_valid == 0
    assert res["joint"] == cluster_bootstrap(hits, None, clusters, n_resamples=200)
    with pytest.warns(StatsWarning, match="undefined"):
        pm = paired_metrics(metrics, metrics, n_resamples=200, undefined="nan")
    assert math.isnan(pm["conditional"].low) and pm["joint"].low == 0.0


@pytest.mark.parametrize("labels", [[0.0, np.nan], np.array(["a", None], dtype=object)])
def test_missing_cluster_labels_are_rejected(labels):
    with pytest.raises(ValueError, match="missing"):
        cluster_bootstrap([1, 0], None, labels)


def test_bootstrap_options_defaults_and_errors():
    assert BootstrapOptions().kwargs() == {"n_resamples": 10_000, "seed": 0, "confidence": 0.95}
    assert BootstrapOptions.of(BootstrapOptions(seed=3), n_resamples=200).kwargs() == {
        "n_resamples": 200,
        "seed": 3,
        "confidence": 0.95,
    }
    with pytest.raises(ValueError, match="bootstrap option confidence"):
        BootstrapOptions.of(confidence=1.5)
    with pytest.raises(ValueError, match="bootstrap option resamples"):
        BootstrapOptions.of(resamples=10)
