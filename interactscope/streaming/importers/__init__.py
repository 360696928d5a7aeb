"""Importers for other streaming benchmarks' annotations, and a causal-exposure audit of their
own input pipelines (docs/importers.md).

``import_benchmark(FORMAT, SRC, OUT, videos=DIR)`` converts a peer annotation file into a
benchmark folder and writes ``import-report.json``; ``audit_exposure(FORMAT, SRC)`` measures how
many seconds of media after the query time the peer's own pipeline shows the model.
``FORMATS`` lists the format names.
"""

from __future__ import annotations

from interactscope.streaming.importers.common import Conversion, ImporterError, ImportReport
from interactscope.streaming.importers.exposure import ExposureRow, ExposureSummary, audit_exposure
from interactscope.streaming.importers.registry import FORMATS, get_format
from interactscope.streaming.importers.write import import_benchmark

__all__ = [
    "FORMATS",
    "Conversion",
    "ExposureRow",
    "ExposureSummary",
    "ImportReport",
    "ImporterError",
    "audit_exposure",
    "get_format",
    "import_benchmark",
]
