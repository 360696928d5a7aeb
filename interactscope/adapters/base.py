"""Adapter protocol (defined in :mod:`interactscope.protocol.types`, re-exported here so old
imports keep working) and the helpers every streaming adapter over an engine shares."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel

from interactscope.engines.base import EngineError
from interactscope.engines.config import merge_options, parse_options
from interactscope.protocol.types import (
    Adapter,
    AdapterError,
    AdapterOutput,
    DecisionRequest,
    RecordSink,
    Session,
)
from interactscope.settings import Settings

__all__ = [
    "Adapter",
    "AdapterError",
    "AdapterOutput",
    "DecisionRequest",
    "RecordSink",
    "Session",
    "LocalEngineAdapter",
    "adapter_errors",
    "output_of",
    "where_of",
    "options_of",
]

OptionsT = TypeVar("OptionsT", bound=BaseModel)


def where_of(request: DecisionRequest) -> str:
    """``interaction ID t=Ts``: how errors name a decision point."""
    return f"interaction {request.interaction.id} t={request.t:g}s"


@contextmanager
def adapter_errors(where: str | None = None) -> Iterator[None]:
    """Re-raise an engine's :class:`EngineError` as :class:`AdapterError` (prefixed with
    ``where``), so collection reports it as a backend failure on the record."""
    try:
        yield
    except AdapterError:
        raise
    except EngineError as exc:
        raise AdapterError(f"{where}: {exc}" if where else str(exc)) from exc


def options_of(
    cls: type[OptionsT], name: str, config: Mapping[str, Any], settings: Settings
) -> OptionsT:
    """The backend options of a model config with the run's ``settings.adapter`` overrides,
    validated once (unknown keys refused with the list of valid ones).

    Raises:
        AdapterError: one line naming the model, the bad key and the valid keys.
    """
    where = f"model {name!r} (backend {config.get('backend', '?')})"
    with adapter_errors():
        return parse_options(cls, merge_options(config, settings.adapter), where)


def output_of(res: Any, **extra: Any) -> AdapterOutput:
    """An engine ``ChatResult`` as the driver's :class:`AdapterOutput` (its raw facts, then
    ``extra``, in ``extra``)."""
    return AdapterOutput(
        text=res.text,
        latency_s=res.latency_s,
        prompt_tokens=res.prompt_tokens,
        completion_tokens=res.completion_tokens,
        extra={**res.raw, **extra},
    )


class LocalEngineAdapter(Adapter):
    """An adapter over one in-process engine (``self.engine``), which it loads, exposes and
    closes; a subclass builds the engine in ``__init__`` and calls :meth:`_use`."""

    options: Any
    engine: Any

    def _use(self, options: Any, engine: Any) -> None:
        self.options, self.engine = options, engine
        self.max_new_tokens = engine.max_new_tokens
        self.temperature = options.generation.temperature

    @property
    def model(self) -> Any:
        return self.engine.model

    def load(self) -> None:
        """Load the engine's model (idempotent). Raises AdapterError when a dependency is
        missing (as the class says)."""
        with adapter_errors():
            self.engine.load()

    def close(self) -> None:
        self.engine.close()
