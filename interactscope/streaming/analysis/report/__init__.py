"""The paper's tables and figures from scored runs (``interactscope report``): roles and
pairings (:mod:`.roles`), one function per table (:mod:`.tables`), the build (:mod:`.build`)."""

from interactscope.streaming.analysis.report.build import Report, build_report
from interactscope.streaming.analysis.report.roles import CONTROL_KEYS, classify, pair_runs
from interactscope.streaming.analysis.report.tables import (
    assistance_table,
    explicit_table,
    failure_table,
    sequence_outcomes,
    volume_table,
)

__all__ = [
    "CONTROL_KEYS",
    "Report",
    "assistance_table",
    "build_report",
    "classify",
    "explicit_table",
    "failure_table",
    "pair_runs",
    "sequence_outcomes",
    "volume_table",
]
