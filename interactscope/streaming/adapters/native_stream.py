"""What the streaming-model adapters share (LiveCC, MMDuet2, VideoLLM-online; docs/protocol.md,
"Streaming models").

Each is an Online Rolling adapter that runs the model's own inference loop on the causal stream:
the model's frame rate and chunking, its own prompt pieces, its own speak/silent decision. At a
decision point ``t`` the session feeds every piece of the model's loop that is due by ``t`` (a
piece is due once the stream time reaches its end; all its frames have ``pts <= t``), in order,
and the record at ``t`` is what the model said while those pieces were fed. The first decision
point (the query time q) replays the stream from 0 (the model keeps its own generated history
throughout). A point at which no piece of the model's loop falls due is recorded as silence with
``extra.native = []``.

The decision signal each model exposes is recorded per piece in ``extra.native`` (a list of
``{"t_s": piece end, "silent": ..., "text": ..., <signal>}``); ``silent`` maps the model's own
"say nothing" to our silence.

Frames come from :class:`StreamFrames`: the file decoded once at the model's frame rate (PyAV),
the frame at stream time ``k / fps`` being the last decoded frame with ``pts <= k / fps`` (the
1 fps rule of ``media.causal``, at another rate).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import av
import numpy as np
from pydantic import Field

from interactscope.engines.config import BackendOptions
from interactscope.engines.streaming_qwen import TokenStream, load_qwen_vl
from interactscope.media.causal import fit_size
from interactscope.streaming.adapters.base import (
    AdapterError,
    AdapterOutput,
    ConfiguredAdapter,
    DecisionRequest,
    Session,
    adapter_errors,
)
from interactscope.streaming.schema import Interaction, VideoRecord

log = logging.getLogger(__name__)

__all__ = [
    "NativeOptions",
    "NativeStreamAdapter",
    "QwenVLStreamAdapter",
    "NativeSession",
    "QwenVLSession",
    "Piece",
    "StreamFrames",
    "PieceResult",
]

EPS = 1e-6


class NativeOptions(BackendOptions):
    """Options every streaming-model adapter takes (model config or ``--set adapter.KEY``).

    ``checkpoint``: HF id or local path; ``device`` / ``dtype``: default cuda/bfloat16 when a GPU
    is present, else cpu/float32; ``fps``: the model's frame rate (Hz); ``max_side``: frames are
    decoded at most this long side (px) before the model's own resize; ``max_new_tokens``: per
    reply."""

    checkpoint: str | None = None
    device: str | None = None
    dtype: str | None = None
    fps: float = Field(2.0, gt=0)
    max_side: int | None = Field(640, ge=16)
    max_new_tokens: int = Field(32, ge=1)


@dataclass
class Piece:
    """One piece of the model's loop: frames with stream times ``times`` (s), due at ``end_s``."""

    start_s: float
    end_s: float
    times: list[float]


@dataclass
class PieceResult:
    """What the model did on one piece: its reply text, whether that is its silence, the
    native signal (JSON-ready)."""

    end_s: float
    text: str
    silent: bool
    signal: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"t_s": round(self.end_s, 3), "silent": self.silent, "text": self.text,
                **self.signal}  # fmt: skip


class StreamFrames:
    """The frames of one video at ``fps`` (see the module docstring), kept in memory.

    Args:
        path: the media file.
        fps: frames per second of stream time.
        max_side: long side (px) the frames are stored at (None: as decoded).

    Raises:
        AdapterError: the file cannot be decoded (names the file).
    """

    def __init__(self, path: Path, fps: float, max_side: int | None):

        self.fps = float(fps)
        self.images: list[np.ndarray] = []
        self.end_s = 0.0
        try:
            with av.open(str(path)) as c:
                stream = c.streams.video[0]
                origin = stream.start_time * stream.time_base if stream.start_time else 0
                end = float(c.duration) / 1e6 if c.duration else 0.0
                last: np.ndarray | None = None
                for fr in c.decode(stream):
                    pts = float(fr.pts * stream.time_base - origin) if fr.pts is not None else 0.0
                    img = self._rgb(fr, max_side)
                    # stream times before this frame's pts show the previous frame
                    while len(self.images) / self.fps < pts - EPS:
                        self.images.append(last if last is not None else img)
                    last = img
                    end = max(end, pts)
                if last is not None:
                    self.images.append(last)
                    while len(self.images) / self.fps < end - EPS:
                        self.images.append(last)
                self.end_s = end
        except (av.error.FFmpegError, IndexError) as exc:
            raise AdapterError(f"{path}: cannot decode the video ({exc})") from None

    @staticmethod
    def _rgb(fr: Any, max_side: int | None) -> np.ndarray:
        w, h = fit_size(fr.width, fr.height, max_side)
        if (w, h) != (fr.width, fr.height):
            fr = fr.reformat(width=w, height=h)
        return fr.to_ndarray(format="rgb24")

    def time_of(self, k: int) -> float:
        return k / self.fps

    def frames(self, times: list[float]) -> list[np.ndarray]:
        """The frames at stream times ``times`` (each a multiple of 1/fps, within the file)."""
        out = []
        for t in times:
            k = int(round(t * self.fps))
            out.append(self.images[min(k, len(self.images) - 1)])
        return out

    @property
    def duration_s(self) -> float:
        """The file's duration (s): the container's, at least the last frame's pts."""
        return self.end_s


def frame_times(start_k: int, n: int, fps: float) -> list[float]:
    """Stream times of frames ``start_k .. start_k + n - 1`` at ``fps`` (s)."""
    return [round((start_k + i) / fps, 6) for i in range(n)]


class NativeStreamAdapter(ConfiguredAdapter):
    """Base of the streaming-model adapters: Online Rolling only; frames from
    :class:`StreamFrames` (the driver's 1 fps observation is not used, ``needs_media`` False);
    the engine is built by the subclass's :meth:`build` (lazily, at :meth:`prepare`).

    Args:
        model, processor: an already-built model (and processor or tokenizer): tests pass tiny
            random-weight ones; when given, ``checkpoint`` is not loaded.
    """

    backend: ClassVar[str] = "native-stream"
    needs_media: ClassVar[bool] = False
    supports_online: ClassVar[bool] = True
    options_class: ClassVar[type[NativeOptions]] = NativeOptions

    def __init__(
        self,
        name: str,
        config: dict[str, Any],
        settings: Any,
        *,
        model: Any | None = None,
        processor: Any | None = None,
    ):
        super().__init__(name, config, settings)
        self.model, self.processor = model, processor
        self.bench: Any = None
        self._frames: tuple[str, StreamFrames] | None = None
        self.frames_fed: list[tuple[float, list[float]]] = []
        """(decision time, stream times of the frames given to the model then): causality."""

    def load(self) -> None:
        """Load the checkpoint unless a model was given. Raises AdapterError."""
        if self.model is None:
            self.model, self.processor = self.build()

    def build(self) -> tuple[Any, Any]:  # pragma: no cover - per model
        raise NotImplementedError

    def prepare(self, bench: Any) -> None:
        """Keep the benchmark (media paths) and load the model.

        Raises:
            AdapterError: ``scene=none`` (a streaming model's loop is driven by its frames;
                the scene ablation applies to prompted models), or loading failed.
        """
        if self.settings.scene == "none":
            raise AdapterError(
                f"model {self.name}: a streaming model's own loop is driven by frames; "
                "scene=none (the scene ablation) is for prompted models"
            )
        self.bench = bench
        self.load()

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        raise AdapterError(
            f"model {self.name}: a streaming model runs Online Rolling only (--protocol online)"
        )

    def describe(self) -> dict[str, Any]:
        return {"checkpoint": self.options.checkpoint, "native_loop": self.loop_facts()}

    def loop_facts(self) -> dict[str, Any]:
        """The loop settings in force (recorded in ``run.json``)."""
        return self.options.model_dump(exclude={"generation", "device", "dtype", "checkpoint"})

    def stream_frames(self, video: VideoRecord) -> StreamFrames:
        """The video's frames at the model's rate (one video held at a time)."""
        if self._frames is None or self._frames[0] != video.id:
            path = self.bench.media_path(video) if self.bench is not None else Path(video.path)
            self._frames = (video.id, StreamFrames(path, self.options.fps, self.options.max_side))
        return self._frames[1]

    def open_session(self, interaction: Interaction, video: VideoRecord) -> NativeSession:
        self.load()
        return self.session_class(self, interaction, self.stream_frames(video))

    session_class: ClassVar[type[NativeSession]]


class QwenVLStreamAdapter(NativeStreamAdapter):
    """A streaming model whose checkpoint is a Qwen2-VL / Qwen2.5-VL one (LiveCC, MMDuet2)."""

    def build(self) -> tuple[Any, Any]:
        with adapter_errors(f"model {self.name}"):
            return load_qwen_vl(self.options.checkpoint or "", self.options.device,
                                self.options.dtype)  # fmt: skip


class NativeSession(Session):
    """Feeds the pieces of the model's loop due by each decision point (module docstring).

    Subclasses give :meth:`pieces` (the model's chunking of ``[0, duration]``) and
    :meth:`run_piece` (one piece through the model), and keep the model's running state in
    ``stream`` (closed with the session)."""

    def __init__(
        self, adapter: NativeStreamAdapter, interaction: Interaction, frames: StreamFrames
    ):
        self.adapter = adapter
        self.interaction = interaction
        self.frames = frames
        self.q = float(interaction.q)
        self.query_fed = False
        self.todo = self.pieces(frames.duration_s)
        self.last_t: float | None = None
        self.stream: Any = None

    def pieces(self, duration_s: float) -> list[Piece]:  # pragma: no cover - per model
        raise NotImplementedError

    def run_piece(self, piece: Piece, images: list[np.ndarray], query: str | None) -> PieceResult:
        raise NotImplementedError  # pragma: no cover - per model

    def query_for(self, piece: Piece) -> str | None:
        """The request text when this piece is the first fed at or after q (the model's loop
        takes a new user message with the next piece it encodes), else None."""
        if self.query_fed or piece.end_s < self.q - EPS:
            return None
        self.query_fed = True
        return self.interaction.query.text or ""

    def step(self, request: DecisionRequest) -> AdapterOutput:
        t = float(request.t)
        if self.last_t is not None and t < self.last_t:
            raise AdapterError(
                f"interaction {self.interaction.id}: Online Rolling steps must go forward in "
                f"time (t={t:g} after {self.last_t:g})"
            )
        self.last_t = t
        results: list[PieceResult] = []
        fed: list[float] = []
        while self.todo and self.todo[0].end_s <= t + EPS:
            piece = self.todo.pop(0)
            fed.extend(piece.times)
            results.append(self.run_piece(piece, self.frames.frames(piece.times),
                                          self.query_for(piece)))  # fmt: skip
        self.adapter.frames_fed.append((t, fed))
        return combine(results)

    def close(self) -> None:
        self.todo = []
        if self.stream is not None:
            self.stream.close()


class QwenVLSession(NativeSession):
    """A session of a :class:`QwenVLStreamAdapter` (LiveCC, MMDuet2): the model's running
    state is a :class:`~interactscope.engines.streaming_qwen.TokenStream` (its KV cache;
    positions by the options' ``positions``), and the loop's pieces are :func:`chunk_pieces` at
    the options' ``fps``, sized by the subclass's :meth:`chunking`."""

    def __init__(
        self, adapter: NativeStreamAdapter, interaction: Interaction, frames: StreamFrames
    ):
        super().__init__(adapter, interaction, frames)
        o = adapter.options
        self.stream = TokenStream(adapter.model, adapter.processor, o.positions,
                                  self.repetition_penalty())  # fmt: skip

    def chunking(self) -> tuple[int, int]:  # pragma: no cover - per model
        """(frames of the first piece, frames of each later piece)."""
        raise NotImplementedError

    def repetition_penalty(self) -> float | None:
        """The penalty over the whole sequence at each reply (None: none)."""
        return None

    def pieces(self, duration_s: float) -> list[Piece]:
        first, every = self.chunking()
        return chunk_pieces(duration_s, self.adapter.options.fps, first, every)


def combine(results: list[PieceResult]) -> AdapterOutput:
    """The record of one decision point from the pieces fed at it: the non-silent replies joined
    by newlines (silent when there are none); every piece in ``extra.native``."""
    spoken = [r.text.strip() for r in results if not r.silent and r.text.strip()]
    return AdapterOutput(
        text="\n".join(spoken),
        silent=not spoken,
        extra={"native": [r.record() for r in results]},
    )


def chunk_pieces(
    duration_s: float, fps: float, first: int, every: int, *, tail: bool = False
) -> list[Piece]:
    """The model's chunking of ``[0, duration_s]``: the first ``first`` frames, then ``every``
    frames at a time; a piece of frames ``k .. k + n - 1`` ends (is due) at ``(k + n) / fps``.
    With ``tail`` a last shorter piece ends at ``duration_s``; else it is left out (the model's
    loop waits for a full chunk)."""
    n_total = int(math.floor(duration_s * fps + EPS))
    out, k = [], 0
    size = first
    while k < n_total:
        n = min(size, n_total - k)
        if n < size and not tail:
            break
        end = (k + n) / fps if n == size else duration_s
        out.append(Piece(start_s=k / fps, end_s=round(end, 6), times=frame_times(k, n, fps)))
        k += n
        size = every
    return out


Processor = Callable[[Any, int], Any]
