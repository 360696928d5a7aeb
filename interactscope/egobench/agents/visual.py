"""The task video as the agent sees it: frames at ``frames.fps`` under the streaming cap, or the
task's ``image_description`` when there is no video (docs/egobench.md, "Video")."""

from __future__ import annotations

from pathlib import Path

from interactscope.core.errors import InteractScopeError
from interactscope.egobench.agents.base import Visual
from interactscope.egobench.episode_settings import EpisodeFrameSettings
from interactscope.egobench.records import Task
from interactscope.media import CausalMedia, MediaError, select_indices


class VideoMissingError(InteractScopeError, FileNotFoundError):
    """The task's video is absent and ``frames.missing_video`` is ``fail``."""


def video_path(task: Task, video_dir: str | Path | None) -> Path | None:
    """``video_dir / basename(task.image_path)``, or None without a folder or image path."""
    if video_dir is None or not task.image_path:
        return None
    return Path(video_dir) / Path(task.image_path.replace("\\", "/")).name


def _described(task: Task, note: str, path: Path | None) -> Visual:
    return Visual(
        sees_pixels=False,
        description=task.image_description or "(no description)",
        video=str(path) if path else None,
        note=note,
    )


def load_visual(
    task: Task, video_dir: str | Path | None, s: EpisodeFrameSettings, wants_pixels: bool = True
) -> Visual:
    """Frames of the task's video for the agent.

    The decoder keeps one frame per second (the frame shown at second k); ``fps`` < 1 keeps
    every ``round(1/fps)``-th of them; then at most ``s.max`` are kept by ``s.cap_policy``.

    Returns:
        :class:`Visual` with frames (``sees_pixels`` True), or the description (False) when the
        agent does not see pixels, no video folder was given, or the file is absent.

    Raises:
        VideoMissingError: the file is absent and ``s.missing_video == "fail"``.
        MediaError: the file exists but cannot be decoded."""
    if not wants_pixels:
        return _described(task, "agent sees no pixels", None)
    path = video_path(task, video_dir)
    if path is None:
        return _described(task, "no video folder", None)
    if not path.is_file():
        if s.missing_video == "fail":
            raise VideoMissingError(
                f"{path}: video of task {task.task_id} not found (frames.missing_video=fail)"
            )
        return _described(task, "video file absent", path)
    media = CausalMedia(path, store_max_side=s.max_side)
    every = max(1, round(1 / s.fps))
    frames = media.frames_until(media.duration_s, max_frames=10**6, max_side=s.max_side)
    frames = [f for f in frames if f.second % every == 0]
    frames = [frames[i] for i in select_indices(len(frames), s.max, s.cap_policy)] if frames else []
    if not frames:
        raise MediaError(f"{path}: no video frames decoded")
    return Visual(
        sees_pixels=True,
        frames=[f.image for f in frames],
        pts_s=[float(f.pts_s) for f in frames],
        step_s=float(every),
        video=str(path),
    )
