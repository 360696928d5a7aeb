"""See the prompt before paying for it: the exact chat messages a model would receive at one
decision point, with each attached frame or audio part described (count, times, sizes) instead
of its pixels or samples. Nothing here calls a model.

What the engine receives depends on the adapter, so the caller passes what it knows of it:
``frames_as`` (``image``: one image part per frame; ``video``: one video part, whose odd frame
count the Qwen engines pad with the newest frame; ``video_pairs``: a video part per two frames,
the lone newest one padded so), ``convert`` (an adapter's own rewrite of a
message's parts, e.g. the vLLM adapter's video relabelling) and an
:class:`~interactscope.streaming.protocol.observation.Observer` built with the adapter's
consumer side (the frame size the engine gets). Online Rolling is shown as its turns: turn 1
(the replay 0..t) and a later turn k (only what is new since the step before)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from interactscope.engines.base import Message, Part, as_messages, prompt_dicts
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.protocol.prompts import (
    SPEAK_PROMPT_VERSION,
    build_messages,
    online_turn,
    render_speak,
    render_text,
)
from interactscope.streaming.protocol.requests import interaction_grid, request_at
from interactscope.streaming.schema import Interaction
from interactscope.streaming.settings import Settings

__all__ = [
    "MessagePreview",
    "PartPreview",
    "PromptPreview",
    "format_preview",
    "preview_online",
    "preview_parts",
    "preview_prompt",
    "preview_two_step",
]

Convert = Callable[[list[Part]], list[Part]]
"""An adapter's rewrite of one message's typed content parts before its engine gets them."""


class PartPreview(BaseModel):
    """One content part: ``kind`` (text, image, video, audio); ``text`` for text parts; for
    media the frame times (s), the frame shape (H, W) or the audio samples and rate (Hz).
    ``sent_pts_s`` (video parts with an odd frame count): the frame times the engine sends, the
    newest frame repeated (Qwen's temporal patch is 2 frames)."""

    kind: str
    text: str | None = None  # shape below is (H, W) in pixels
    pts_s: list[float] | None = None
    shape: list[int] | None = None
    n_samples: int | None = None
    sample_rate: int | None = None
    attachment: bool = False
    sent_pts_s: list[float] | None = None


class MessagePreview(BaseModel):
    role: str
    parts: list[PartPreview]


class PromptPreview(BaseModel):
    """The messages of one decision point and what they carry. Online Rolling: ``turn`` is the
    step (1 = the replay), ``since_s`` the previous step's time (turn > 1), and ``messages`` the
    messages that step appends to the session's conversation. Two-step decision
    (``adapter.decision=two_step``): ``step`` 1 is the speak-now question (``prompt_version``'s
    text prompt plus the yes/no question of template ``speak_prompt``, e.g. ``speak-v1``),
    ``step`` 2 the answer prompt, generated only when p(yes) >= ``speak_threshold``."""

    interaction_id: str
    t: float
    prompt_version: str
    text_only: bool
    tools: list[str]
    messages: list[MessagePreview]
    protocol: str = "offline"
    turn: int | None = None
    since_s: float | None = None
    step: int | None = None
    speak_threshold: float | None = None
    speak_prompt: str | None = None


def _part(p: Any) -> PartPreview:
    if isinstance(p, str):
        return PartPreview(kind="text", text=p)
    kind = p.get("type", "text")
    if kind == "text":
        return PartPreview(kind="text", text=p.get("text", ""))
    if kind == "image":
        return PartPreview(
            kind="image",
            pts_s=[float(p.get("pts_s", 0.0))],
            shape=list(p["image"].shape[:2]),
            attachment=bool(p.get("attachment")),
        )
    if kind == "video":
        frames = p.get("video") or []
        pts = [float(x) for x in p.get("pts_s", [])]
        return PartPreview(
            kind="video",
            pts_s=pts,
            shape=list(frames[0].shape[:2]) if len(frames) else None,
            sent_pts_s=pts + pts[-1:] if len(pts) % 2 else None,
        )
    if kind == "audio":
        return PartPreview(
            kind="audio",
            n_samples=int(len(p["audio"])),
            sample_rate=int(p.get("sampling_rate", 16000)),
        )
    return PartPreview(kind=str(kind))


def preview_parts(messages: Sequence[Message | dict[str, Any]]) -> list[MessagePreview]:
    """Chat messages, typed (:func:`build_prompt`) or in their dict form (string or part-list
    content, as :func:`build_messages` gives them) as previews; what the engine-spy tests
    compare."""
    out = []
    for m in prompt_dicts(messages):
        content = m["content"]
        parts = [content] if isinstance(content, str) else list(content)
        out.append(MessagePreview(role=m["role"], parts=[_part(p) for p in parts]))
    return out


def _converted(msgs: list[dict[str, Any]], convert: Convert | None) -> list[dict[str, Any]]:
    """``convert`` (an adapter's rewrite of typed parts) applied to each part-list message."""
    if convert is None:
        return msgs
    return [
        m if isinstance(m["content"], str)
        else {**m, "content": [p.prompt_dict() for p in convert(as_messages([m])[0].parts())]}
        for m in msgs
    ]  # fmt: skip


def preview_prompt(
    bench: Benchmark,
    interaction: Interaction,
    t: float,
    settings: Settings,
    *,
    observer: Any | None,
    text_only: bool,
    history: Sequence[Any] = (),
    frames_as: str = "image",
    convert: Convert | None = None,
) -> PromptPreview:
    """The Offline Probing messages of ``interaction`` at ``t`` (s) under ``settings``.

    ``observer`` is the video's :class:`~interactscope.streaming.protocol.observation.Observer`
    (``None``: no media, as ``scene = none``; build it with the adapter's consumer side to get
    the engine's frame size); ``text_only`` renders for a model that sees no pixels (frames
    omitted and counted, audio omitted, transcript kept), as the cascade backend does;
    ``frames_as`` and ``convert``: as the adapter builds its messages (module docstring).

    Raises:
        MediaError, ObservationError, AsrError: as :meth:`Observer.observe`.
    """
    obs = observer.observe(t, interaction) if observer is not None else None
    req = request_at(bench, interaction, t, settings, observation=obs, history=history)
    msgs = render_text(req) if text_only else build_messages(req, frames_as=frames_as)
    return PromptPreview(
        interaction_id=interaction.id,
        t=t,
        prompt_version=settings.prompt_version,
        text_only=text_only,
        tools=[tool.name for tool in req.tools],
        messages=preview_parts(_converted(msgs, convert)),
    )


def preview_two_step(
    bench: Benchmark,
    interaction: Interaction,
    t: float,
    settings: Settings,
    *,
    observer: Any | None,
    speak_threshold: float,
) -> list[PromptPreview]:
    """The two calls of the two-step decision at ``t`` (s), text-only as the cascade adapter
    renders them: step 1, :func:`render_speak` (the text prompt plus the yes/no question,
    read as next-token probabilities), and step 2, the answer prompt, sent only when
    p(yes) >= ``speak_threshold`` (docs/protocol.md, "Two-step decision").

    Raises:
        MediaError, ObservationError, AsrError: as :meth:`Observer.observe`."""
    obs = observer.observe(t, interaction) if observer is not None else None
    req = request_at(bench, interaction, t, settings, observation=obs)
    common = dict(
        interaction_id=interaction.id,
        t=t,
        prompt_version=settings.prompt_version,
        text_only=True,
        tools=[tool.name for tool in req.tools],
        speak_threshold=speak_threshold,
    )
    speak = render_speak(req, SPEAK_PROMPT_VERSION)  # the cascade adapter's template
    return [
        PromptPreview(
            **common, messages=preview_parts(speak), step=1, speak_prompt=SPEAK_PROMPT_VERSION
        ),
        PromptPreview(**common, messages=preview_parts(render_text(req)), step=2),
    ]


def preview_online(
    bench: Any,
    interaction: Interaction,
    t: float | None,
    settings: Settings,
    *,
    observer: Any | None,
    text_only: bool = False,
    frames_as: str = "image",
) -> list[PromptPreview]:
    """The Online Rolling turns that matter at ``t`` (s): turn 1 at the first decision point
    (system message and the replay of the stream 0..t), then, when ``t`` is later (default:
    the second decision point), turn k at ``t``: only what is new since the decision point
    before it (``since_s``). Between the turns the session holds the model's own answers as
    assistant messages, which a preview cannot know. Messages as
    :func:`~interactscope.streaming.protocol.prompts.online_turn` builds them for a session.

    Raises:
        MediaError, ObservationError, AsrError: as :meth:`Observer.observe`.
    """
    grid = interaction_grid(bench, interaction, settings)
    if t is None:
        t = grid[1] if len(grid) > 1 else grid[0]
    points = [(1, grid[0], None)]
    before = [x for x in grid if x < t - 1e-9]
    if before and t > grid[0] + 1e-9:
        points.append((len(before) + 1, t, before[-1]))
    out = []
    for turn, at, prev in points:
        obs = observer.observe(at, interaction) if observer is not None else None
        req = request_at(bench, interaction, at, settings, observation=obs)
        previous = None
        if prev is not None and observer is not None:
            previous = observer.observe(prev, interaction)
        msgs = online_turn(
            req, previous, text_only=text_only, frames_as=frames_as, first=prev is None
        )
        out.append(
            PromptPreview(
                interaction_id=interaction.id,
                t=at,
                prompt_version=settings.prompt_version,
                text_only=text_only,
                tools=[tool.name for tool in req.tools],
                messages=preview_parts(msgs),
                protocol="online",
                turn=turn,
                since_s=prev,
            )
        )
    return out


def _describe(p: PartPreview) -> str:
    if p.kind == "text":
        return p.text or ""
    if p.kind == "audio":
        secs = (p.n_samples or 0) / (p.sample_rate or 1)
        return f"[audio part: {p.n_samples} samples at {p.sample_rate} Hz = {secs:.3f} s]"
    what = "attachment image" if p.attachment else p.kind
    times = ", ".join(f"{x:g}" for x in (p.pts_s or []))
    # shape is (H, W); printed as width x height, as `observe` reports frame_size
    shape = f"{p.shape[1]}x{p.shape[0]}" if p.shape and len(p.shape) == 2 else "?"
    n = len(p.pts_s or [])
    sent = ""
    if p.sent_pts_s:
        sent = (
            f"; sent as {len(p.sent_pts_s)}, the newest ({p.sent_pts_s[-1]:g} s) repeated "
            "(Qwen's temporal patch is 2 frames)"
        )
    return f"[{what} part: {n} frame(s) at t = {times} s, {shape} px each{sent}]"


def format_preview(pv: PromptPreview) -> str:
    """Plain text: a header line, then each message's role and its parts in order."""
    turn = ""
    if pv.turn == 1:
        turn = ", Online Rolling turn 1 (the session's first step: the stream replayed)"
    elif pv.turn is not None:
        turn = (
            f", Online Rolling turn {pv.turn} (appended after the model's earlier answers: "
            f"what is new since {pv.since_s:g} s)"
        )
    if pv.step == 1:
        # step 1's messages are the prompt's plus the yes/no question of its own template
        turn = (
            f"{f' + {pv.speak_prompt}' if pv.speak_prompt else ''}, two-step decision, step 1: "
            "the speak-now question (p(yes) from next-token probabilities)"
        )
    elif pv.step is not None:
        turn = (
            f", two-step decision, step 2: the answer, only when p(yes) >= {pv.speak_threshold:g}"
        )
    head = (
        f"# {pv.interaction_id} at t = {pv.t:g} s, prompt {pv.prompt_version}{turn}"
        f"{', text-only rendering' if pv.text_only else ''}; tools offered: "
        f"{', '.join(pv.tools) or 'none'}"
    )
    lines = [head]
    for m in pv.messages:
        lines.append(f"--- {m.role} ---")
        lines += [_describe(p) for p in m.parts]
    return "\n".join(lines)
