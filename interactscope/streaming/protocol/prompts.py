"""Versioned prompt templates (docs/protocol.md, collection): chat messages for one decision request.

:func:`build_messages` turns a :class:`~interactscope.streaming.protocol.types.DecisionRequest` into chat
messages ``[{"role": "system", "content": [parts]}, {"role": "user", "content": [parts]}]``;
:func:`build_prompt` (and :func:`online_prompt` for Online Rolling) give the same messages typed,
as :class:`~interactscope.engines.base.Message` values with ``TextPart`` / ``ImagePart`` /
``VideoPart`` / ``AudioPart`` content, which is how they are built; the dicts are their
serialized form (:func:`~interactscope.engines.base.prompt_dicts`, read back by
``as_messages``). Parts are backend-neutral and carry our own causal arrays (never file paths):

- ``{"type": "text", "text": str}``
- ``{"type": "image", "image": np.ndarray (H, W, 3) uint8 RGB, "pts_s": float}`` — a stream
  frame (``pts_s`` = its presentation time, s) or an image attachment (``"attachment": True``,
  ``pts_s`` = q);
- ``{"type": "audio", "audio": np.ndarray (n,) float32 mono, "sampling_rate": int}`` — the stream
  waveform [0, t] (``"role": "stream"``) or its new part in Online Rolling;
- with ``frames_as="video"`` the stream frames are one part instead:
  ``{"type": "video", "video": [(H, W, 3) uint8, ...], "pts_s": [float, ...]}``;
- with ``frames_as="video_pairs"`` (since issue 29) they are consecutive video parts of two
  frames each (picks 0+1, 2+3, ...: one Qwen temporal patch; an odd newest pick is a 1-frame
  part, which the Qwen engines pad to 2), each after a ``[video: frames at A, B]`` label
  (:data:`FRAME_LAYOUTS`). Earlier items are then unchanged from t to t + 1 (a prefix cache
  keeps them) at about one video's tokens. Online Rolling sends them as ``video`` does
  (:func:`online_prompt`).

The wording lives in :data:`TEMPLATES` and the layout in :data:`LAYOUTS`, both keyed by version
(``settings.prompt_version``). A version is never edited once runs were made with it: add a new
one instead, so old runs can be reproduced. Layouts of one Offline Probing request:

- ``v1`` (``classic``, the default of runs made before issue 25): system (role, silence token, tool catalogue and call
  format) → user: request (+ attachments) → "the stream so far (0 s to t)" → cap note → frames
  with their times → audio or transcript → the model's own last ``history.n`` non-silent
  responses → the current stream time and the ask. Consecutive prompts part at the header.
- ``v2`` (``prefix``, the default of new runs): system → request (+ image attachments) → a header without t → frames in
  time order → everything that changes with t: cap note, video label, audio [0, t],
  transcripts, history, time and ask. Within the frame cap, prompt t is prompt t + 1 up to its
  last frame, so prefix caching (vLLM, servers) reuses every earlier frame; beyond the cap use
  ``frames.cap_policy=stride`` to keep earlier picks.
- ``v3`` (``timeline``, since issue 29): v2's wording and order, but the stream's media are on one
  timeline: native audio [0, t] as consecutive segments of ``audio.segment_s`` seconds
  (:func:`audio_segments`), each labelled ``[audio from A to B]`` and placed after the frames up
  to its end (a frame at B comes before the segment ending at B), the last, partial segment after
  the newest frame. What is new at t + 1 (a frame, the longer tail) then comes at the end, so a
  prefix cache keeps every earlier frame and every complete segment, within the frame cap and
  past it (with ``cap_policy=stride``). ``audio.segment_s`` unset: one segment, [0, t].

:func:`build_messages` with ``text_only=True`` (or :func:`render_text`) renders for text-only
models: frames are omitted (their count is stated), audio is omitted, the transcript is included.

Online Rolling (:func:`online_turn`) builds the user turn of one step: the whole observation 0..t
at the first step, then only what is new since the previous step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from interactscope.engines.base import (
    AudioPart,
    ImagePart,
    Message,
    Part,
    TextPart,
    VideoPart,
    prompt_dicts,
)
from interactscope.streaming.protocol.tools import fmt_results

if TYPE_CHECKING:  # pragma: no cover
    from interactscope.streaming.protocol.observation import Observation
    from interactscope.streaming.protocol.types import DecisionRequest
    from interactscope.streaming.schema import ResponseRecord, ToolSpec

__all__ = [
    "FRAME_LAYOUTS",
    "LAYOUTS",
    "ONLINE_RESULTS_HEADER",
    "PROMPT_VERSION",
    "SPEAK_PROMPTS",
    "SPEAK_PROMPT_VERSION",
    "TEMPLATES",
    "PromptTemplate",
    "audio_segments",
    "build_messages",
    "build_prompt",
    "fmt_time",
    "get_template",
    "layout_of",
    "messages_to_text",
    "online_prompt",
    "online_turn",
    "render_speak",
    "render_text",
    "system_text",
]

PROMPT_VERSION = "v2"
"""The default template version (``settings.prompt_version``)."""


@dataclass(frozen=True)
class PromptTemplate:
    """The wording of one prompt version. ``{name}`` fields are filled by :func:`str.format`
    (``tools_format`` is used verbatim)."""

    role: str
    silence: str
    tools_header: str
    tool_line: str
    tools_format: str
    no_scene: str
    text_only_note: str
    request: str
    request_spoken: str
    request_empty: str
    attachment_image: str
    attachment_audio_native: str
    attachment_audio_asr: str
    stream_header: str
    stream_replay_header: str
    stream_new_header: str
    frame: str
    video: str
    frames_none: str
    frames_capped: str
    frames_omitted: str
    audio: str
    audio_new: str
    audio_missing: str
    transcript: str
    transcript_empty: str
    transcript_new: str
    history_header: str
    history_line: str
    now: str
    audio_segment: str = ""  # the timeline layout's segment label (v3 on)
    video_pair: str = ""  # frames_as video_pairs: one item's label (since issue 29)


TEMPLATES: dict[str, PromptTemplate] = {
    "v1": PromptTemplate(
        role=(
            "You are an always-on assistant inside the user's smart glasses. You watch a live "
            "first-person video stream and hear its audio as it happens. You only know what has "
            "been shown to you up to the current stream time; you cannot see the future. The "
            "user has made a request. At each moment decide whether to speak now: respond only "
            "when the request calls for it at this moment (the event has just happened, a risk "
            "is present, a step is done, a question can be answered), briefly, in one or two "
            "sentences, and do not repeat yourself."
        ),
        silence=(
            "If you should not respond at this moment, answer with exactly {token} and nothing "
            "else."
        ),
        tools_header="You can call these tools:",
        tool_line="- {name}: {description} Parameters (JSON Schema): {parameters}",
        tools_format=(
            "To call a tool, answer with one JSON object in a ```json code block:\n"
            '```json\n{"name": "<tool name>", "arguments": {...}}\n```\n'
            "Call a tool only at the moment the request calls for it."
        ),
        no_scene="No camera or microphone input is available: you get the request only.",
        text_only_note=(
            "You cannot see the video: you get the request and a transcript of the speech heard "
            "so far."
        ),
        request="User request (made at {q}): {text}",
        request_spoken="User request (spoken at {q}; it is in the audio from then on).",
        request_empty="User request (made at {q}): (see the attachments)",
        attachment_image="Image attached to the request:",
        attachment_audio_native="Audio attached to the request: it plays in the stream from {q}.",
        attachment_audio_asr="Audio attached to the request (transcript so far): {text}",
        stream_header="The stream so far (0 s to {t}):",
        stream_replay_header="The stream so far (0 s to {t}), replayed:",
        stream_new_header="New in the stream since {prev} (up to {t}):",
        frame="[frame at {pts}]",
        video="[video: {n} frames, at {times}]",
        video_pair="[video: frames at {times}]",
        frames_none="(no video frames yet)",
        frames_capped="({n} of the {total} frames so far, one per second)",
        frames_omitted="({n} video frames omitted: this model cannot see them)",
        audio="Audio from 0 s to {t}:",
        audio_new="Audio from {prev} to {t}:",
        audio_missing="(the stream has no audio)",
        transcript="Speech heard so far (automatic transcript): {text}",
        transcript_empty="Speech heard so far (automatic transcript): (none)",
        transcript_new="Speech heard since {prev} (automatic transcript): {text}",
        history_header="Your previous responses in this stream:",
        history_line="[{t}] {text}",
        now=(
            "Current stream time: t = {t}. Respond now if the request calls for it at this "
            "moment, otherwise answer exactly {token}."
        ),
    ),
}


TEMPLATES["v2"] = replace(
    TEMPLATES["v1"],
    stream_header="The stream so far, in time order (one frame per second):",
    stream_replay_header="The stream so far, in time order (one frame per second), replayed:",
    video="[the video above: {n} frames, at {times}]",
    frames_capped="(the frames above are {n} of the {total} frames so far, one per second)",
)

TEMPLATES["v3"] = replace(
    TEMPLATES["v2"],
    stream_header="The stream so far, in time order (one frame per second, the audio in parts):",
    stream_replay_header=(
        "The stream so far, in time order (one frame per second, the audio in parts), replayed:"
    ),
    audio_segment="[audio from {start} to {end}]",
)

FRAME_LAYOUTS: dict[str, str] = {
    "image": "one image part per frame, each after its [frame at X] label",
    "video": "the frames as one video part (v1: label before it; v2+: label after the media)",
    "video_pairs": (
        "consecutive 2-frame video parts (picks 0+1, 2+3, ...; an odd newest pick alone), "
        "each after its [video: frames at A, B] label; v3 places each at its last frame's time"
    ),
}
"""``frames_as`` -> how the stream frames are sent (the adapter's ``frames_as`` key)."""

LAYOUTS: dict[str, str] = {"v1": "classic", "v2": "prefix", "v3": "timeline"}
"""Version -> layout. ``classic``: the stream header names t and precedes the media, the cap
note precedes the frames, audio and transcript follow them. ``prefix``: everything that changes
between decision points (cap note, video label, audio, transcripts, history, time) comes after
the last frame, so consecutive prompts share system, request and every earlier frame.
``timeline``: ``prefix`` with the native audio as consecutive segments between the frames, in
time order, the partial last segment after the newest frame (:func:`audio_segments`), so the
prompts also share every complete segment."""


def layout_of(version: str | None = None) -> str:
    """The layout (``classic`` | ``prefix``) of ``version`` (default :data:`PROMPT_VERSION`).

    Raises:
        KeyError: unknown version.
    """
    get_template(version)
    return LAYOUTS.get(version or PROMPT_VERSION, "classic")


def get_template(version: str | None = None) -> PromptTemplate:
    """The template of ``version`` (default :data:`PROMPT_VERSION`).

    Raises:
        KeyError: unknown version (the message lists the known ones).
    """
    v = version or PROMPT_VERSION
    try:
        return TEMPLATES[v]
    except KeyError:
        raise KeyError(f"unknown prompt_version {v!r}; known: {sorted(TEMPLATES)}") from None


def fmt_time(t: float) -> str:
    """Stream time as the prompts write it: ``12.0 s``, ``3.25 s`` (at most 3 decimals)."""
    s = f"{float(t):.3f}".rstrip("0")
    if s.endswith("."):
        s += "0"
    return f"{s} s"


def _text(s: str) -> TextPart:
    return TextPart(text=s)


def audio_segments(
    n_samples: int, sample_rate: int, segment_s: float | None
) -> list[tuple[int, int]]:
    """Sample bounds ``[(start, end), ...]`` of the stream audio [0, t] (``n_samples`` samples at
    ``sample_rate`` Hz) cut into consecutive segments of ``round(segment_s * sample_rate)``
    samples: together exactly ``[0, n_samples)`` (no sample lost or repeated), every segment full
    but the last, which holds the remainder (full when ``n_samples`` is a multiple). ``None``: one
    segment. No samples: no segment. E.g. 4.5 s at 16 kHz in 2 s segments: ``[(0, 32000),
    (32000, 64000), (64000, 72000)]``.

    Raises:
        ValueError: ``segment_s`` gives fewer than one sample.
    """
    if n_samples <= 0:
        return []
    if segment_s is None:
        return [(0, int(n_samples))]
    step = round(float(segment_s) * int(sample_rate))
    if step < 1:
        raise ValueError(f"audio.segment_s = {segment_s} is under one sample at {sample_rate} Hz")
    return [(a, min(a + step, int(n_samples))) for a in range(0, int(n_samples), step)]


def _timeline_parts(
    obs: Observation,
    tp: PromptTemplate,
    frames_as: str,
    tail: list[Part] | None,
    segment_s: float | None,
) -> list[Part]:
    """The timeline layout's media: frames (or the one video, first) and the audio segments of
    :func:`audio_segments` in time order, a segment after every frame up to its end, the last
    segment after the newest frame.

    ``video_pairs``: each 2-frame item at its last frame's time, a segment after the items
    ending by its end; at equal times a pair first but a lone newest frame (an odd count) after
    the segment, and a full last segment is placed by its end like the others. So the segment
    ending at B stays where it is when the lone item (B) becomes the pair (B, B + 1) at the next
    point (B + 1 > B), instead of moving from after it to before it."""
    sr = int(obs.sample_rate)
    audio = obs.audio if obs.audio is not None else []

    def segment(a: int, b: int) -> list[Part]:
        label = tp.audio_segment.format(start=fmt_time(a / sr), end=fmt_time(b / sr))
        return [_text(label), AudioPart(audio=audio[a:b], sample_rate=sr, stream=True)]

    bounds = audio_segments(len(audio), sr, segment_s)
    last = segment(*bounds[-1]) if bounds else []
    if frames_as == "video":
        media = _frame_parts(obs.frames, tp, False, "video", tail)
        return media + [p for a, b in bounds[:-1] for p in segment(a, b)] + last
    if frames_as == "video_pairs":
        step = None if segment_s is None else round(float(segment_s) * sr)
        if bounds and step is not None and bounds[-1][1] - bounds[-1][0] == step:
            bounds, last = bounds + [(0, 0)], []  # a full last segment: placed by its end
        timed = [(float(g[-1].pts_s), 0 if len(g) == 2 else 2, _pair_parts(g, tp))
                 for g in _pairs(obs.frames)]  # fmt: skip
    else:
        timed = [(float(f.pts_s), 0, _frame_parts([f], tp, False)) for f in obs.frames]
    timed += [(b / sr, 1, segment(a, b)) for a, b in bounds[:-1]]
    timed.sort(key=lambda x: x[:2])  # at equal times the frame (a pair) first, a lone one last
    return [p for _, _, ps in timed for p in ps] + last


def system_text(
    tools: Sequence[ToolSpec] = (),
    silence_token: str = "<SILENT>",
    version: str | None = None,
    *,
    scene: str = "full",
    text_only: bool = False,
) -> str:
    """The system prompt: role, silence token, (T1) the tool catalogue and call format, and a
    note when the model gets no scene or no pixels."""
    tp = get_template(version)
    lines = [tp.role, tp.silence.format(token=silence_token)]
    if scene == "none":
        lines.append(tp.no_scene)
    elif text_only:
        lines.append(tp.text_only_note)
    if tools:
        lines.append(tp.tools_header)
        for tool in tools:
            lines.append(
                tp.tool_line.format(
                    name=tool.name,
                    description=(tool.description or "").strip(),
                    parameters=json.dumps(tool.parameters, sort_keys=True, ensure_ascii=False),
                )
            )
        lines.append(tp.tools_format)
    return "\n".join(lines)


def _request_parts(
    request: DecisionRequest,
    obs: Observation | None,
    tp: PromptTemplate,
    text_only: bool,
    tail: list[Part] | None = None,
) -> list[Part]:
    """The request and its attachments; with ``tail`` (prefix layout) what changes with t (an
    attachment's transcript so far) is appended there instead."""
    q = request.interaction.query
    qs = fmt_time(q.time_s)
    text = (q.text or "").strip()
    has_audio_att = any(a.kind == "audio" for a in q.attachments)
    if text:
        head = tp.request.format(q=qs, text=text)
    elif has_audio_att:
        head = tp.request_spoken.format(q=qs)
    else:
        head = tp.request_empty.format(q=qs)
    parts = [_text(head)]
    if obs is None:
        return parts
    for att in obs.attachments:
        if att.kind == "image" and att.image is not None:
            if text_only:
                parts.append(_text(tp.frames_omitted.format(n=1)))
            else:
                parts.append(_text(tp.attachment_image))
                parts.append(ImagePart(image=att.image, pts_s=q.time_s, attachment=True))
        elif att.kind == "audio":
            if att.transcript is not None:
                text = tp.attachment_audio_asr.format(text=att.transcript or "(none)")
                (parts if tail is None else tail).append(_text(text))
            elif obs.audio is not None and not text_only:
                parts.append(_text(tp.attachment_audio_native.format(q=qs)))
    return parts


def _frame_parts(
    frames: Sequence[Any],
    tp: PromptTemplate,
    text_only: bool,
    frames_as: str = "image",
    tail: list[Part] | None = None,
) -> list[Part]:
    """Frame parts in time order; with ``tail`` (prefix layout) the labels that change with the
    frame count (omitted-frames note, video label) go there, after the media."""
    late: list[Part] = [] if tail is None else tail
    if text_only:
        if frames:
            late.append(_text(tp.frames_omitted.format(n=len(frames))))
        return late if tail is None else []
    if frames_as == "video":
        if not frames:
            return []
        times = ", ".join(fmt_time(f.pts_s) for f in frames)
        late.append(_text(tp.video.format(n=len(frames), times=times)))
        video = VideoPart(frames=[f.image for f in frames], pts_s=[float(f.pts_s) for f in frames])
        return late + [video] if tail is None else [video]
    if frames_as == "video_pairs":
        return [p for g in _pairs(frames) for p in _pair_parts(g, tp)]
    parts: list[Part] = []
    for f in frames:
        parts.append(_text(tp.frame.format(pts=fmt_time(f.pts_s))))
        parts.append(ImagePart(image=f.image, pts_s=float(f.pts_s)))
    return parts


def _pairs(frames: Sequence[Any]) -> list[Sequence[Any]]:
    """``frames`` (time order) as consecutive items of two (Qwen's temporal patch): picks 0+1,
    2+3, ...; an odd count leaves the newest alone."""
    return [frames[i : i + 2] for i in range(0, len(frames), 2)]


def _pair_parts(frames: Sequence[Any], tp: PromptTemplate) -> list[Part]:
    """One ``video_pairs`` item: its label (the frames' times) and a video part of its frames."""
    times = ", ".join(fmt_time(f.pts_s) for f in frames)
    video = VideoPart(frames=[f.image for f in frames], pts_s=[float(f.pts_s) for f in frames])
    return [_text(tp.video_pair.format(times=times)), video]


def _stream_parts(
    obs: Observation,
    tp: PromptTemplate,
    text_only: bool,
    header: str,
    frames_as: str = "image",
    tail: list[Part] | None = None,
    timeline: bool = False,
    segment_s: float | None = None,
) -> list[Part]:
    """The stream header and frames, then (classic layout) the audio and transcript; with
    ``tail`` (prefix layout) everything that changes with t is appended to ``tail`` instead;
    ``timeline``: the audio segments of ``segment_s`` go between the frames
    (:func:`_timeline_parts`)."""
    ts = fmt_time(obs.t)
    parts = [_text(header.format(t=ts))]
    late = parts if tail is None else tail
    heard = obs.audio is not None and not text_only and bool(obs.has_audio or obs.attachments)
    if obs.frames and len(obs.frames) < obs.n_frames_available and not text_only:
        late.append(_text(tp.frames_capped.format(n=len(obs.frames), total=obs.n_frames_available)))
    if timeline and heard:
        parts.extend(_timeline_parts(obs, tp, frames_as, tail, segment_s))
        if not obs.frames:
            late.append(_text(tp.frames_none))
    elif obs.frames:
        parts.extend(_frame_parts(obs.frames, tp, text_only, frames_as, tail))
    elif not text_only:
        late.append(_text(tp.frames_none))
    if obs.audio is not None and not text_only and not (timeline and heard):
        if heard:
            late.append(_text(tp.audio.format(t=ts)))
            late.append(AudioPart(audio=obs.audio, sample_rate=int(obs.sample_rate), stream=True))
        else:
            late.append(_text(tp.audio_missing))
    if obs.transcript is not None:
        if obs.transcript.strip():
            late.append(_text(tp.transcript.format(text=obs.transcript.strip())))
        else:
            late.append(_text(tp.transcript_empty))
    return parts


def _history_parts(history: Sequence[ResponseRecord], tp: PromptTemplate) -> list[Part]:
    if not history:
        return []
    lines = [tp.history_header]
    for rec in history:
        lines.append(tp.history_line.format(t=fmt_time(rec.t), text=(rec.text or "").strip()))
    return [_text("\n".join(lines))]


def _merge_text(parts: list[Part]) -> list[Part]:
    """Join neighbouring text parts with newlines (fewer, cleaner parts)."""
    out: list[Part] = []
    for p in parts:
        if isinstance(p, TextPart) and out and isinstance(out[-1], TextPart):
            out[-1] = _text(out[-1].text + "\n" + p.text)
        else:
            out.append(p)
    return out


def _body_parts(
    request: DecisionRequest,
    obs: Observation | None,
    tp: PromptTemplate,
    text_only: bool,
    header: str,
    frames_as: str,
) -> list[Part]:
    """Request and stream parts in the version's layout (see :data:`LAYOUTS`).

    Raises:
        ValueError: ``audio.segment_s`` set with a layout that sends the audio as one item."""
    s = request.settings
    layout = layout_of(s.prompt_version)
    if s.audio.segment_s is not None and layout != "timeline":
        raise ValueError(
            f"audio.segment_s = {s.audio.segment_s} needs a timeline prompt version (v3); "
            f"prompt_version {s.prompt_version!r} sends the audio [0, t] as one item: pass "
            "--set prompt_version=v3 or unset audio.segment_s"
        )
    tail: list[Part] | None = [] if layout in ("prefix", "timeline") else None
    parts = _request_parts(request, obs, tp, text_only, tail)
    scene = "none" if (s.scene == "none" or obs is None) else "full"
    if obs is not None and scene == "full":
        timeline, seg = layout == "timeline", s.audio.segment_s
        parts.extend(_stream_parts(obs, tp, text_only, header, frames_as, tail, timeline, seg))
    return parts + (tail or [])


def build_messages(
    request: DecisionRequest, *, text_only: bool = False, frames_as: str = "image"
) -> list[dict[str, Any]]:
    """:func:`build_prompt` in the dict form (:func:`~interactscope.engines.base.prompt_dicts`):
    ``[{"role": "system", "content": [text part]}, {"role": "user", "content": [parts]}]``, the
    part shapes of the module docstring. For adapters that edit prompts as dicts and for JSON
    previews; engines take either form."""
    return prompt_dicts(build_prompt(request, text_only=text_only, frames_as=frames_as))


def build_prompt(
    request: DecisionRequest, *, text_only: bool = False, frames_as: str = "image"
) -> list[Message]:
    """Chat messages (system + user) for one Offline Probing decision request, typed: the
    :class:`~interactscope.engines.base.Message` values engines take.

    Args:
        request: the decision request; ``request.observation`` is an
            :class:`~interactscope.streaming.protocol.observation.Observation` or ``None`` (no media:
            ``scene = none`` or an adapter that needs none).
        text_only: render for a text-only model (no image/audio parts; transcript kept).
        frames_as: ``"image"`` (one image part per frame, each after a ``[frame at X s]`` label),
            ``"video"`` (one ``{"type": "video", "video": [arrays], "pts_s": [floats]}`` part
            after a label listing the frame times) or ``"video_pairs"`` (one such part per two
            consecutive frames, each after its own label; :data:`FRAME_LAYOUTS`).

    Returns:
        ``[Message(role="system", content=[TextPart]), Message(role="user", content=[parts])]``
        (``TextPart``, ``ImagePart``, ``VideoPart``, ``AudioPart``); neighbouring text parts are
        merged. :func:`build_messages` is the same in the dict form of the module docstring.

    Raises:
        KeyError: ``settings.prompt_version`` is unknown.
    """
    s = request.settings
    tp = get_template(s.prompt_version)
    obs = request.observation
    scene = "none" if (s.scene == "none" or obs is None) else "full"
    sys_msg = system_text(
        request.tools, s.silence_token, s.prompt_version, scene=scene, text_only=text_only
    )
    parts = _body_parts(request, obs, tp, text_only, tp.stream_header, frames_as)
    parts.extend(_history_parts(request.history, tp))
    if request.tool_results:
        parts.append(_text(fmt_results(request.tool_results)))
    parts.append(_text(tp.now.format(t=fmt_time(request.t), token=s.silence_token)))
    return [
        Message(role="system", content=[_text(sys_msg)]),
        Message(role="user", content=_merge_text(parts)),
    ]


def render_text(request: DecisionRequest) -> list[dict[str, str]]:
    """Text-only chat messages with string content (``{"role", "content": str}``) for
    text-only models: frames omitted (their count stated), transcript included."""
    return [
        {"role": m.role, "content": "\n".join(p.text for p in m.parts() if isinstance(p, TextPart))}
        for m in build_prompt(request, text_only=True)
    ]


SPEAK_PROMPT_VERSION = "speak-v1"
"""The default wording of the two-step decision's first step (``adapter.decision: two_step``)."""

SPEAK_PROMPTS: dict[str, str] = {
    "speak-v1": "Should the assistant speak now? Answer yes or no.",
}
"""Version -> the yes/no question of the two-step decision (this project's own wording)."""


def render_speak(request: DecisionRequest, version: str | None = None) -> list[dict[str, str]]:
    """Step 1 of the two-step decision: :func:`render_text`'s messages, then one more user turn
    asking the yes/no question of ``version`` (default :data:`SPEAK_PROMPT_VERSION`); the model's
    next-token probabilities of yes/no decide whether step 2 (the :func:`render_text` prompt,
    which shares this prompt's prefix) is generated.

    Raises:
        KeyError: unknown version (the message lists the known ones).
    """
    v = version or SPEAK_PROMPT_VERSION
    if v not in SPEAK_PROMPTS:
        raise KeyError(f"unknown speak prompt {v!r}; known: {sorted(SPEAK_PROMPTS)}")
    return render_text(request) + [{"role": "user", "content": SPEAK_PROMPTS[v]}]


def messages_to_text(messages: Sequence[Message | dict[str, Any]]) -> str:
    """A readable dump of messages, typed or dicts (images as ``<image HxW @pts>``, audio as
    ``<audio n @sr>``); for logs, tests and debugging."""
    out = []
    for m in prompt_dicts(messages):
        content = m["content"]
        if isinstance(content, str):
            out.append(f"[{m['role']}]\n{content}")
            continue
        chunks = []
        for p in content:
            if p["type"] == "text":
                chunks.append(p["text"])
            elif p["type"] == "image":
                h, w = p["image"].shape[:2]
                chunks.append(f"<image {h}x{w} @{fmt_time(p.get('pts_s', 0.0))}>")
            elif p["type"] == "video":
                h, w = p["video"][0].shape[:2]
                chunks.append(f"<video {len(p['video'])}x{h}x{w}>")
            elif p["type"] == "audio":
                chunks.append(f"<audio {len(p['audio'])} @{p['sampling_rate']} Hz>")
        out.append(f"[{m['role']}]\n" + "\n".join(chunks))
    return "\n\n".join(out)


def online_turn(
    request: DecisionRequest, previous: Observation | None, **options: Any
) -> list[dict[str, Any]]:
    """:func:`online_prompt` (the same arguments; ``options`` are its keyword-only ones) in the
    dict form (:func:`~interactscope.engines.base.prompt_dicts`), for adapters that keep the
    conversation as dicts.

    Raises:
        TypeError: an option :func:`online_prompt` does not take.
    """
    return prompt_dicts(online_prompt(request, previous, **options))


def online_prompt(
    request: DecisionRequest,
    previous: Observation | None,
    *,
    text_only: bool = False,
    frames_as: str = "image",
    first: bool | None = None,
    results_shown: int | None = None,
) -> list[Message]:
    """Messages to append for one Online Rolling step (typed, as :func:`build_prompt`).

    At the first step (``previous is None``) the result is the system message and a user turn
    with the request and the whole observation 0..t (the replay). At later steps it is one user
    turn with only what is new since ``previous``: frames newer than the newest frame of
    ``previous`` (each frame is sent once; the ``frames.max`` cap applies per step), the
    audio samples ``[len(previous.audio), len(audio))``, transcript words ending after
    ``previous.t``, then the current time and the ask. The model's own answers are appended by
    the session as assistant turns between steps, so ``history.n`` is not repeated here.
    ``frames_as="video_pairs"`` goes as ``"video"`` (the session's KV cache keeps earlier turns).
    When ``request.tool_results`` is set (an environment executed the model's tool calls), a
    later step's turn also lists the calls executed since the previous step with their results
    (:func:`_new_results`), after the stream parts and before the current time.

    Args:
        request: this step's request (its ``observation`` at ``request.t``).
        previous: the observation of the previous step (``None`` at the first step, or when
            there is no observation, e.g. ``scene = none``).
        text_only, frames_as: as :func:`build_messages`.
        first: whether this is the session's first step (default: ``previous is None``).
        results_shown: how many of ``request.tool_results`` earlier turns showed (the session's
            count); ``None``: those with ``t >= previous.t`` are the new ones.

    Returns:
        A list of :class:`~interactscope.engines.base.Message` (system + user at the first
        step, user only afterwards).
    """
    s = request.settings
    tp = get_template(s.prompt_version)
    obs = request.observation
    now = _text(tp.now.format(t=fmt_time(request.t), token=s.silence_token))
    frames_as = "video" if frames_as == "video_pairs" else frames_as  # see the docstring
    scene = "none" if (s.scene == "none" or obs is None) else "full"
    if first is None:
        first = previous is None
    if first:
        msgs = build_prompt(request, text_only=text_only, frames_as=frames_as)
        body = _body_parts(request, obs, tp, text_only, tp.stream_replay_header, frames_as)
        body += _results_parts(_new_results(request.tool_results, None, results_shown), None)
        return [msgs[0], Message(role="user", content=_merge_text(body + [now]))]
    parts: list[Part] = []
    if scene == "full" and obs is not None and previous is not None:
        prev_t = fmt_time(previous.t)
        parts.append(_text(tp.stream_new_header.format(prev=prev_t, t=fmt_time(obs.t))))
        last = _last_pts(previous)
        new_frames = [f for f in obs.frames if float(f.pts_s) > last + 1e-9]
        parts.extend(_frame_parts(new_frames, tp, text_only, frames_as))
        if obs.audio is not None and not text_only:
            start = previous.audio_samples
            new = obs.audio[start:]
            if len(new):
                parts.append(_text(tp.audio_new.format(prev=prev_t, t=fmt_time(obs.t))))
                parts.append(AudioPart(audio=new, sample_rate=int(obs.sample_rate), stream=True))
        if obs.transcript is not None:
            new_words = [w for w in obs.words if w.end_s > previous.t + 1e-9]
            text = "".join(w.text for w in new_words).strip()
            if text:
                parts.append(_text(tp.transcript_new.format(prev=prev_t, text=text)))
        prev_att = {a.path: a for a in previous.attachments}
        for att in obs.attachments:
            if att.kind == "audio" and att.transcript is not None:
                if (
                    prev_att.get(att.path) is None
                    or prev_att[att.path].transcript != att.transcript
                ):
                    parts.append(_text(tp.attachment_audio_asr.format(text=att.transcript)))
    parts += _results_parts(_new_results(request.tool_results, previous, results_shown), previous)
    parts.append(now)
    return [Message(role="user", content=_merge_text(parts))]


ONLINE_RESULTS_HEADER = "Tool calls you made since {prev} and their results:"
"""Header of the executed calls in an Online Rolling turn (``since the start`` without a
previous step); the lines are :func:`interactscope.streaming.protocol.tools.fmt_results`'s."""


def _new_results(
    executed: Sequence[dict[str, Any]] | None,
    previous: Observation | None,
    shown: int | None,
) -> list[dict[str, Any]]:
    """The executed calls (``{t, name, arguments, result}``, time order) not shown yet: those
    past the first ``shown``, or without a count those made at or after ``previous.t``."""
    if not executed:
        return []
    if shown is not None:
        return list(executed[shown:])
    if previous is None:
        return list(executed)
    return [e for e in executed if float(e["t"]) >= float(previous.t) - 1e-9]


def _results_parts(executed: list[dict[str, Any]], previous: Observation | None) -> list[Part]:
    """One text part listing ``executed`` under :data:`ONLINE_RESULTS_HEADER` (none if empty)."""

    if not executed:
        return []
    since = fmt_time(previous.t) if previous is not None else "the start"
    lines = fmt_results(executed).split("\n")[1:]
    return [_text("\n".join([ONLINE_RESULTS_HEADER.format(prev=since), *lines]))]


def _last_pts(obs: Observation) -> float:
    return max((float(f.pts_s) for f in obs.frames), default=-1.0)
