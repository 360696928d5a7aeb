"""Collection settings of a run (docs/protocol.md#decision-grid). Every knob is a named, recorded setting in ``run.json``.

Nested groups mirror the dotted setting names of docs/protocol.md (``grid.step_s``, ``frames.max``, ...). Model configs
(``configs/models/*.yaml``) and CLI options override the defaults; the merged result is recorded in
``run.json``. Settings fall in two kinds: those that define what a run measures (a resumed run must
match them exactly) and execution settings (:data:`EXECUTION_SETTINGS`: concurrency, retries,
timeouts, the audio check) that only change how the run is carried out; these are recorded per
invocation and may change between a run and its resume.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from interactscope.core.settings import apply_overrides as apply_overrides
from interactscope.core.settings import diff_settings as _diff
from interactscope.core.settings import flatten as flatten
from interactscope.core.settings import options_with as options_with
from interactscope.core.settings import restoring_sets as _restoring

EXECUTION_SETTINGS: tuple[str, ...] = (
    "adapter.max_concurrency",
    "adapter.max_retries",
    "adapter.timeout_s",
    "adapter.check_audio",
    "adapter.batch_size",
    "adapter.threads",
    "adapter.frame_cache_mb",
    "adapter.host_threads",
    "adapter.batch_max_mb",
    "adapter.fsync",
)
"""Dotted settings that change how a run is executed, not what it measures: they may differ
between a run and its resume (each invocation's values are recorded in ``run.json``)."""

DEFAULT_BATCH_MAX_MB = 1024
"""``adapter.batch_max_mb``: a plain Offline Probing batch (``respond_batch`` call) is cut
before its requests' distinct host arrays (frames, audio, attachments; shared buffers counted
once, :class:`interactscope.streaming.protocol.observation.ArrayBytes`) would pass this many MiB, as well
as at ``batch_size`` points; a single point larger than it still goes alone. ``0``: no byte
bound. A driver setting: not passed to the backend's options."""

FSYNC_POLICIES = ("batch", "record")
"""``adapter.fsync``: when ``collect`` makes the records written so far durable (fsync of
``responses.jsonl``). ``batch`` (the default): once per model call's records (a plain Offline
Probing ``respond_batch`` batch; one point in Offline Probing with history/cooldown) and at the end
of each interaction, which is the only point Online Rolling syncs at (resume redoes a partial
interaction from q, so an fsync mid-interaction would keep nothing more). ``record``: every record
(the behaviour before; ``RecordWriter.sync_every = 1``). Either way every record is flushed to the
OS before the next model call, so a killed process loses nothing written; a power loss loses at
most the unsynced batch, which resume collects again. A driver setting (docs/protocol.md#run-folder-contract)."""

DRIVER_ADAPTER_KEYS = frozenset({"batch_max_mb", "fsync"})
"""``settings.adapter`` keys read by the collection driver, not backend options."""


def batch_max_bytes(settings: Settings) -> int | None:
    """``adapter.batch_max_mb`` in bytes (default :data:`DEFAULT_BATCH_MAX_MB`); None when 0.

    Raises:
        ValueError: not a number >= 0."""
    raw = settings.adapter.get("batch_max_mb", DEFAULT_BATCH_MAX_MB)
    try:
        mb = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"adapter.batch_max_mb must be a number of MiB, got {raw!r}") from None
    if not mb >= 0:
        raise ValueError(f"adapter.batch_max_mb must be >= 0, got {raw!r}")
    return int(mb * 2**20) if mb > 0 else None


def writer_sync_every(settings: Settings) -> int:
    """``RecordWriter.sync_every`` for ``adapter.fsync``: 1 for ``record``, 0 for ``batch`` (the
    driver calls ``sync()`` at each batch's and interaction's end).

    Raises:
        ValueError: not one of :data:`FSYNC_POLICIES`."""
    raw = settings.adapter.get("fsync", "batch")
    if raw not in FSYNC_POLICIES:
        raise ValueError(f"adapter.fsync must be one of {', '.join(FSYNC_POLICIES)}, got {raw!r}")
    return 1 if raw == "record" else 0


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class GridSettings(_Group):
    step_s: float = Field(
        1.0, gt=0, description="decision grid step; 1 = per second (docs/protocol.md#decision-grid)"
    )


class FrameSettings(_Group):
    max: int = Field(32, ge=1, description="frames per call at most")
    cap_policy: Literal["uniform", "recent", "stride"] = "uniform"
    max_side: int | None = Field(None, ge=16, description="downscale so the long side is <= this")


class AudioSettings(_Group):
    mode: Literal["native", "asr", "none"] = "native"
    sample_rate: int = Field(16000, gt=0, description="Hz")
    segment_s: float | None = Field(
        None,
        gt=0,
        description="native audio as consecutive segments of this many seconds on the frames' "
        "timeline (prompt layouts that interleave, v3); None = one item [0, t]",
    )
    asr_strict: bool = Field(
        False,
        description="re-transcribe the causal prefix at each t instead of one whole-file pass",
    )


class HistorySettings(_Group):
    n: int = Field(0, ge=0, description="show the model its own last n non-silent responses")


class EnvironmentSettings(_Group):
    show_results: bool = Field(
        False,
        description="Offline Probing: show the calls executed so far and their results in later "
        "observations of environment interactions (off = the paper's prompt)",
    )


class Settings(_Group):
    """All collection settings. ``adapter`` holds backend-specific options (e.g. ``delay_s``)."""

    protocol: Literal["offline", "online"] = "offline"
    grid: GridSettings = Field(default_factory=GridSettings)
    frames: FrameSettings = Field(default_factory=FrameSettings)
    audio: AudioSettings = Field(default_factory=AudioSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    cooldown_s: float = Field(0.0, ge=0)
    scene: Literal["full", "none"] = "full"
    silence_token: str = "<SILENT>"
    prompt_version: str = "v2"
    adapter: dict[str, Any] = Field(default_factory=dict)
    environment: EnvironmentSettings = Field(default_factory=EnvironmentSettings)

    @model_serializer(mode="wrap")
    def _omit_default_environment(self, handler: Any) -> dict[str, Any]:
        # recorded only when set, so run.json (and resuming runs made before it) stay as they were
        out = handler(self)
        if out.get("environment") == EnvironmentSettings().model_dump():
            out.pop("environment")
        if isinstance(out.get("audio"), dict) and out["audio"].get("segment_s") is None:
            out["audio"].pop("segment_s", None)  # likewise (since issue 29)
        return out


def is_execution_setting(key: str) -> bool:
    """True for a dotted key in (or under) :data:`EXECUTION_SETTINGS`."""
    return any(key == k or key.startswith(k + ".") for k in EXECUTION_SETTINGS)


def execution_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The execution settings present in a settings dict, as ``{dotted key: value}``."""
    return {k: v for k, v in flatten(settings).items() if is_execution_setting(k)}


def diff_settings(
    a: dict[str, Any], b: dict[str, Any], *, include_execution: bool = False
) -> list[str]:
    """:func:`interactscope.core.settings.diff_settings` leaving out the execution settings
    (:data:`EXECUTION_SETTINGS`) unless ``include_execution``."""
    return _diff(a, b, ignore=() if include_execution else EXECUTION_SETTINGS)


def restoring_sets(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """:func:`interactscope.core.settings.restoring_sets` over the settings
    :func:`diff_settings` compares (execution settings left out)."""
    return _restoring(a, b, ignore=EXECUTION_SETTINGS)


Strategy = Literal["online", "sequential", "batched"]


def collection_strategy(settings: Settings, *, environment: bool = False) -> Strategy:
    """The one online/offline rule (docs/protocol.md): how the decision points of an interaction
    are collected under ``settings``.

    - ``online``: Online Rolling, one session per interaction, points in time order;
    - ``sequential``: Offline Probing whose points depend on earlier answers (history shown,
      a cooldown, or an environment interaction with ``environment.show_results``), one at a time
      in time order;
    - ``batched``: plain Offline Probing, points independent of each other, batched.

    ``environment``: the interaction runs on an EgoBench environment.
    """
    if settings.protocol == "online":
        return "online"
    shows_results = environment and settings.environment.show_results
    if settings.history.n > 0 or settings.cooldown_s > 0 or shows_results:
        return "sequential"
    return "batched"


def shows_results(settings: Settings) -> bool:
    """Whether an environment interaction's observations show the calls executed so far and
    their results: always in Online Rolling (the session saw them), in Offline Probing only with
    ``environment.show_results``."""
    return settings.protocol == "online" or settings.environment.show_results
