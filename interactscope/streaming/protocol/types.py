"""The collection boundary: what the driver gives an adapter and what it gets back.

The collection driver (:mod:`interactscope.streaming.protocol.driver`) owns the decision grid, resume, the
cooldown and history controls, and writing records; an adapter only turns one decision request
into one answer. Offline Probing calls ``respond_batch`` with independent requests (batch them if
the backend can); Online Rolling calls ``open_session`` once per interaction and then
``session.step`` per decision point in time order. Records go to a :class:`RecordSink`
(``interactscope.streaming.runlog.RunWriter`` is one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict

from interactscope.engines.base import EngineError
from interactscope.engines.config import merge_options, parse_options
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.protocol.observation import Observation
from interactscope.streaming.schema import (
    Interaction,
    ResponseRecord,
    ToolCall,
    ToolSpec,
    VideoRecord,
)
from interactscope.streaming.settings import DRIVER_ADAPTER_KEYS, Settings

__all__ = [
    "Adapter",
    "AdapterError",
    "AdapterOutput",
    "DecisionRequest",
    "FatalAdapterError",
    "NoOptions",
    "RecordSink",
    "Session",
    "options_of",
]


class AdapterError(EngineError):
    """A backend failed in a way that is not the model's answer (bad config, engine error)."""


class FatalAdapterError(AdapterError):
    """A failure that would spoil every further record (e.g. the server drops the audio): the
    driver stops the run with it instead of writing it on each record."""


class NoOptions(BaseModel):
    """The options model of a plain :class:`Adapter`: it takes none, so every key is refused."""

    model_config = ConfigDict(extra="forbid")


OptionsT = TypeVar("OptionsT", bound=BaseModel)


def options_of(
    cls: type[OptionsT], name: str, config: Mapping[str, Any], settings: Settings
) -> OptionsT:
    """The backend options of a model config with the run's ``settings.adapter`` overrides,
    validated once (unknown keys refused with the list of valid ones).

    Raises:
        AdapterError: one line naming the model, the bad key and the valid keys.
    """
    where = f"model {name!r} (backend {config.get('backend', '?')})"
    # driver settings (adapter.batch_max_mb) are not backend options
    overrides = {k: v for k, v in settings.adapter.items() if k not in DRIVER_ADAPTER_KEYS}
    try:
        return parse_options(cls, merge_options(config, overrides), where)
    except AdapterError:
        raise
    except EngineError as exc:
        raise AdapterError(str(exc)) from exc


@dataclass
class DecisionRequest:
    """Everything an adapter may use at decision time ``t`` (seconds) of one interaction.

    ``observation`` is the causal observation at ``t`` (``None`` when the adapter declares
    ``needs_media = False`` or ``scene = none``); ``history`` holds the model's own last
    ``history.n`` non-silent responses of this interaction; ``tools`` is the resolved catalogue
    offered to the model (T1), empty otherwise."""

    interaction: Interaction
    video: VideoRecord
    bench_root: Path
    t: float
    settings: Settings
    tools: list[ToolSpec] = field(default_factory=list)
    observation: Observation | None = None
    history: list[ResponseRecord] = field(default_factory=list)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    """Executed calls so far with their results (``environment.show_results``; else empty)."""


@dataclass
class AdapterOutput:
    """One answer. ``silent=None`` lets the driver decide from ``text`` (the silence-token rule
    of docs/protocol.md); ``tool_calls=None`` lets it parse calls from ``text``; native tool-call
    fields of a backend go in ``tool_calls`` directly."""

    text: str = ""
    silent: bool | None = None
    tool_calls: list[ToolCall] | None = None
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class RecordSink(Protocol):
    """Where the driver writes records: ``done`` holds the (interaction id, t) already written,
    ``spoken(id)`` the non-silent records of an interaction in time order. A sink with a
    ``sync()`` method (``RunWriter``) is synced after each batch and each interaction."""

    done: set[tuple[str, float]]

    def append(self, record: ResponseRecord) -> None: ...

    def spoken(self, interaction_id: str) -> list[ResponseRecord]: ...


class Session:
    """Online Rolling session over one interaction; ``step`` is called in time order."""

    def step(self, request: DecisionRequest) -> AdapterOutput:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:
        """Release per-interaction state."""


class Adapter:
    """Base class of every backend. Subclasses set ``backend`` and override ``respond`` (or
    ``respond_batch``), and ``open_session`` for Online Rolling.

    ``config`` is the model config mapping (``configs/models/NAME.yaml``), ``settings`` the run's
    merged settings. A plain subclass takes no backend options: a config key beyond the meta
    keys (``backend``, ``notes``, ``settings``, ...), or a ``--set adapter.KEY``, is refused at
    construction as an unknown option (one line, as a ``ConfiguredAdapter``'s), unless it sets
    ``free_options = True`` (it reads ``self.config`` itself).

    Raises:
        AdapterError: (construction) an option a plain adapter does not take.
    """

    backend: ClassVar[str] = "base"
    needs_media: ClassVar[bool] = True
    supports_online: ClassVar[bool] = False
    unprompted: ClassVar[str | None] = None
    """None: the backend receives the protocol's prompt. A baseline or control that is sent no
    prompt says here what it does instead (``interactscope prompt`` prints it in place of a
    preview)."""
    free_options: ClassVar[bool] = False
    """True: any key of the model config is accepted (the class reads ``self.config``)."""

    def __init__(self, name: str, config: dict[str, Any], settings: Settings):
        self.name = name
        self.config = config
        self.settings = settings
        if self.options_model() is NoOptions:  # a ConfiguredAdapter parses its own
            options_of(NoOptions, name, config, settings)

    @classmethod
    def options_model(cls) -> type[BaseModel] | None:
        """The model this backend's options are validated against: its ``options_class``,
        :class:`NoOptions` for a plain adapter, ``None`` when it takes ``free_options``."""
        if cls.free_options:
            return None
        return getattr(cls, "options_class", None) or NoOptions

    def prepare(self, bench: Benchmark) -> None:
        """Called once with the loaded ``Benchmark`` before collection starts (load the model,
        run preflight checks, compute benchmark-level constants)."""

    def describe(self) -> dict[str, Any]:
        """Facts about the backend recorded into ``run.json`` (checkpoint, caveats, ...)."""
        return {}

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        raise NotImplementedError

    def respond_batch(self, requests: list[DecisionRequest]) -> list[AdapterOutput | Exception]:
        """Answer independent requests; an exception in the list fails that request only."""
        out: list[AdapterOutput | Exception] = []
        for r in requests:
            try:
                out.append(self.respond(r))
            except Exception as exc:  # noqa: BLE001 - recorded on the record, run goes on
                out.append(exc)
        return out

    def open_session(self, interaction: Interaction, video: VideoRecord) -> Session:
        raise AdapterError(f"backend {self.backend!r} does not support Online Rolling")

    def close(self) -> None:
        """Release the model."""
