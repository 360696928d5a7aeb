"""Typed data of a viewer page: what the loaders produce and the template's JavaScript reads.

Every time is in seconds on the media file's clock. The page embeds :class:`PageData` as JSON;
nothing else crosses from Python into the HTML.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from interactscope.core.text import one_decimal
from interactscope.stats import B_DEFAULT, SEED_DEFAULT


def isolate(text: str) -> str:
    """``text`` between FSI and PDI (U+2068 … U+2069): a bidi isolate, so a user string ending
    in U+202E cannot reverse the page text after it (the heading; the scripts use ``<bdi>``)."""
    return f"\u2068{text}\u2069"


MarkClass = Literal[
    "hit", "premature", "wrong", "late", "unjudged", "unmatched", "ignored", "suppressed",
    "error", "unscored", "infra_error",
]  # fmt: skip
"""What allocation/matching made of one record: the outcome of the target whose group it joined
(T1–T7) or ``hit`` when matched (T8); ``unmatched`` for a response that counted for nothing;
``ignored`` for a response before q; ``suppressed``/``error`` records; ``unscored`` when the run
has no scores; ``infra_error`` for a response whose target the infra rule left out of the score."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ViewSettings(_Model):
    """Settings of ``interactscope view`` (recorded in the page's footer).

    Attributes:
        max_thumbnails: distinct JPEG thumbnails embedded in the whole page (0 = none); decision
            points past the cap list their frame times only.
        thumbs_per_point: thumbnails shown per decision point (evenly spaced over the frames the
            model saw, the newest always kept); every frame time is listed anyway.
        thumb_px: long side of a thumbnail, pixels.
        jpeg_quality: JPEG quality of the thumbnails (1–95).
        lazy_threshold: with more interactions than this, timelines are drawn when their section
            scrolls into view instead of all at once.
        resamples: cluster-bootstrap resamples B for the summary intervals (default: the
            stats default B, as ``compare`` and ``report``).
        seed: bootstrap seed (default: the stats default).
        transcripts: show the transcript heard so far (runs with ``audio.mode = asr``).
    """

    max_thumbnails: int = Field(400, ge=0)
    thumbs_per_point: int = Field(8, ge=1)
    thumb_px: int = Field(160, ge=16, le=1024)
    jpeg_quality: int = Field(70, ge=1, le=95)
    lazy_threshold: int = Field(200, ge=0)
    resamples: int = Field(B_DEFAULT, ge=100)  # the same B and seed as score/compare/report
    seed: int = SEED_DEFAULT
    transcripts: bool = True


class Mark(_Model):
    """One non-silent, suppressed or error record on a timeline."""

    t: float
    cls: MarkClass
    text: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    target: str | None = None
    matched: bool = False
    verdict: str = ""
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    parse_error: str | None = None


class FramesAt(_Model):
    """What the model saw at one decision point: ``times`` of every frame passed (s), ``thumbs``
    keys into :attr:`PageData.thumbs` for the shown subset (``None`` where not embedded)."""

    times: list[float] = Field(default_factory=list)
    thumbs: list[str | None] = Field(default_factory=list)
    transcript: str | None = None
    note: str = ""


class EnvTarget(_Model):
    """One target's environment columns: ``time_tool`` (the paper's joint time–tool hit),
    ``time_call`` (with parameters; ``None`` without expected calls or when ``infra_error``)."""

    target_id: str
    outcome: str = ""
    time_tool: bool | None = None
    time_call: bool | None = None


class EnvInteraction(_Model):
    """One run's environment columns of one environment interaction (counts ``(hits, of)``;
    ``state_correct`` ``None`` with ``state_reason`` when the state was not judged)."""

    environment: str
    time_tool: tuple[int, int]
    time_call: tuple[int, int]
    state_correct: bool | None = None
    state_reason: str | None = None
    action_precision: tuple[int, int]
    infra_error_targets: int = 0
    targets: list[EnvTarget] = Field(default_factory=list)


class RunTimeline(_Model):
    """One run's view of one interaction (``scored``: the run has score files; ``responses``:
    its non-silent, non-error records at or after q; ``environment``: the environment columns
    of an environment interaction of a scored run)."""

    present: bool = True
    scored: bool = False
    responses: int = 0
    outcomes: dict[str, str] = Field(default_factory=dict)
    regions: dict[str, tuple[float, float | None]] = Field(default_factory=dict)
    marks: list[Mark] = Field(default_factory=list)
    grid: list[float] = Field(default_factory=list)
    frames: dict[str, FramesAt] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    environment: EnvInteraction | None = None


class TargetInfo(_Model):
    id: str
    reference: str
    tools: list[str] | None = None
    anchor_s: float
    window_s: tuple[float, float]
    interval: bool = False
    evidence: str = "visual"


class InteractionPage(_Model):
    """One interaction section: the request, its targets and one timeline per run."""

    id: str
    task: str
    video_id: str
    q: float
    end_s: float
    query: str
    targets: list[TargetInfo]
    runs: list[RunTimeline]
    gained: list[str] = Field(default_factory=list)
    lost: list[str] = Field(default_factory=list)


class ScoreCell(_Model):
    """A metric in percent (or responses/min for volume) with its 95 % interval."""

    metric: str
    estimate: float | None
    low: float | None = None
    high: float | None = None
    counts: str = ""
    note: str = ""

    @computed_field  # the page prints these, so it rounds as the leaderboard does
    @property
    def text(self) -> str:
        """The estimate with one decimal (:func:`~interactscope.core.text.one_decimal`)."""
        return one_decimal(self.estimate)

    @computed_field
    @property
    def interval(self) -> str:
        """``"[low, high]"`` with one decimal each, "" without an interval."""
        if self.low is None:
            return ""
        return f"[{one_decimal(self.low)}, {one_decimal(self.high)}]"


class RunSummary(_Model):
    label: str
    path: str
    model: str
    protocol: str
    judge: str = ""
    approximation: str | None = None
    scored: bool = False
    interactions: str = ""
    """The interactions the run covers, as the leaderboard says it: "4 of 11 interactions"."""
    settings: dict[str, Any] = Field(default_factory=dict)
    health: dict[str, Any] = Field(default_factory=dict)
    scores: list[ScoreCell] = Field(default_factory=list)
    environment: list[ScoreCell] = Field(default_factory=list)
    """The environment columns (``view.environment.ENV_METRICS``), empty without them."""
    warnings: list[str] = Field(default_factory=list)


class PageData(_Model):
    """Everything a page shows; ``page`` names the template (``streaming``; ``ego`` later)."""

    page: str = "streaming"
    title: str
    runs: list[RunSummary]
    interactions: list[InteractionPage]
    thumbs: dict[str, str] = Field(default_factory=dict)
    gained: list[str] = Field(default_factory=list)
    lost: list[str] = Field(default_factory=list)
    lazy: bool = False
    settings: ViewSettings = Field(default_factory=ViewSettings)
    generated_by: str = "interactscope view"
