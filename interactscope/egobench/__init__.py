"""EgoBench: interactive egocentric tool-use benchmark verified against a database state.

``load_variant`` reads a variant's tasks, tool schema and seed database; ``Environment`` runs
its tools on SQLite; ``score_log`` scores an episode log (ToolSucc / ResultSucc / JointSucc /
MicroAcc). See docs/egobench.md."""

from __future__ import annotations

from interactscope.egobench.data import (
    DataProblem,
    EgoBenchError,
    list_variants,
    load_variant,
    package_data_dir,
)
from interactscope.egobench.env import Environment
from interactscope.egobench.records import (
    AgentLog,
    CallRecord,
    DialogueTurn,
    EpisodeRecord,
    Task,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserVerdict,
    Variant,
)
from interactscope.egobench.scorer import ScoreResult, TaskScore, read_score, score_log, write_score
from interactscope.egobench.settings import ScoreSettings

__all__ = [
    "AgentLog",
    "CallRecord",
    "DataProblem",
    "DialogueTurn",
    "EgoBenchError",
    "Environment",
    "EpisodeRecord",
    "ScoreResult",
    "ScoreSettings",
    "Task",
    "TaskScore",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "UserVerdict",
    "Variant",
    "list_variants",
    "load_variant",
    "package_data_dir",
    "read_score",
    "score_log",
    "write_score",
]
