"""The EgoBench side of the Python API: ``interactscope.ego.run`` plays episodes into a run
folder (as ``interactscope ego run``), ``interactscope.ego.score`` scores one (as ``ego score``
on a run), ``interactscope.ego.load_run`` reads its manifest and episode records."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from interactscope.egobench import package_data_dir
from interactscope.egobench.records import EpisodeRecord
from interactscope.egobench.run_folder import load_run
from interactscope.egobench.run_score import score_run as score
from interactscope.egobench.runner import RunOutcome, RunRequest, execute, prepare

__all__ = ["load_run", "run", "score"]


def run(
    agent: str,
    variants: list[str],
    out: str | Path,
    *,
    data: str | Path | None = None,
    user: str = "scripted",
    mode: str = "easy",
    tasks: str | None = None,
    shard: str | None = None,
    video_dir: str | Path | None = None,
    sets: dict[str, Any] | None = None,
    progress: Callable[[EpisodeRecord], None] | None = None,
) -> RunOutcome:
    """Play every selected episode of ``variants`` not yet in the run folder ``out`` (creates
    or resumes it; the same options as ``interactscope ego run``).

    Args:
        agent: ``oracle``, ``none``, ``egointeract:MODEL`` or a model config name.
        variants: variant names, e.g. ``["retail1"]``.
        out: the run folder.
        data: the EgoBench data folder; default the copy shipped in the package.
        user: ``scripted``, ``scripted:FILE`` or a model config name.
        mode: ``easy``, ``hard`` or ``static``.
        tasks: task ids (``"1,4-6"``); shard: ``"K/N"``; sets: ``--set`` overrides.

    Returns:
        Episodes written now, skipped (already present) and with errors.

    Raises:
        ValueError (EgoBenchError, ChatModelError, PromptError): bad input, one line.
        EgoRunError / RunLockedError: the folder holds another run or is in use.
    """
    if data is None:
        data = package_data_dir()
    req = RunRequest(agent=agent, user=user, data=Path(data), variants=variants, mode=mode,
                     out=Path(out), video_dir=video_dir, tasks=tasks, shard=shard,
                     sets=sets or {})  # fmt: skip
    return execute(prepare(req), progress)
