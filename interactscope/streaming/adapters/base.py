"""Adapter protocol (defined in :mod:`interactscope.streaming.protocol.types`, re-exported here so old
imports keep working) and the helpers every streaming adapter over an engine shares."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from pydantic import BaseModel

from interactscope.engines.base import EngineError
from interactscope.media.causal import fit_size
from interactscope.streaming.protocol.types import (
    Adapter,
    AdapterError,
    AdapterOutput,
    DecisionRequest,
    RecordSink,
    Session,
    options_of,
)
from interactscope.streaming.settings import Settings, batch_max_bytes

__all__ = [
    "Adapter",
    "AdapterError",
    "AdapterOutput",
    "DecisionRequest",
    "RecordSink",
    "Session",
    "ConfiguredAdapter",
    "FrameConsumer",
    "LocalEngineAdapter",
    "budget_side",
    "area_budget_side",
    "NO_PIXELS_SIDE",
    "smart_resize",
    "adapter_errors",
    "output_of",
    "where_of",
    "options_of",
]


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


def smart_resize(
    height: int, width: int, factor: int = 28, min_pixels: int = 3136, max_pixels: int = 12845056
) -> tuple[int, int]:
    """Qwen-VL's resize rule (``transformers`` ``qwen2_vl.image_processing_qwen2_vl
    .smart_resize``, also the video processor's): both sides multiples of ``factor``, area
    within [``min_pixels``, ``max_pixels``], aspect ratio kept as far as possible.
    Returns (h, w) px."""
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


PATCH_FACTORS = (28, 32)
"""Resize factors (patch size x merge size, px) :func:`budget_side` keeps the grid for:
Qwen2/2.5-VL and Qwen2.5-Omni (14 x 2) and Qwen3-VL / Qwen3-Omni (16 x 2)."""


def budget_side(
    width: int,
    height: int,
    max_pixels: int,
    min_pixels: int = 3136,
    factors: tuple[int, ...] = PATCH_FACTORS,
    seen: tuple[int, int] | None = None,
) -> int | None:
    """The smallest long side (px) a ``width`` x ``height`` frame can be stored at so that a
    Qwen processor with this pixel budget still resizes it to the same grid (hence the same
    tokens) as the frame it would have received (``seen``, (w, h); default the frame itself):
    the stored frame is at least the grid's size on both axes (the processor only ever
    downscales it), and the processor's input differs from before by one extra downscale (its
    pixel values are close, not equal).

    The search runs over sides from the largest grid side up (:func:`smart_resize` with each
    of ``factors``; the stored size is :func:`~interactscope.media.causal.fit_size`'s).

    Returns:
        The side, or None when the processor does not downscale ``seen`` (store it as is) or no
        smaller side keeps every grid.
    """
    sw, sh = seen or (width, height)
    long = max(width, height)
    grids = {f: smart_resize(sh, sw, f, min_pixels, max_pixels) for f in factors}
    lo = max(max(g) for g in grids.values())
    if lo >= max(sw, sh):
        return None
    for side in range(lo, long):
        fw, fh = fit_size(width, height, side)
        if all(
            fh >= g[0] and fw >= g[1] and smart_resize(fh, fw, f, min_pixels, max_pixels) == g
            for f, g in grids.items()
        ):
            return side
    return None


def _min_side(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


NO_PIXELS_SIDE = 64
"""Long side (px) frames are held at for a model that sees no pixels (``sees_pixels: false``,
e.g. ``cascade``): the observation still counts and times them; nobody looks at their pixels."""


class FrameConsumer:
    """What an adapter's model does with frame size, for the media layer and the driver.

    :meth:`consumer_max_side` is the largest long side (px) the model uses of a frame of a given
    size: the driver stores each video's 1 fps frames at it (docs/protocol.md, frames in
    memory). The default is ``frames.max_side`` (the frames are used as the observation gives
    them), or :data:`NO_PIXELS_SIDE` for a config with ``sees_pixels: false``; a backend whose
    processor downscales further (a pixel budget) overrides it."""

    settings: Settings

    def consumer_max_side(self, width: int, height: int) -> int | None:
        """Long side (px) to hold frames of display size ``width`` x ``height`` (already
        fitted to ``frames.max_side``) at; None: as they are."""
        if self.sees_no_pixels():
            return _min_side(NO_PIXELS_SIDE, self.settings.frames.max_side)
        return self.settings.frames.max_side

    def sees_no_pixels(self) -> bool:
        """True when the model config says ``sees_pixels: false`` or the backend is
        ``cascade`` (a text model: the rule ``interactscope prompt`` uses)."""
        config = getattr(self, "config", None) or {}
        return config.get("sees_pixels") is False or getattr(self, "backend", None) == "cascade"

    def memory_info(self) -> dict[str, Any]:
        """Recorded into ``run.json`` (``adapter``): the frame-size rule and the batch byte
        bound in force."""
        mb = batch_max_bytes(self.settings)
        return {
            "frames_consumer": self.consumer_rule(),
            "batch_max_mb": round(mb / 2**20, 3) if mb else 0,
        }

    def consumer_rule(self) -> str:
        """One line saying how :meth:`consumer_max_side` is chosen."""
        side = self.settings.frames.max_side
        rule = f"frames.max_side={side}" if side else "source size"
        return f"sees no pixels ({NO_PIXELS_SIDE} px), {rule}" if self.sees_no_pixels() else rule


def pixel_budget_side(
    width: int, height: int, max_pixels: int, min_pixels: int, max_side: int | None
) -> int | None:
    """:func:`budget_side` for a processor with this budget, capped at ``max_side``."""
    return _min_side(budget_side(width, height, max_pixels, min_pixels), max_side)


def area_budget_side(
    width: int, height: int, max_pixels: int, max_side: int | None = None
) -> int | None:
    """Long side (px) to hold a ``width`` x ``height`` frame at under a pixel budget for a
    server whose processor is not known: :func:`pixel_budget_side` (the Qwen grid kept, so a
    Qwen server gets the grid the in-process Qwen configs get), else, when the frame is over
    the budget and no side keeps the grid, the largest long side whose
    :func:`~interactscope.media.causal.fit_size` area is <= ``max_pixels``; capped at
    ``max_side``. None: the frame is within the budget (held as it is)."""
    side = pixel_budget_side(width, height, max_pixels, min(3136, max_pixels), max_side)
    if side is not None or width * height <= max_pixels:
        return side
    long = max(width, height)
    side = max(16, int(long * math.sqrt(max_pixels / (width * height))))
    while side > 16 and math.prod(fit_size(width, height, side)) > max_pixels:
        side -= 1
    return _min_side(side, max_side)


class ConfiguredAdapter(Adapter):
    """An adapter whose backend options are its model config validated into
    :attr:`options_class` (with the run's ``settings.adapter`` overrides; :func:`options_of`)
    once, at construction, into ``self.options``.

    Raises:
        AdapterError: (construction) an unknown or invalid option, naming it and the valid ones.
    """

    options_class: ClassVar[type[BaseModel]]
    options: Any

    def __init__(self, name: str, config: dict[str, Any], settings: Settings):
        super().__init__(name, config, settings)
        self.options = options_of(self.options_class, name, config, settings)


class LocalEngineAdapter(FrameConsumer, ConfiguredAdapter):
    """An adapter over one in-process engine (``self.engine``), which it loads, exposes and
    closes; a subclass builds the engine from ``self.options`` in :meth:`make_engine`, which
    takes the keyword arguments given to the constructor beyond ``name, config, settings``
    (an already-loaded model and its tokenizer or processor: tests, notebooks)."""

    engine: Any

    def __init__(self, name: str, config: dict[str, Any], settings: Settings, **loaded: Any):
        super().__init__(name, config, settings)
        self.engine = self.make_engine(**loaded)
        self.max_new_tokens = self.engine.max_new_tokens
        self.temperature = self.options.generation.temperature

    def make_engine(self, **loaded: Any) -> Any:  # pragma: no cover - per backend
        raise NotImplementedError

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
