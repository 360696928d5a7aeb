"""Uncertainty for scored runs: cluster bootstrap, paired differences, permutation reference.

Implements docs/protocol.md, uncertainty and controls ("Uncertainty and controls") and the aggregation of the paper:
every reported ratio is a target-level score Σ numerators / Σ denominators (docs/protocol.md, metrics), its
uncertainty is a 95 % percentile interval from B = 10,000 bootstrap resamples of *clusters*
(video records) drawn with replacement, and two runs are compared by a paired difference that
uses the same resampled clusters for both runs. Complete T8-C gets a permutation reference.

Input convention (all bootstrap functions)
------------------------------------------
A ratio is given as three 1-D arrays of the same length ``n``:

* ``numerators``   – float, finite (e.g. ``hit`` 0/1 per target row, or per-cluster hit sums);
* ``denominators`` – float, finite, ``>= 0`` (e.g. 1 per target row, or ``K_i`` per cluster);
  ``None`` means 1 per row (a plain hit rate);
* ``clusters``     – labels, all numbers or all strings, none missing, e.g. the video
  record id.

Rows may be per item (per target) or already per cluster; rows with the same label are summed
internally (``np.unique(..., return_inverse=True)`` + ``np.bincount``), so row order and
granularity never change a result. :class:`Ratio` bundles the three arrays
(:meth:`Ratio.from_frame` reads them from a pandas frame).

Resampling: each resample draws ``C`` clusters uniformly with replacement from the ``C``
distinct labels, i.e. a Multinomial(C, 1/C) count vector; the count matrix (generated in blocks
of about 2**18 cells from ``numpy.random.default_rng(seed)``: uniform indices + ``bincount``)
is multiplied by the per-cluster sums, so every ratio of every resample is one matrix product —
there is no Python loop over resamples. For a fixed seed the draws depend only on ``(C,
n_resamples)``; different metrics over the same cluster set therefore share their resamples.
:func:`bootstrap_metrics` / :func:`paired_metrics` resample the union of all labels they are
given (the run's video records), so every metric moves with the same clusters.

Units: ratios are fractions in [0, 1]; paired differences are percentage points (``b − a``).

Decisions on degenerate input (docs/protocol.md, uncertainty):

* no clusters (empty input) → ``ValueError``;
* fewer than 2 clusters → the point estimate as a zero-width interval, ``n_valid = 0`` and a
  :class:`StatsWarning` whose message contains "fewer than 2 clusters";
* all clusters with the same ratio → exactly ``[c, c]``: a resampled ratio is a weighted mean of
  the per-cluster ratios, so resampled values are clipped to [min, max] of the per-cluster
  ratios (this only removes floating-point rounding);
* two identical paired runs → exactly ``[0, 0]`` (both runs go through identical arithmetic);
* observed Σ denominators = 0 → :class:`UndefinedRatioError` (a ``ValueError``); the
  many-metric functions take ``undefined="nan"`` to get a NaN result with a note instead;
* a *resample* whose Σ denominators is 0 (the ratio is undefined there, e.g. a task present in
  few clusters) is **dropped**: the interval is taken over the remaining resamples, the result
  records ``n_valid`` / ``n_dropped`` and a :class:`StatsWarning` says how many were dropped.
  For a balanced mean or a paired difference a resample is dropped when any of its ratios is
  undefined. If every resample is dropped, :class:`UndefinedRatioError` is raised.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from interactscope.core.errors import InteractScopeError
from interactscope.core.settings import options_with

__all__ = [
    "B_DEFAULT",
    "BalancedBootstrapResult",
    "BootstrapOptions",
    "BootstrapResult",
    "PairedDifference",
    "PermutationReference",
    "Ratio",
    "StatsWarning",
    "UndefinedRatioError",
    "balanced_mean_bootstrap",
    "bootstrap_metrics",
    "cluster_bootstrap",
    "paired_difference",
    "paired_metrics",
    "permutation_reference",
]

#: Cells of the (resamples × clusters) count matrix generated per block. A constant, so the
#: random stream (hence every result) depends only on the seed, the cluster count and B.
_BLOCK_CELLS = 2**18

FEWER_THAN_2 = "fewer than 2 clusters"

B_DEFAULT = 10_000
"""Bootstrap resamples (and permutations) B of the paper."""
CONFIDENCE_DEFAULT = 0.95
SEED_DEFAULT = 0


class BootstrapOptions(BaseModel):
    """Options of every bootstrap: ``n_resamples`` B (resamples, also permutations), ``seed``
    of ``numpy.random.default_rng`` and ``confidence`` (central coverage, 0.95 → 2.5/97.5 %)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_resamples: int = Field(B_DEFAULT, ge=1)
    seed: int = Field(SEED_DEFAULT, ge=0)
    confidence: float = Field(CONFIDENCE_DEFAULT, gt=0, lt=1)

    @classmethod
    def of(cls, options: BootstrapOptions | None = None, **overrides: Any) -> BootstrapOptions:
        """``options`` (default: B = 10,000, seed 0, 95 %) with ``overrides`` (``None`` ignored).

        Raises:
            ValueError: an unknown option or an invalid value (one line naming it).
        """
        return options_with(
            cls, options, overrides, "bootstrap", "n_resamples >= 1, seed >= 0, 0 < confidence < 1"
        )

    def kwargs(self) -> dict[str, Any]:
        """``{"n_resamples", "seed", "confidence"}`` for the bootstrap functions."""
        return self.model_dump()


_LABEL_GROUPS = {"i": "number", "u": "number", "f": "number", "b": "number"}
_LABEL_GROUPS.update({"U": "text", "S": "text", "O": "text"})


class StatsWarning(UserWarning):
    """Degenerate bootstrap input (fewer than 2 clusters, dropped resamples)."""


class UndefinedRatioError(InteractScopeError, ValueError):
    """A ratio whose denominators sum to 0 (undefined), or with no defined resample."""


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Ratio:
    """One clustered ratio Σ numerators / Σ denominators (see the module docstring).

    Arrays are converted and validated on construction: 1-D, equal length, finite,
    denominators ``>= 0``. ``denominators=None`` means one per row.
    """

    numerators: np.ndarray
    denominators: np.ndarray | None
    clusters: np.ndarray

    def __post_init__(self) -> None:
        num = np.asarray(self.numerators, dtype=np.float64)
        clusters = np.asarray(self.clusters)
        if num.ndim != 1 or clusters.ndim != 1:
            raise ValueError("numerators and clusters must be 1-D arrays")
        if self.denominators is None:
            den = np.ones_like(num)
        else:
            den = np.asarray(self.denominators, dtype=np.float64)
            if den.ndim != 1:
                raise ValueError("denominators must be a 1-D array")
        if not (num.shape == den.shape == clusters.shape):
            raise ValueError(
                "numerators, denominators and clusters must have the same length, got "
                f"{num.shape[0]}, {den.shape[0]}, {clusters.shape[0]}"
            )
        if not (np.all(np.isfinite(num)) and np.all(np.isfinite(den))):
            raise ValueError("numerators and denominators must be finite (no NaN/inf)")
        if np.any(den < 0):
            raise ValueError("denominators must be >= 0")
        if clusters.dtype.kind == "f" and np.any(np.isnan(clusters)):
            raise ValueError("cluster labels must not be missing (NaN)")
        if clusters.dtype.kind == "O" and any(c is None or c != c for c in clusters):
            raise ValueError("cluster labels must not be missing (None/NaN)")
        object.__setattr__(self, "numerators", num)
        object.__setattr__(self, "denominators", den)
        object.__setattr__(self, "clusters", clusters)

    @classmethod
    def from_frame(
        cls,
        frame: Any,
        numerator: str = "hit",
        denominator: str | None = None,
        cluster: str = "cluster",
    ) -> Ratio:
        """Build from a pandas DataFrame: one row per item (or per cluster).

        ``denominator=None`` gives 1 per row, i.e. the hit rate of the rows.
        """
        den = None if denominator is None else frame[denominator].to_numpy()
        return cls(frame[numerator].to_numpy(), den, frame[cluster].to_numpy())

    @property
    def n_clusters(self) -> int:
        """Number of distinct cluster labels."""
        return int(np.unique(self.clusters).size)

    @property
    def estimate(self) -> float:
        """Σ numerators / Σ denominators (NaN when the denominators sum to 0)."""
        d = float(self.denominators.sum())
        return float(self.numerators.sum()) / d if d > 0 else float("nan")


RatioLike = Ratio | tuple
#: A metric: one ratio, or a balanced (unweighted) mean of named ratios (the six-task mean).
MetricLike = RatioLike | Mapping[str, RatioLike]


def _as_ratio(x: RatioLike) -> Ratio:
    if isinstance(x, Ratio):
        return x
    if isinstance(x, tuple) and len(x) == 3:
        return Ratio(*x)
    raise TypeError(
        "a ratio is a Ratio or a (numerators, denominators, clusters) tuple, "
        f"got {type(x).__name__}"
    )


def _is_balanced(x: Any) -> bool:
    return isinstance(x, Mapping)


def _check_options(n_resamples: int, confidence: float, seed: int) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)):
        raise TypeError("n_resamples must be an int")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError("confidence must be in (0, 1), e.g. 0.95")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError("seed must be an int (recorded in the result)")


def _options(
    n_resamples: int, confidence: float, seed: int, keep_distribution: bool
) -> dict[str, Any]:
    """The checked options of one bootstrap call, as :func:`_run` takes them."""
    _check_options(n_resamples, confidence, seed)
    return dict(
        n_resamples=int(n_resamples),
        confidence=float(confidence),
        seed=int(seed),
        keep_distribution=keep_distribution,
    )


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BootstrapResult:
    """A point estimate with its cluster-bootstrap percentile interval.

    ``estimate``, ``low``, ``high``, ``boot_mean`` and ``boot_se`` are in ``unit``
    ("fraction" for ratios, "percentage points" for paired differences). ``n_valid`` resamples
    entered the interval (``n_dropped = n_resamples − n_valid`` had an undefined ratio);
    ``n_valid = 0`` with a zero-width interval means fewer than 2 clusters. ``distribution``
    holds the valid resampled values when asked for (``keep_distribution=True``).
    """

    estimate: float
    low: float
    high: float
    confidence: float
    n_clusters: int
    n_resamples: int
    n_valid: int
    seed: int
    boot_mean: float
    boot_se: float
    unit: str = "fraction"
    method: str = "cluster bootstrap, percentile"
    note: str | None = None
    distribution: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def n_dropped(self) -> int:
        """Resamples dropped because a denominator summed to 0 in them."""
        return 0 if self.n_valid == 0 else self.n_resamples - self.n_valid

    @property
    def interval(self) -> tuple[float, float]:
        return (self.low, self.high)

    def as_dict(self) -> dict[str, Any]:
        """Plain fields for tables and JSON (without the distribution)."""
        out = {
            k: getattr(self, k)
            for k in self.__dataclass_fields__
            if k not in ("distribution", "components")
        }
        out["n_dropped"] = self.n_dropped
        return out


@dataclass(frozen=True, kw_only=True)
class BalancedBootstrapResult(BootstrapResult):
    """Balanced mean of several ratios; ``components`` are the same resamples per ratio."""

    components: Mapping[str, BootstrapResult]


@dataclass(frozen=True, kw_only=True)
class PairedDifference(BootstrapResult):
    """Paired difference ``b − a`` in percentage points (``estimate_a/_b`` are fractions)."""

    estimate_a: float
    estimate_b: float
    unit: str = "percentage points"
    method: str = "paired cluster bootstrap, percentile"
    components: Mapping[str, PairedDifference] | None = None


@dataclass(frozen=True, kw_only=True)
class PermutationReference:
    """Observed vs permutation reference for complete sequences (docs/protocol.md, uncertainty: Complete T8-C).

    ``observed`` episodes have every step matched; ``expected = n · Π_k p_k`` with ``p_k`` the
    step-k success rate; ``[low, high]`` is the central ``confidence`` range of the complete
    count over ``n_permutations`` independent shuffles of every step column (integers: the
    inverted-CDF quantiles of the permutation distribution). ``p_at_most`` / ``p_at_least`` are
    the permutation frequencies of a count ``<=`` / ``>=`` the observed one.
    """

    observed: int
    expected: float
    low: float
    high: float
    n: int
    n_steps: int
    step_rates: tuple[float, ...]
    permutation_mean: float
    p_at_most: float
    p_at_least: float
    n_permutations: int
    confidence: float
    seed: int
    distribution: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def interval(self) -> tuple[float, float]:
        return (self.low, self.high)


# --------------------------------------------------------------------------------------------
# Engine
# --------------------------------------------------------------------------------------------


class _Design:
    """Per-cluster sums of several ratios over one shared cluster universe.

    Column ``2j`` of ``sums`` is ratio j's numerator sum per cluster, ``2j + 1`` its
    denominator sum; clusters absent from ratio j contribute 0 / 0.
    """

    def __init__(self, ratios: Sequence[Ratio]) -> None:
        groups = {_LABEL_GROUPS.get(r.clusters.dtype.kind, "other") for r in ratios}
        if len(groups) > 1:
            raise ValueError(
                "cluster labels must be all numbers or all strings across inputs, got "
                f"{sorted(r.clusters.dtype.str for r in ratios)}"
            )
        nonempty = [r.clusters for r in ratios if r.clusters.size]
        if not nonempty:
            raise ValueError("no clusters: cannot bootstrap an empty input")
        self.labels = np.unique(np.concatenate(nonempty))
        c = self.labels.size
        self.sums = np.zeros((c, 2 * len(ratios)), dtype=np.float64)
        self.present = np.zeros((c, len(ratios)), dtype=bool)
        self.ranges: list[tuple[float, float] | None] = []
        for j, r in enumerate(ratios):
            if r.clusters.size == 0:
                self.ranges.append(None)
                continue
            u, inv = np.unique(r.clusters, return_inverse=True)
            pos = np.searchsorted(self.labels, u)
            num_u = np.bincount(inv.ravel(), weights=r.numerators, minlength=u.size)
            den_u = np.bincount(inv.ravel(), weights=r.denominators, minlength=u.size)
            self.sums[pos, 2 * j] = num_u
            self.sums[pos, 2 * j + 1] = den_u
            self.present[pos, j] = True
            self.ranges.append(_ratio_range(num_u, den_u))

    @property
    def n_clusters(self) -> int:
        return int(self.labels.size)

    def observed(self) -> np.ndarray:
        """Σ over clusters, shaped (1, columns), to go through the resample arithmetic."""
        return self.sums.sum(axis=0, keepdims=True)

    def resample(self, n_resamples: int, seed: int) -> np.ndarray:
        """(n_resamples, columns) summed sums of resampled clusters; blocks, no per-row loop."""
        rng = np.random.default_rng(seed)
        c = self.n_clusters
        out = np.empty((n_resamples, self.sums.shape[1]), dtype=np.float64)
        rows = max(1, _BLOCK_CELLS // c)
        for start in range(0, n_resamples, rows):
            n = min(rows, n_resamples - start)
            idx = rng.integers(0, c, size=(n, c))
            idx += np.arange(n)[:, None] * c
            counts = np.bincount(idx.ravel(), minlength=n * c).reshape(n, c)
            out[start : start + n] = counts.astype(np.float64) @ self.sums
        return out


def _ratio_range(num_c: np.ndarray, den_c: np.ndarray) -> tuple[float, float] | None:
    """[min, max] of per-cluster ratios, or None when no weighted-mean bound holds."""
    pos = den_c > 0
    if np.any(~pos & (num_c != 0)) or not np.any(pos):
        return None
    r = num_c[pos] / den_c[pos]
    return float(r.min()), float(r.max())


def _ratio_values(
    sums: np.ndarray, j: int, rng_: tuple[float, float] | None
) -> tuple[np.ndarray, np.ndarray]:
    num = sums[:, 2 * j]
    den = sums[:, 2 * j + 1]
    valid = den > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(valid, num / np.where(valid, den, 1.0), np.nan)
    if rng_ is not None:
        values = np.clip(values, rng_[0], rng_[1])
    return values, valid


def _balanced_values(
    sums: np.ndarray, cols: Sequence[int], ranges: Sequence[tuple[float, float] | None]
) -> tuple[np.ndarray, np.ndarray]:
    parts = [_ratio_values(sums, j, ranges[j]) for j in cols]
    values = np.stack([p[0] for p in parts], axis=1)
    valid = np.logical_and.reduce([p[1] for p in parts])
    mean = values.mean(axis=1)
    lows = [ranges[j][0] for j in cols if ranges[j] is not None]
    highs = [ranges[j][1] for j in cols if ranges[j] is not None]
    if len(lows) == len(cols):
        mean = np.clip(mean, min(lows), max(highs))
    return mean, valid


def _summarise(
    observed: float,
    values: np.ndarray,
    valid: np.ndarray,
    *,
    label: str,
    n_clusters: int,
    opts: dict[str, Any],
    warn: bool = True,
) -> dict[str, Any]:
    """Estimate, interval and note of a result (``n_clusters``: the clusters resampled, below 2
    none); raises/warns on the degenerate cases (module docstring)."""
    n_resamples, confidence = opts["n_resamples"], opts["confidence"]
    if not np.isfinite(observed):
        raise UndefinedRatioError(f"{label}: denominators sum to 0, the ratio is undefined")
    if n_clusters < 2:
        msg = (
            f"{label}: {FEWER_THAN_2} ({n_clusters}); reporting the point estimate as a "
            "zero-width interval"
        )
        if warn:
            warnings.warn(msg, StatsWarning, stacklevel=3)
        return dict(
            estimate=observed,
            low=observed,
            high=observed,
            boot_mean=observed,
            boot_se=0.0,
            n_valid=0,
            note=msg,
            distribution=None,
        )
    kept = values[valid]
    n_dropped = n_resamples - kept.size
    if kept.size == 0:
        raise UndefinedRatioError(
            f"{label}: every one of {n_resamples} resamples has a zero denominator"
        )
    note = None
    if n_dropped:
        note = (
            f"{label}: dropped {n_dropped} of {n_resamples} resamples whose denominators sum to 0"
        )
        if warn:
            warnings.warn(note, StatsWarning, stacklevel=3)
    alpha = 1.0 - confidence
    low, high = np.quantile(kept, [alpha / 2.0, 1.0 - alpha / 2.0])
    return dict(
        estimate=observed,
        low=float(low),
        high=float(high),
        boot_mean=float(kept.mean()),
        boot_se=float(kept.std(ddof=1)) if kept.size > 1 else 0.0,
        n_valid=int(kept.size),
        note=note,
        distribution=kept.copy() if opts["keep_distribution"] else None,
    )


def _recorded(n_clusters: int, opts: dict[str, Any]) -> dict[str, Any]:
    """What every result records of its design and options."""
    return dict(
        n_clusters=n_clusters,
        n_resamples=opts["n_resamples"],
        confidence=opts["confidence"],
        seed=opts["seed"],
    )


def _resampled(plan: _Plan, opts: dict[str, Any]) -> tuple[_Design, np.ndarray, np.ndarray | None]:
    """The design of ``plan``'s ratios, its observed sums and its resampled sums (``None``
    with fewer than 2 clusters: nothing to resample)."""
    design = _Design(plan.ratios)
    boot = design.resample(opts["n_resamples"], opts["seed"]) if design.n_clusters >= 2 else None
    return design, design.observed(), boot


# --------------------------------------------------------------------------------------------
# Metric plans: which columns a metric uses, evaluated on observed and resampled sums
# --------------------------------------------------------------------------------------------


class _Plan:
    """Collect the ratios of many metrics (single or balanced) into one design."""

    def __init__(self) -> None:
        self.ratios: list[Ratio] = []

    def add(self, metric: MetricLike) -> tuple[str, Any]:
        if _is_balanced(metric):
            if not metric:
                raise ValueError("a balanced mean needs at least one component")
            cols = {}
            for name, r in metric.items():
                cols[str(name)] = len(self.ratios)
                self.ratios.append(_as_ratio(r))
            return ("balanced", cols)
        self.ratios.append(_as_ratio(metric))
        return ("ratio", len(self.ratios) - 1)


def _values(design: _Design, sums: np.ndarray, spec: tuple[str, Any]):
    kind, cols = spec
    if kind == "ratio":
        return _ratio_values(sums, cols, design.ranges[cols])
    return _balanced_values(sums, list(cols.values()), design.ranges)


def _own_clusters(design: _Design, spec: tuple[str, Any]) -> int:
    """Distinct cluster labels in the metric's own rows (union over its components)."""
    return int(design.present[:, _cols(spec)].any(axis=1).sum())


def _single_result(
    design: _Design,
    obs: np.ndarray,
    boot: np.ndarray | None,
    spec: tuple[str, Any],
    *,
    label: str,
    opts: dict[str, Any],
    warn: bool = True,
) -> BootstrapResult:
    ov, _ = _values(design, obs, spec)
    n_cl = _own_clusters(design, spec)
    if boot is None:
        values, valid = np.empty(0), np.empty(0, dtype=bool)
    else:
        values, valid = _values(design, boot, spec)
    fields = _summarise(
        float(ov[0]),
        values,
        valid,
        label=label,
        n_clusters=n_cl if boot is not None else min(n_cl, 1),
        opts=opts,
        warn=warn,
    )
    common = _recorded(n_cl, opts)
    if spec[0] == "ratio":
        return BootstrapResult(**fields, **common)
    comps = {
        name: _single_result(
            design, obs, boot, ("ratio", j), label=f"{label}[{name}]", opts=opts, warn=False
        )
        for name, j in spec[1].items()
    }
    return BalancedBootstrapResult(
        **fields, **common, method="cluster bootstrap, percentile; balanced mean", components=comps
    )


def _run(
    metrics: Mapping[str, MetricLike], opts: dict[str, Any], undefined: str = "raise"
) -> dict[str, BootstrapResult]:
    _check_undefined(undefined)
    plan = _Plan()
    specs = {name: plan.add(m) for name, m in metrics.items()}
    design, obs, boot = _resampled(plan, opts)
    out: dict[str, BootstrapResult] = {}
    for name, spec in specs.items():
        try:
            out[name] = _single_result(design, obs, boot, spec, label=name, opts=opts)
        except UndefinedRatioError as exc:
            if undefined == "raise":
                raise
            out[name] = _undefined_result(BootstrapResult, exc, _own_clusters(design, spec), opts)
    return out


def _check_undefined(undefined: str) -> None:
    if undefined not in ("raise", "nan"):
        raise ValueError('undefined must be "raise" or "nan"')


def _undefined_result(cls, exc: Exception, n_clusters: int, opts: dict[str, Any], **extra):
    """NaN result for an undefined metric (``undefined="nan"``), with a warning."""
    msg = f"undefined: {exc}"
    warnings.warn(msg, StatsWarning, stacklevel=4)
    nan = float("nan")
    return cls(
        estimate=nan,
        low=nan,
        high=nan,
        boot_mean=nan,
        boot_se=nan,
        n_valid=0,
        note=msg,
        **_recorded(n_clusters, opts),
        **extra,
    )


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def cluster_bootstrap(
    numerators: Any,
    denominators: Any,
    clusters: Any,
    *,
    n_resamples: int = B_DEFAULT,
    confidence: float = CONFIDENCE_DEFAULT,
    seed: int = SEED_DEFAULT,
    keep_distribution: bool = False,
) -> BootstrapResult:
    """Cluster-bootstrap percentile interval of Σ numerators / Σ denominators (docs/protocol.md, uncertainty and controls).

    Args:
        numerators: 1-D, length n, finite (e.g. hits per target row or per cluster).
        denominators: 1-D, length n, finite, ``>= 0`` (e.g. 1 per target, ``K_i`` per
            interaction); ``None`` → 1 per row.
        clusters: 1-D, length n, cluster label per row (video record id); rows sharing a
            label are summed.
        n_resamples: B, resamples of clusters with replacement (paper: 10,000).
        confidence: central coverage of the percentile interval (0.95 → 2.5 / 97.5 %).
        seed: seed of ``numpy.random.default_rng``; recorded in the result.
        keep_distribution: keep the valid resampled ratios in ``result.distribution``.

    Returns:
        :class:`BootstrapResult` in fractions (0–1).

    Raises:
        ValueError: empty input (no clusters), bad shapes, NaN, negative denominators.
        UndefinedRatioError: Σ denominators = 0, or no resample with a positive one.

    Warns:
        StatsWarning: fewer than 2 clusters (zero-width interval at the point estimate), or
        resamples dropped for a zero denominator.
    """
    opts = _options(n_resamples, confidence, seed, keep_distribution)
    ratio = Ratio(numerators, denominators, clusters)
    return _run({"ratio": ratio}, opts)["ratio"]


def balanced_mean_bootstrap(
    components: Mapping[str, RatioLike],
    *,
    n_resamples: int = B_DEFAULT,
    confidence: float = CONFIDENCE_DEFAULT,
    seed: int = SEED_DEFAULT,
    keep_distribution: bool = False,
) -> BalancedBootstrapResult:
    """Unweighted mean of several clustered ratios (the six-task mean, docs/protocol.md, metrics) with its
    cluster-bootstrap interval.

    ``components`` maps a name (e.g. "T1") to a :class:`Ratio` or a ``(numerators,
    denominators, clusters)`` tuple. All components are resampled together over the union of
    their cluster labels (a video record carrying several tasks moves as one unit); a cluster
    lacking a task contributes 0 / 0 to that task. A resample in which any component's
    denominator sums to 0 is dropped (counted in ``n_dropped``). ``result.components`` gives
    each task's interval from the same resamples (these can differ slightly from a standalone
    :func:`cluster_bootstrap` of the task, which resamples only the task's own clusters).
    ``n_clusters`` counts the clusters that carry data for at least one component.

    Raises/Warns: as :func:`cluster_bootstrap`.
    """
    opts = _options(n_resamples, confidence, seed, keep_distribution)
    if not _is_balanced(components):
        raise TypeError("components must be a mapping name -> ratio")
    return _run({"balanced mean": components}, opts)["balanced mean"]


def bootstrap_metrics(
    metrics: Mapping[str, MetricLike],
    *,
    n_resamples: int = B_DEFAULT,
    confidence: float = CONFIDENCE_DEFAULT,
    seed: int = SEED_DEFAULT,
    keep_distribution: bool = False,
    undefined: str = "raise",
) -> dict[str, BootstrapResult]:
    """Bootstrap many metrics of one run with one shared set of resampled clusters.

    ``metrics`` maps a metric name to a ratio (``Ratio`` / 3-tuple) or to a mapping of
    component ratios (a balanced mean). Clusters are the union of all labels, so correlated
    metrics (T1 on-time and joint, per-task scores and their mean) are resampled jointly and
    the random matrix is drawn once. Raises/warns as :func:`cluster_bootstrap`, except that
    with ``undefined="nan"`` a metric whose denominators sum to 0 (e.g. T1 conditional
    accuracy of a model with no on-time response) gets a NaN result with a note and a
    :class:`StatsWarning` instead of raising :class:`UndefinedRatioError`.
    """
    opts = _options(n_resamples, confidence, seed, keep_distribution)
    return _run(dict(metrics), opts, undefined)


def _paired_run(
    pairs: Mapping[str, tuple[MetricLike, MetricLike]],
    opts: dict[str, Any],
    scale: float,
    strict: bool,
    undefined: str = "raise",
) -> dict[str, PairedDifference]:
    _check_undefined(undefined)
    plan = _Plan()
    specs: dict[str, tuple[Any, Any]] = {}
    for name, (a, b) in pairs.items():
        if _is_balanced(a) != _is_balanced(b):
            raise TypeError(f"{name}: a and b must both be ratios or both balanced means")
        if _is_balanced(a) and set(map(str, a)) != set(map(str, b)):
            raise ValueError(f"{name}: a and b have different components")
        sa, sb = plan.add(a), plan.add(b)
        if strict:
            ra = [plan.ratios[j] for j in _cols(sa)]
            rb = [plan.ratios[j] for j in _cols(sb)]
            _check_same_clusters(name, ra, rb)
        specs[name] = (sa, sb)
    design, obs, boot = _resampled(plan, opts)
    out: dict[str, PairedDifference] = {}
    for name, (sa, sb) in specs.items():
        try:
            out[name] = _paired_result(design, obs, boot, sa, sb, name, opts, scale)
        except UndefinedRatioError as exc:
            if undefined == "raise":
                raise
            n_cl = max(_own_clusters(design, sa), _own_clusters(design, sb))
            ea, eb = _values(design, obs, sa)[0][0], _values(design, obs, sb)[0][0]
            out[name] = _undefined_result(
                PairedDifference, exc, n_cl, opts, estimate_a=float(ea), estimate_b=float(eb)
            )
    return out


def _cols(spec: tuple[str, Any]) -> list[int]:
    return [spec[1]] if spec[0] == "ratio" else list(spec[1].values())


def _check_same_clusters(name: str, ra: Sequence[Ratio], rb: Sequence[Ratio]) -> None:
    for x, y in zip(ra, rb, strict=True):
        ux, uy = np.unique(x.clusters), np.unique(y.clusters)
        if ux.shape != uy.shape or not np.array_equal(ux, uy):
            raise ValueError(
                f"{name}: the two runs cover different clusters ({ux.size} vs {uy.size} "
                "labels); paired differences need matched clusters (strict=False to use "
                "their union)"
            )


def _paired_result(
    design: _Design,
    obs: np.ndarray,
    boot: np.ndarray | None,
    sa: tuple[str, Any],
    sb: tuple[str, Any],
    label: str,
    opts: dict[str, Any],
    scale: float,
    warn: bool = True,
) -> PairedDifference:
    oa, _ = _values(design, obs, sa)
    ob, _ = _values(design, obs, sb)
    n_cl = max(_own_clusters(design, sa), _own_clusters(design, sb))
    if boot is None:
        values, valid = np.empty(0), np.empty(0, dtype=bool)
    else:
        va, ka = _values(design, boot, sa)
        vb, kb = _values(design, boot, sb)
        valid = ka & kb
        with np.errstate(invalid="ignore"):
            values = scale * (vb - va)
    est_a, est_b = float(oa[0]), float(ob[0])
    if not (np.isfinite(est_a) and np.isfinite(est_b)):
        raise UndefinedRatioError(f"{label}: a denominator sums to 0 in one of the runs")
    fields = _summarise(
        scale * (est_b - est_a),
        values,
        valid,
        label=label,
        n_clusters=n_cl if boot is not None else min(n_cl, 1),
        opts=opts,
        warn=warn,
    )
    comps = None
    if sa[0] == "balanced":
        comps = {
            name: _paired_result(
                design,
                obs,
                boot,
                ("ratio", sa[1][name]),
                ("ratio", sb[1][name]),
                f"{label}[{name}]",
                opts,
                scale,
                warn=False,
            )
            for name in sa[1]
        }
    return PairedDifference(
        **fields,
        **_recorded(n_cl, opts),
        estimate_a=est_a,
        estimate_b=est_b,
        components=comps,
    )


def paired_difference(
    a: MetricLike,
    b: MetricLike,
    *,
    n_resamples: int = B_DEFAULT,
    confidence: float = CONFIDENCE_DEFAULT,
    seed: int = SEED_DEFAULT,
    strict: bool = True,
    keep_distribution: bool = False,
) -> PairedDifference:
    """Paired difference ``b − a`` of one metric in two runs, in percentage points (docs/protocol.md, uncertainty and controls).

    ``a`` and ``b`` are both ratios (:class:`Ratio` or 3-tuples) or both balanced means
    (mappings with the same component names). Each resample draws clusters once and applies
    the same cluster counts to both runs, so cluster-level correlation cancels; identical runs
    give exactly ``[0, 0]``. Convention: ``a`` is the reference run, ``b`` the treatment
    (plain → cooldown: 22/122 → 10/122 gives −9.84 points).

    Args:
        strict: require each ratio to cover the same cluster labels in both runs
            (``ValueError`` otherwise); with ``strict=False`` the union is resampled and a
            cluster missing from a run contributes 0 / 0 there.

    Returns:
        :class:`PairedDifference`: ``estimate``/``low``/``high`` in percentage points,
        ``estimate_a``/``estimate_b`` in fractions. A resample in which either run's
        denominator sums to 0 is dropped and counted.

    Raises/Warns: as :func:`cluster_bootstrap`.
    """
    opts = _options(n_resamples, confidence, seed, keep_distribution)
    return _paired_run({"difference": (a, b)}, opts, 100.0, strict)["difference"]


def paired_metrics(
    a: Mapping[str, MetricLike],
    b: Mapping[str, MetricLike],
    *,
    n_resamples: int = B_DEFAULT,
    confidence: float = CONFIDENCE_DEFAULT,
    seed: int = SEED_DEFAULT,
    strict: bool = True,
    keep_distribution: bool = False,
    undefined: str = "raise",
) -> dict[str, PairedDifference]:
    """Paired differences ``b − a`` of every metric two runs share, with one shared set of
    resampled clusters (for ``interactscope compare``). Metrics present in only one run raise
    ``ValueError``. ``undefined="nan"``: a metric undefined in either run gets a NaN result
    (see :func:`bootstrap_metrics`). Otherwise as :func:`paired_difference`.
    """
    opts = _options(n_resamples, confidence, seed, keep_distribution)
    if set(a) != set(b):
        raise ValueError(f"the runs report different metrics: {sorted(set(a) ^ set(b))}")
    return _paired_run({k: (a[k], b[k]) for k in a}, opts, 100.0, strict, undefined)


def permutation_reference(
    outcomes: Any,
    *,
    n_permutations: int = B_DEFAULT,
    confidence: float = CONFIDENCE_DEFAULT,
    seed: int = SEED_DEFAULT,
    keep_distribution: bool = False,
) -> PermutationReference:
    """Permutation reference for complete sequences (docs/protocol.md, uncertainty: Complete T8-C).

    Args:
        outcomes: (n episodes × K steps) array of 0/1 (or bool): step k of episode i matched.
            All episodes must have the same K (group sequences by length first, as the paper
            does for its 20 three-step sequences).
        n_permutations: shuffles; each shuffles every step column independently across
            episodes (``rng.permuted`` on a (n_permutations × n) block per step — a loop over
            the K steps and over memory blocks, none over permutations).
        confidence: central coverage of the reference interval.
        seed: seed of ``numpy.random.default_rng``.

    Returns:
        :class:`PermutationReference`: observed complete count, the expected count
        ``n · Π_k p_k`` (exact, not the Monte-Carlo mean — they agree in expectation), and the
        reference interval. Paper, 20 three-step sequences with step coverage 8, 10, 12 of
        20: expected 2.40, interval [0, 5].

    Raises:
        ValueError: not 2-D, no episodes or no steps, values other than 0/1.
    """
    _check_options(n_permutations, confidence, seed)
    x = np.asarray(outcomes)
    if x.ndim != 2:
        raise ValueError(f"outcomes must be 2-D (episodes × steps), got shape {x.shape}")
    n, k = x.shape
    if n == 0 or k == 0:
        raise ValueError("outcomes must have at least one episode and one step")
    if x.dtype != bool:
        if not np.all(np.isin(x, (0, 1))):
            raise ValueError("outcomes must be 0/1 (or bool)")
        x = x.astype(bool)
    observed = int(np.all(x, axis=1).sum())
    successes = [int(v) for v in x.sum(axis=0)]
    rates = [s / n for s in successes]
    # n · Π_k (s_k / n) as one exact rational, rounded once (20·0.4·0.5·0.6 → 2.4 exactly).
    expected = float(Fraction(math.prod(successes), n ** (k - 1)))

    rng = np.random.default_rng(seed)
    counts = np.empty(n_permutations, dtype=np.int64)
    rows = max(1, _BLOCK_CELLS // n)
    for start in range(0, n_permutations, rows):
        m = min(rows, n_permutations - start)
        complete = np.ones((m, n), dtype=bool)
        for j in range(k):
            complete &= rng.permuted(np.broadcast_to(x[:, j], (m, n)), axis=1)
        counts[start : start + m] = complete.sum(axis=1)

    alpha = 1.0 - confidence
    low, high = np.quantile(counts, [alpha / 2.0, 1.0 - alpha / 2.0], method="inverted_cdf")
    return PermutationReference(
        observed=observed,
        expected=expected,
        low=float(low),
        high=float(high),
        n=int(n),
        n_steps=int(k),
        step_rates=tuple(float(r) for r in rates),
        permutation_mean=float(counts.mean()),
        p_at_most=float(np.mean(counts <= observed)),
        p_at_least=float(np.mean(counts >= observed)),
        n_permutations=int(n_permutations),
        confidence=float(confidence),
        seed=int(seed),
        distribution=counts if keep_distribution else None,
    )
