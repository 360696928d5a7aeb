"""See the prompt before paying for it: the exact chat messages a model would receive at one
decision point, with each attached frame or audio part described (count, times, sizes) instead
of its pixels or samples. Nothing here calls a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from interactscope.streaming.bench import Benchmark
from interactscope.streaming.protocol.prompts import build_messages, render_text
from interactscope.streaming.protocol.requests import request_at
from interactscope.streaming.schema import Interaction
from interactscope.streaming.settings import Settings

__all__ = ["PartPreview", "MessagePreview", "PromptPreview", "preview_prompt", "format_preview"]


class PartPreview(BaseModel):
    """One content part: ``kind`` (text, image, video, audio); ``text`` for text parts; for
    media the frame times (s), the frame shape (H, W) or the audio samples and rate (Hz)."""

    kind: str
    text: str | None = None  # shape below is (H, W) in pixels
    pts_s: list[float] | None = None
    shape: list[int] | None = None
    n_samples: int | None = None
    sample_rate: int | None = None
    attachment: bool = False


class MessagePreview(BaseModel):
    role: str
    parts: list[PartPreview]


class PromptPreview(BaseModel):
    """The messages of one decision point and what they carry."""

    interaction_id: str
    t: float
    prompt_version: str
    text_only: bool
    tools: list[str]
    messages: list[MessagePreview]


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
        return PartPreview(
            kind="video",
            pts_s=[float(x) for x in p.get("pts_s", [])],
            shape=list(frames[0].shape[:2]) if len(frames) else None,
        )
    if kind == "audio":
        return PartPreview(
            kind="audio",
            n_samples=int(len(p["audio"])),
            sample_rate=int(p.get("sampling_rate", 16000)),
        )
    return PartPreview(kind=str(kind))


def preview_prompt(
    bench: Benchmark,
    interaction: Interaction,
    t: float,
    settings: Settings,
    *,
    observer: Any | None,
    text_only: bool,
    history: Sequence[Any] = (),
) -> PromptPreview:
    """The Offline Probing messages of ``interaction`` at ``t`` (s) under ``settings``.

    ``observer`` is the video's :class:`~interactscope.streaming.protocol.observation.Observer` (``None``:
    no media, as ``scene = none``); ``text_only`` renders for a model that sees no pixels (frames
    omitted and counted, audio omitted, transcript kept), as the cascade backend does.

    Raises:
        MediaError, ObservationError, AsrError: as :meth:`Observer.observe`.
    """
    obs = observer.observe(t, interaction) if observer is not None else None
    req = request_at(bench, interaction, t, settings, observation=obs, history=history)
    msgs = render_text(req) if text_only else build_messages(req)
    out = []
    for m in msgs:
        content = m["content"]
        parts = [content] if isinstance(content, str) else list(content)
        out.append(MessagePreview(role=m["role"], parts=[_part(p) for p in parts]))
    return PromptPreview(
        interaction_id=interaction.id,
        t=t,
        prompt_version=settings.prompt_version,
        text_only=text_only,
        tools=[tool.name for tool in req.tools],
        messages=out,
    )


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
    return f"[{what} part: {n} frame(s) at t = {times} s, {shape} px each]"


def format_preview(pv: PromptPreview) -> str:
    """Plain text: a header line, then each message's role and its parts in order."""
    head = (
        f"# {pv.interaction_id} at t = {pv.t:g} s, prompt {pv.prompt_version}"
        f"{', text-only rendering' if pv.text_only else ''}; tools offered: "
        f"{', '.join(pv.tools) or 'none'}"
    )
    lines = [head]
    for m in pv.messages:
        lines.append(f"--- {m.role} ---")
        lines += [_describe(p) for p in m.parts]
    return "\n".join(lines)
