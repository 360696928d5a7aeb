"""Old import path of the comparison API; the code lives in :mod:`interactscope.analysis`
(:mod:`~interactscope.analysis.runs`, :mod:`~interactscope.analysis.compare`,
:mod:`~interactscope.analysis.output`)."""

from interactscope.analysis.compare import (
    Comparison,
    compare_runs,
    metric_ratios,
    paired_table,
    run_table,
)
from interactscope.analysis.errors import AnalysisError, CompareError
from interactscope.analysis.output import write_table
from interactscope.analysis.runs import (
    ScoredRun,
    check_comparable,
    load_scored,
    non_default_settings,
    rescore,
    run_label,
)
from interactscope.analysis.stats import B_DEFAULT
from interactscope.scoring.results import format_interval

__all__ = [
    "B_DEFAULT",
    "AnalysisError",
    "CompareError",
    "Comparison",
    "ScoredRun",
    "check_comparable",
    "compare_runs",
    "format_interval",
    "load_scored",
    "metric_ratios",
    "non_default_settings",
    "paired_table",
    "rescore",
    "run_label",
    "run_table",
    "write_table",
]
