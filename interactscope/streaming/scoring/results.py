"""Typed results of scoring: the options, ``summary.json`` and the interval value.

``summary.json`` keeps the keys it always had, so run folders scored by older versions load with
:meth:`ScoreSummary.read`; unknown keys are kept (``extra="allow"``) and written back unchanged.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from interactscope.core.errors import InteractScopeError
from interactscope.core.files import FileReadError, read_data
from interactscope.streaming.settings import options_with

__all__ = [
    "DEFAULT_MERGE_S",
    "DEFAULT_TOLERANCE_S",
    "Interval",
    "JudgeHealth",
    "RunInfo",
    "ScoreHealth",
    "ScoreSummary",
    "SummaryMetrics",
    "ScoringOptions",
    "ScoringSettings",
    "SummaryError",
]

DEFAULT_TOLERANCE_S = 2.0
"""Window half-width δ (s) of the paper."""
DEFAULT_MERGE_S = 2.0
"""Response grouping span (s) of the paper."""


class SummaryError(InteractScopeError, ValueError):
    """``summary.json`` cannot be read; the message names the file and the field."""


class ScoringOptions(BaseModel):
    """How targets are scored: ``tolerance_s`` δ (window τ ± δ, seconds) and ``merge_s`` (the
    grouping span of first-response allocation, seconds), both ``>= 0``; ``infra_error_rule``
    (``window``, default, or ``region``, the rule before): which targets that infrastructure
    errors kept from being answered leave the score
    (:func:`interactscope.streaming.scoring.core.infra_outcome`; docs/protocol.md, where the
    paper is silent)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tolerance_s: float = Field(DEFAULT_TOLERANCE_S, ge=0)
    merge_s: float = Field(DEFAULT_MERGE_S, ge=0)
    infra_error_rule: Literal["window", "region"] = "window"

    @classmethod
    def of(cls, options: ScoringOptions | None = None, **overrides: Any) -> ScoringOptions:
        """``options`` (default: the paper's) with ``overrides`` (``None`` values ignored).

        Raises:
            ValueError: an unknown option or a negative span (one line naming it).
        """
        return options_with(
            cls,
            options,
            overrides,
            "scoring",
            "tolerance_s, merge_s, seconds >= 0; infra_error_rule: window or region",
        )


class Interval(BaseModel):
    """An estimate with its interval, in display units (% or responses/min); NaN/None = none."""

    model_config = ConfigDict(frozen=True)

    estimate: float | None
    low: float | None = None
    high: float | None = None

    def format(self, *, signed: bool = False) -> str:
        """``"12.50 [3.00, 20.00]"``; ``"—"`` when the estimate is missing. Two decimals."""
        return format_interval(self.estimate, self.low, self.high, signed=signed)


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def format_interval(est: Any, low: Any = None, high: Any = None, *, signed: bool = False) -> str:
    """``"12.50 [3.00, 20.00]"``; ``"—"`` for a missing/NaN estimate; the bare estimate when the
    interval is missing. Two decimals, like the paper; ``signed`` adds ``+`` (differences)."""
    if not _finite(est):
        return "—"
    f = "{:+.2f}" if signed else "{:.2f}"
    if not _finite(low):
        return f.format(est)
    return f"{f.format(est)} [{f.format(low)}, {f.format(high)}]"


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class BenchmarkRef(_Open):
    name: str | None = None
    version: str | None = None
    fingerprint: str | None = None


class RunInfo(_Open):
    """What ``summary.json`` records about the scored run."""

    model: str | None = None
    backend: str | None = None
    protocol: str | None = None
    shard: str | None = None
    benchmark: BenchmarkRef | None = None
    interactions: int | None = None


class ScoringSettings(_Open):
    """The scoring settings recorded in ``summary.json`` (``judge``: the judge's description)."""

    tolerance_s: float | None = None
    merge_s: float | None = None
    judge: dict[str, Any] | None = None

    @property
    def judge_name(self) -> str | None:
        return (self.judge or {}).get("name")


class JudgeHealth(_Open):
    pairs_judged: int = 0
    unique_triples: int = 0
    unparseable_pairs: int = 0
    unjudged_targets: int = 0


class ScoreHealth(_Open):
    """Record and judge health counts of a scored run.

    Attributes:
        infrastructure_errors: records with ``error`` set (never silence, never responses).
        infra_error_interactions: interactions with at least one such record.
        infra_error_targets: targets with the outcome ``infra_error`` (every decision point
            that could have served them failed); left out of every score.
        partial_interactions: interactions with some but not all decision points recorded.
        run_finished: ``False`` when the run's last ``collect`` never ended.
        interactions_without_records, suppressed_records, parse_errors, unknown_records: counts.

    The ``infra_error_*``, ``partial_interactions`` and ``run_finished`` keys are written only
    when they report a problem, so a clean run's ``summary.json`` keeps the bytes it always had.
    """

    judge: JudgeHealth = Field(default_factory=JudgeHealth)
    infrastructure_errors: int = 0
    infra_error_interactions: int = 0
    infra_error_targets: int = 0
    suppressed_records: int = 0
    parse_errors: int = 0
    interactions_without_records: int = 0
    partial_interactions: int = 0
    run_finished: bool = True
    unknown_records: int = 0


Ratio = float | None
"""A metric value: Σ numerator / Σ denominator, ``None`` (``null``) for a zero denominator."""
Count = int | None


class Failures(_Open):
    """Outcomes of one task's targets (``infra_error`` written only when there is one)."""

    hit: Count = None
    wrong: Count = None
    late: Count = None
    premature: Count = None
    missed: Count = None
    unjudged: Count = None
    infra_error: Count = None


class TaskMetrics(_Open):
    """``metrics.tasks.<task>``: counts, ``score`` = hits / scored, the failure breakdown and
    the output volume (``responses_per_min`` = responses / probed_min)."""

    targets: Count = None
    interactions: Count = None
    hits: Count = None
    scored: Count = None
    score: Ratio = None
    failures: Failures | None = None
    responses: Count = None
    probed_min: float | None = None
    responses_per_min: Ratio = None


class T1Metrics(_Open):
    """``metrics.T1``: on-time = on_time_count / targets, joint = joint_count / targets,
    conditional = joint_count / on_time_count."""

    on_time: Ratio = None
    joint: Ratio = None
    conditional: Ratio = None
    on_time_count: Count = None
    joint_count: Count = None
    targets: Count = None


class RecallMetrics(_Open):
    """``metrics.T8.<task>``: timely recall = hits / scored."""

    recall: Ratio = None
    hits: Count = None
    scored: Count = None


class CompleteMetrics(_Open):
    """``metrics.T8.complete_T8C``: rate = count / n (episodes with every step hit)."""

    rate: Ratio = None
    count: Count = None
    n: Count = None


class T8Metrics(_Open):
    """``metrics.T8``: one :class:`RecallMetrics` per assistance task (``T8-A``, ...) and
    ``complete_T8C``."""

    __pydantic_extra__: dict[str, RecallMetrics]
    complete_T8C: CompleteMetrics | None = None


class VolumeMetrics(_Open):
    """``metrics.output_volume`` (and its ``explicit`` / ``assistance`` panels): per_min =
    responses / probed_min."""

    per_min: Ratio = None
    responses: Count = None
    probed_min: float | None = None
    explicit: VolumeMetrics | None = None
    assistance: VolumeMetrics | None = None


class OverallMetrics(_Open):
    """``metrics.overall``: score = hits / scored over every task."""

    score: Ratio = None
    hits: Count = None
    scored: Count = None
    targets: Count = None
    unjudged: Count = None
    infra_error: Count = None


class PluginMetricValue(_Open):
    """``metrics.plugins.<name>``: a plug-in metric (registry kind ``metrics``): value =
    numerator / denominator."""

    value: Ratio = None
    numerator: int | float | None = None  # a count (int) or seconds / minutes (float)
    denominator: int | float | None = None


class SummaryMetrics(_Open):
    """``summary.json``'s ``metrics`` block, the output of
    :func:`interactscope.streaming.scoring.metrics.compute_metrics` (docs/protocol.md, metrics).
    Every key is optional: a key is written only when its tasks were scored, and a file keeps
    exactly the keys it was read with (older files included)."""

    tasks: dict[str, TaskMetrics] = Field(default_factory=dict)
    T1: T1Metrics | None = None
    six_task_mean: Ratio = None
    six_task_mean_tasks: list[str] | None = None
    T8: T8Metrics | None = None
    overall: OverallMetrics | None = None
    output_volume: VolumeMetrics | None = None
    infrastructure_errors: Count = None
    plugins: dict[str, PluginMetricValue] | None = None


class ScoreSummary(_Open):
    """``RUN/scores/summary.json``.

    Attributes:
        scoring_version: version of the scoring rules.
        run: the run scored (model, backend, protocol, shard, benchmark, interactions).
        settings: tolerance, merge span, allocation/matching rules, record policy, judge.
        approximation: the judge's approximation label (``None`` for an exact judge).
        metrics: the metric block (:class:`SummaryMetrics`, from
            :func:`interactscope.streaming.scoring.metrics.compute_metrics`).
        health: record and judge health.
        intervals: optional metric name → :class:`Interval` (cluster bootstrap), when computed.
    """

    scoring_version: int = 1
    run: RunInfo = Field(default_factory=RunInfo)
    settings: ScoringSettings = Field(default_factory=ScoringSettings)
    approximation: str | None = None
    metrics: SummaryMetrics = Field(default_factory=SummaryMetrics)
    health: ScoreHealth = Field(default_factory=ScoreHealth)
    intervals: dict[str, Interval] | None = None

    def to_json(self) -> str:
        """The file's text: sorted keys, floats rounded to 6 decimals, NaN/inf → null; keys that
        were never set are left out (so re-scoring an old run writes the same bytes)."""
        data = _clean(self.model_dump(mode="python", exclude_unset=True))
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def read(cls, path: str | Path) -> ScoreSummary:
        """Load ``summary.json`` (any scoring version so far).

        Raises:
            SummaryError: unreadable JSON or a field of the wrong type (names file and field).
        """
        p = Path(path)
        try:
            return cls.model_validate(read_data(p, "json"))
        except FileReadError as exc:
            at = f":{exc.line}" if exc.line else ""
            raise SummaryError(f"{p}{at}: {exc.what}; re-score the run") from None
        except ValidationError as exc:
            e = exc.errors()[0]
            loc = ".".join(map(str, e["loc"]))
            raise SummaryError(f"{p}: field {loc}: {e['msg']}; re-score the run") from None


def _clean(obj: Any) -> Any:
    """JSON-ready copy: floats rounded to 6 decimals, NaN/inf -> null, tuples -> lists."""
    if isinstance(obj, float):
        return None if not math.isfinite(obj) else round(obj, 6)
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return _clean(obj.item())
    return obj
