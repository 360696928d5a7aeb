"""Baselines that need no model (docs/protocol.md, controls).

- ``silent``: always silent; scores 0 with every target ``missed``.
- ``oracle``: answers each target's reference (T1: its tool calls) at the decision point nearest
  the target time (τ, or the interval midpoint) inside its window; checks that a perfect model
  scores 1.0.
- ``blind-fire``: answers every interaction once, at the first decision point ≥ q + ``delay_s``,
  with the benchmark's most frequent T1 tool among those the interaction is offered (T1; an
  environment interaction's catalogue is its environment's tools) or a fixed sentence (other
  tasks).
- ``change-detector``: the signal-driven control: answers at each decision point whose causal
  prefix holds a new low-level event since the previous decision point — a visual change point
  (1 fps frame difference above ``visual_threshold``) or an audio onset (Silero VAD shipped in
  faster-whisper, or an energy rise; ``audio_detector``) — with blind-fire's tool (T1) or a
  templated sentence. It measures how much of the timing score low-level signals alone earn.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from interactscope.media.onsets import (
    AudioDetector,
    audio_onsets,
    resolve_detector,
    visual_changes,
)
from interactscope.streaming.adapters.base import (
    AdapterError,
    AdapterOutput,
    ConfiguredAdapter,
    DecisionRequest,
)
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.protocol.grid import decision_grid
from interactscope.streaming.schema import Interaction, Target, ToolCall, VideoRecord
from interactscope.streaming.settings import Settings


class BaselineOptions(BaseModel):
    """Options every baseline takes (model config, ``options:`` or ``--set adapter.KEY``)."""

    model_config = ConfigDict(extra="forbid")

    simulate_latency_s: float = Field(
        0.0, ge=0, description="sleep per call (exercise progress bars, kills, resume)"
    )


class OracleOptions(BaselineOptions):
    tolerance_s: float = Field(2.0, ge=0, description="answer inside target time +- this")


class BlindFireOptions(BaselineOptions):
    delay_s: float = Field(3.0, ge=0, description="answer once at q + delay_s")
    text: str | None = Field(None, description="the fixed sentence for non-T1 tasks")


class ChangeDetectorOptions(BlindFireOptions):
    visual_threshold: float = Field(
        0.12,
        ge=0,
        le=1,
        description="mean |Δluma| (0-1) of consecutive 1 fps frames that is a change",
    )
    audio_detector: AudioDetector = Field(
        "auto", description="silero (needs [asr]) | energy | auto (silero where installed)"
    )
    energy_db: float = Field(
        -35.0, description="energy detector: onset level, dBFS of 20 ms frames"
    )
    use_visual: bool = Field(True, description="fire at visual change points")
    use_audio: bool = Field(True, description="fire at audio onsets")


def _simulate_latency(options: BaselineOptions) -> None:
    if options.simulate_latency_s > 0:
        time.sleep(options.simulate_latency_s)


class _Baseline(ConfiguredAdapter):
    options_class: ClassVar[type[BaselineOptions]] = BaselineOptions


class SilentAdapter(_Baseline):
    backend = "silent"
    needs_media = False
    unprompted = "it always answers with the silence token"
    supports_online = False

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        _simulate_latency(self.options)
        return AdapterOutput(text=self.settings.silence_token, silent=True, latency_s=0.0)


def oracle_time(target: Target, grid: list[float], tolerance_s: float = 2.0) -> float:
    """The decision point at which a perfect model answers ``target``: the grid point nearest the
    target time (τ or interval midpoint) among those inside its window; ties go to the earlier
    point; if no grid point lies in the window, the nearest grid point overall."""
    lo, hi = target.window(tolerance_s)
    inside = [g for g in grid if lo - 1e-9 <= g <= hi + 1e-9]
    pool = inside or grid
    return min(pool, key=lambda g: (abs(g - target.anchor_s), g))


def _tool_text(names: list[str]) -> str:
    calls = [{"name": n, "arguments": {}} for n in names]
    return "```json\n" + json.dumps(calls if len(calls) != 1 else calls[0]) + "\n```"


def _oracle_calls(tg: Target, names: list[str]) -> list[ToolCall]:
    """A T1 target's expected ``calls`` with their arguments (environment interactions), then
    its other tool names as bare calls; without ``calls`` just the bare names (the paper)."""
    full = [ToolCall(name=c.name, arguments=dict(c.arguments)) for c in tg.calls or []]
    named = {c.name for c in full}
    return full + [ToolCall(name=n) for n in names if n not in named]


class OracleAdapter(_Baseline):
    backend = "oracle"
    needs_media = False
    unprompted = (
        "it answers each target's reference (T1: its tool calls) at the decision point nearest "
        "the target time, inside target time +- tolerance_s"
    )
    options_class = OracleOptions

    def _plan(self, interaction: Interaction, video: VideoRecord) -> dict[float, Target]:
        grid = decision_grid(
            interaction.q, video.duration_s or interaction.q, self.settings.grid.step_s
        )
        tol = float(self.options.tolerance_s)
        plan: dict[float, Target] = {}
        for tg in interaction.targets:
            plan.setdefault(oracle_time(tg, grid, tol), tg)
        return plan

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        _simulate_latency(self.options)
        tg = self._plan(request.interaction, request.video).get(round(request.t, 3))
        if tg is None:
            return AdapterOutput(text=self.settings.silence_token, silent=True, latency_s=0.0)
        if request.interaction.task == "T1":
            names = list(tg.tools or [])
            return AdapterOutput(
                text=_tool_text(names),
                silent=False,
                tool_calls=_oracle_calls(tg, names),
                latency_s=0.0,
            )
        return AdapterOutput(text=tg.reference, silent=False, tool_calls=[], latency_s=0.0)


def _most_frequent(counts: Counter[str], among: set[str] | None) -> str | None:
    """The most frequent name of ``counts`` in ``among`` (``None``: any); ties broken by name so
    the choice is reproducible; ``None`` when there is none."""
    pool = [(n, k) for n, k in counts.items() if among is None or n in among]
    return min(pool, key=lambda kv: (-kv[1], kv[0]))[0] if pool else None


class BlindFireAdapter(_Baseline):
    """Options (model config or ``--set adapter.delay_s=3``): ``delay_s`` (default 3 s, the paper's
    best fixed delay), ``text`` (the fixed sentence for non-T1 tasks)."""

    backend = "blind-fire"
    needs_media = False
    unprompted = (
        "it answers each interaction once, at the first decision point >= q + delay_s, with the "
        "benchmark's most frequent T1 tool offered (T1) or a fixed sentence"
    )
    DEFAULT_TEXT = "Heads up: what you asked about is happening now."
    options_class = BlindFireOptions

    def __init__(self, name: str, config: dict[str, Any], settings: Settings):
        super().__init__(name, config, settings)
        self.delay_s = float(self.options.delay_s)
        self.text = self.options.text if self.options.text is not None else self.DEFAULT_TEXT
        self.tool: str | None = None
        self.counts: Counter[str] = Counter()
        self.env_tools: dict[str, str | None] = {}

    def prepare(self, bench: Benchmark) -> None:
        for it in bench.interactions:
            if it.task == "T1":
                for tg in it.targets:
                    self.counts.update(tg.tools or [])
        catalogue = set(bench.tools)
        self.tool = _most_frequent(self.counts, catalogue) or _most_frequent(self.counts, None)
        if self.tool is None and bench.tools:
            self.tool = next(iter(bench.tools))
        envs = getattr(bench, "environments", None) or {}
        self.env_tools = {e: _most_frequent(self.counts, set(v.tools)) for e, v in envs.items()}

    def describe(self) -> dict[str, Any]:
        out = {"delay_s": self.delay_s, "tool": self.tool, "text": self.text}
        return {**out, "environment_tools": self.env_tools} if self.env_tools else out

    def fires(self, request: DecisionRequest) -> dict[str, Any] | None:
        """The facts (``extra``) of an answer at this decision point, or None to stay silent:
        here the first grid point >= q + ``delay_s``."""
        it = request.interaction
        grid = decision_grid(it.q, request.video.duration_s or it.q, self.settings.grid.step_s)
        due = [g for g in grid if g >= round(it.q + self.delay_s, 3) - 1e-9]
        return {} if due and round(request.t, 3) == due[0] else None

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        """Silent unless :meth:`fires`; then the most frequent T1 tool among those offered
        (else the benchmark's) for T1, else ``text``."""
        _simulate_latency(self.options)
        extra = self.fires(request)
        if extra is None:
            return AdapterOutput(text=self.settings.silence_token, silent=True, latency_s=0.0)
        offered = {t.name for t in request.tools}
        tool = (_most_frequent(self.counts, offered) if offered else None) or self.tool
        if request.interaction.task == "T1" and tool:
            return AdapterOutput(text=_tool_text([tool]), silent=False,
                                 tool_calls=[ToolCall(name=tool)], latency_s=0.0, extra=extra)  # fmt: skip
        return AdapterOutput(
            text=self.text, silent=False, tool_calls=[], latency_s=0.0, extra=extra
        )


class ChangeDetectorAdapter(BlindFireAdapter):
    """The signal-driven control. At decision point t (previous grid point ``t_prev``; for the
    first, q − step) it answers when the causal prefix [0, t] holds an event it did not hold at
    ``t_prev``: a 1 fps frame of grid second k in (t_prev, t] that differs from the frame
    before it by more than ``visual_threshold`` (:func:`~interactscope.media.onsets.frame_change`),
    or one more audio onset in ``audio[0, t]`` than in ``audio[0, t_prev]`` (both prefixes of the
    same waveform, so nothing after t is used). The answer is blind-fire's: the most frequent T1
    tool among those offered (T1), else ``text``. Needs ``audio.mode = native`` for onsets and
    ``frames.cap_policy = recent`` so the last frames are consecutive (its model config sets
    both)."""

    backend = "change-detector"
    needs_media = True
    unprompted = (
        "it answers (as blind-fire) at each decision point whose frames or audio up to t bring "
        "a new visual change point or audio onset; it reads those signals, not a prompt"
    )
    DEFAULT_TEXT = "Something just changed: here is what you asked about."
    options_class = ChangeDetectorOptions

    def __init__(self, name: str, config: dict[str, Any], settings: Settings):
        super().__init__(name, config, settings)
        try:
            self.detector = resolve_detector(self.options.audio_detector)
        except ValueError as exc:
            raise AdapterError(f"{name}: {exc}") from None

    def describe(self) -> dict[str, Any]:
        o = self.options
        return {**super().describe(), "visual_threshold": o.visual_threshold,
                "audio_detector": self.detector, "use_visual": o.use_visual,
                "use_audio": o.use_audio}  # fmt: skip

    def events(self, request: DecisionRequest) -> list[str]:
        """``visual`` and/or ``audio`` when t brings a new event (see the class docstring)."""
        obs, t = request.observation, round(request.t, 3)
        if obs is None:
            return []
        it, step = request.interaction, self.settings.grid.step_s
        grid = decision_grid(it.q, request.video.duration_s or it.q, step)
        before = [g for g in grid if g < t - 1e-9]
        t_prev = before[-1] if before else t - step
        out = []
        if self.options.use_visual and any(
            t_prev < k <= t + 1e-9
            for k in visual_changes(obs.frames, self.options.visual_threshold)
        ):
            out.append("visual")
        if self.options.use_audio and obs.audio is not None and len(obs.audio):
            sr = obs.sample_rate
            kw = {"energy_db": self.options.energy_db}
            now = audio_onsets(obs.audio[: int(round(t * sr))], sr, self.detector, **kw)
            then = audio_onsets(
                obs.audio[: max(0, int(round(t_prev * sr)))], sr, self.detector, **kw
            )
            if len(now) > len(then):
                out.append("audio")
        return out

    def fires(self, request: DecisionRequest) -> dict[str, Any] | None:
        """``{"events": [...]}`` when t brings a new event (:meth:`events`), else None."""
        events = self.events(request)
        return {"events": events} if events else None

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        _simulate_latency(self.options)
        return super().respond(request)
