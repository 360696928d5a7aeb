"""Analysis of scored runs: cluster bootstrap (:mod:`.stats`), the run loader (:mod:`.runs`),
comparisons (:mod:`.compare`), evidence controls registered by name (:mod:`.controls`), the
variants beyond the paper (:mod:`.beyond_paper`) and the report (:mod:`.report`). Every refusal
is an :class:`AnalysisError`. Submodules are imported on use (the CLI stays fast)."""

from interactscope.streaming.analysis.errors import AnalysisError, CompareError

__all__ = ["AnalysisError", "CompareError"]
