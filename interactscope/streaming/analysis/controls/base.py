"""What every evidence control shares: its result, what a report section gets and gives, and
helpers on run settings. The registry of controls is :mod:`.registry`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from interactscope.stats import BootstrapOptions
from interactscope.streaming.analysis.output import Report, write_table
from interactscope.streaming.analysis.runs import ScoredRun, non_default_settings

__all__ = [
    "ControlResult",
    "ReportInputs",
    "ReportSink",
    "other_differences",
    "setting",
]


@dataclass
class ControlResult:
    """A control's output: ``table`` (raw numbers), ``markdown``, ``meta`` (runs, options; the
    JSON written beside the table), ``extra`` (in-memory frames for callers)."""

    name: str
    table: pd.DataFrame
    markdown: str
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def write(self, out_dir: str | Path, *, latex: str | None = None) -> dict[str, Path]:
        """Write ``NAME.csv``, ``NAME.md``, ``NAME.json`` (and ``NAME.tex``) into ``out_dir``."""
        return write_table(
            self.table,
            out_dir,
            self.name,
            markdown=self.markdown,
            latex=latex,
            meta={"control": self.name, **self.meta},
        )


@dataclass
class ReportInputs:
    """What a control's report section gets: the scored runs (main runs first), their roles,
    the (role, main, control) pairs, bootstrap options and the report's sweep settings."""

    runs: list[ScoredRun]
    roles: dict[str, str]
    pairs: list[tuple[str, ScoredRun, ScoredRun]]
    options: BootstrapOptions
    tolerances: tuple[float, ...]
    delays: tuple[float, ...]
    judge: str | None
    out: Path

    def with_role(self, *roles: str) -> list[ScoredRun]:
        return [r for r in self.runs if self.roles[r.label] in roles]

    def pairs_of(self, *roles: str) -> list[tuple[str, ScoredRun, ScoredRun]]:
        return [p for p in self.pairs if p[0] in roles]


ReportSink = Report
"""Where a report section puts what it made (``add_table``, ``add_files``, ``skip``): the
report's :class:`~interactscope.streaming.analysis.output.Report`."""


def setting(run: ScoredRun, dotted: str, default: Any) -> Any:
    """A run's setting by dotted key (``grid.step_s``), ``default`` when absent."""
    cur: Any = run.settings
    for part in dotted.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return default
        cur = cur[part]
    return cur


def other_differences(a: ScoredRun, b: ScoredRun, allowed: Sequence[str]) -> list[str]:
    """Non-default settings that differ between the runs, besides the ``allowed`` keys."""
    na, nb = non_default_settings(a.settings), non_default_settings(b.settings)
    keys = sorted((set(na) | set(nb)) - set(allowed))
    out = [
        f"{k}: {na.get(k, '<default>')!r} vs {nb.get(k, '<default>')!r}"
        for k in keys
        if na.get(k) != nb.get(k)
    ]
    if a.model != b.model:
        out.insert(0, f"model: {a.model!r} vs {b.model!r}")
    return out
