"""``ego run``: check every input, then play one episode per selected task into a run folder
(resumable, shardable). Every check happens before the first episode, so bad input costs no
model call (docs/egobench.md, "Run folder")."""

from __future__ import annotations

import copy
import itertools
import logging
import re
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from interactscope.core import registry as plugins
from interactscope.core.files import FileReadError, read_data
from interactscope.core.text import plural
from interactscope.egobench.agents import Agent, build_agent, load_visual
from interactscope.egobench.agents.visual import video_path
from interactscope.egobench.chat_models import load_chat_engine, resolve_chat_model
from interactscope.egobench.data import EgoBenchError, load_variant
from interactscope.egobench.episode_settings import EpisodeSettings, build_settings
from interactscope.egobench.episodes import run_episode
from interactscope.egobench.prompts import PromptError, load_chitchat, load_prompts
from interactscope.egobench.records import EpisodeRecord, Task, Variant
from interactscope.egobench.run_folder import (
    EgoRunManifest,
    episode_key,
    fingerprint,
    new_manifest,
    open_episodes,
)
from interactscope.egobench.user_sim import ModelUser, ScriptedUser, SimulatedUser, default_script
from interactscope.runs.common import in_shard, parse_shard, run_lock

log = logging.getLogger(__name__)

PROGRESS_REFRESH_S = 0.5
"""Seconds between redraws of ``ego run``'s progress bar at most (as ``collect``'s)."""

UserFactory = Callable[[Variant, Task, EpisodeSettings], SimulatedUser]
"""``make_user(variant, task, settings)``: one episode's user (settings carry the trial's seed)."""


class RunRequest(BaseModel):
    """The options of one ``ego run`` (see ``interactscope ego run --help``)."""

    agent: str
    user: str = "scripted"
    data: Path
    variants: list[str]
    mode: str = "easy"
    out: Path
    video_dir: Path | None = None
    tasks: str | None = None
    shard: str | None = None
    sets: dict[str, Any] = Field(default_factory=dict)
    trials: int = Field(1, ge=1, description="episodes per task (pass^k, docs/egobench.md)")
    max_concurrency: int = Field(1, ge=1, description="episodes in flight at once")
    command: list[str] | None = None


class PreparedRun(BaseModel):
    """Everything checked and built; :func:`execute` plays it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    request: RunRequest
    settings: EpisodeSettings
    variants: list[Variant]
    selected: dict[str, list[int]]
    agent: Any
    make_user: Any
    manifest: EgoRunManifest


def parse_task_ids(spec: str | None) -> set[int] | None:
    """``"1,5-9"`` -> {1, 5, 6, 7, 8, 9}; None -> None (every task).

    Raises:
        ValueError: a malformed item (one line)."""
    if spec is None or not spec.strip():
        return None
    out: set[int] = set()
    for item in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", item)
        if not m or (m[2] and int(m[2]) < int(m[1])):
            raise ValueError(f"--tasks {spec!r}: {item!r} is not an id or a range like 5-9")
        out.update(range(int(m[1]), int(m[2] or m[1]) + 1))
    return out


def _select(
    variants: list[Variant], spec: str | None, shard: tuple[int, int] | None
) -> dict[str, list[int]]:
    ids = parse_task_ids(spec)
    if ids is not None:
        known = {t.task_id for v in variants for t in v.tasks}
        if ids - known:
            raise ValueError(
                f"--tasks: no task {', '.join(map(str, sorted(ids - known)))} in "
                f"{', '.join(v.name for v in variants)}"
            )
    return {
        v.name: [
            t.task_id
            for t in v.tasks
            if (ids is None or t.task_id in ids) and in_shard(episode_key(v.name, t.task_id), shard)
        ]
        for v in variants
    }


def load_scripts(path: Path) -> dict[str, list[str]]:
    """A script file (YAML or JSON): ``{"retail1:3": [messages], "3": [...]}``; a bare id
    applies to that task of every variant.

    Raises:
        ValueError: unreadable file or wrong shape (one line)."""
    try:
        raw = read_data(path, "yaml")  # YAML reads JSON too
    except FileReadError as exc:
        raise ValueError(f"--user scripted:{exc}") from None
    if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
        raise ValueError(
            f"--user scripted:{path}: must map 'variant:task_id' (or task_id) to a list of messages"
        )
    return {str(k): [str(m) for m in v] for k, v in raw.items()}


USERS = "users"
"""Registry kind of simulated users: ``factory(ARG, SPEC, settings) -> (UserFactory, info)`` for
``--user NAME[:ARG]``; any other ``--user`` is a model."""


def _scripted_users(rest: str, spec: str, settings: EpisodeSettings):
    """``scripted`` (one message, ``user.scripted_opening``, then STOP) or ``scripted:FILE``."""
    scripts = load_scripts(Path(rest)) if rest else {}

    def scripted(v: Variant, t: Task, s: EpisodeSettings | None = None) -> SimulatedUser:
        msgs = scripts.get(episode_key(v.name, t.task_id), scripts.get(str(t.task_id)))
        opening = (s or settings).user.scripted_opening
        return ScriptedUser(msgs if msgs is not None else default_script(t, opening))

    return scripted, {"name": spec, "kind": "scripted", "script": rest or None}


plugins.register(USERS, "scripted", _scripted_users)


def user_factory(
    spec: str, settings: EpisodeSettings, agent: Any = None, agent_info: dict | None = None
) -> tuple[UserFactory, dict[str, Any]]:
    """``scripted`` (one message, then STOP), ``scripted:FILE``, or a model
    (the agent's engine is reused when ``agent_info`` names the same config file).

    Raises:
        ValueError / ChatModelError / PromptError: one line naming what is wrong."""
    head, _, rest = spec.partition(":")
    if plugins.registered(USERS, head):
        return plugins.lookup(USERS, head, what="user")(rest, spec, settings)

    load_prompts("user", settings.user.prompt_version)

    info = resolve_chat_model(spec, "--user")[0]
    same = (agent_info or {}).get("sha256") == info.sha256 and hasattr(agent, "engine")
    # the same model plays agent and user: load it once
    engine = agent.engine if same else load_chat_engine(spec, "--user")[0]

    def model(v: Variant, t: Task, s: EpisodeSettings | None = None) -> SimulatedUser:
        return ModelUser(engine, t, v.scenario, s or settings)

    return model, {**info.model_dump(), "kind": "model"}


def _check_videos(req: RunRequest, variants: list[Variant], s: EpisodeSettings) -> None:
    if req.video_dir is None:
        return
    if not req.video_dir.is_dir():
        raise ValueError(f"--video-dir {req.video_dir}: no such folder")
    if s.frames.missing_video == "fail":
        lost = [
            str(video_path(t, req.video_dir))
            for v in variants
            for t in v.tasks
            if (p := video_path(t, req.video_dir)) is None or not p.is_file()
        ]
        if lost:
            raise ValueError(
                f"--video-dir {req.video_dir}: video(s) missing: "
                f"{', '.join(sorted(set(lost))[:5])} (frames.missing_video=fail)"
            )


def prepare(req: RunRequest) -> PreparedRun:
    """Check every input and build the agent and user, before any episode.

    Raises:
        ValueError (and subclasses: EgoBenchError, ChatModelError, PromptError): one line
            naming what is missing and the fix."""
    if not req.variants:
        raise ValueError("--variant: name at least one variant, e.g. --variant retail1")
    settings = build_settings(req.mode, req.sets)
    shard = parse_shard(req.shard)
    variants = [load_variant(req.data, name) for name in req.variants]
    _check_videos(req, variants, settings)
    selected = _select(variants, req.tasks, shard)
    if settings.mode == "hard":
        for v in variants:
            load_chitchat(v.scenario)
    load_prompts("agent", settings.agent.prompt_version)
    if req.user.partition(":")[0] != "scripted":
        load_prompts("user", settings.user.prompt_version)
    agent, agent_info = build_agent(req.agent)
    make_user, user_info = user_factory(req.user, settings, agent, agent_info)
    manifest = new_manifest(
        agent=agent_info,
        user=user_info,
        agent_id=_identity(agent_info),
        user_id=_identity(user_info),
        mode=settings.mode,
        data={"path": str(req.data), "variants": {v.name: fingerprint(v) for v in variants}},
        video_dir=str(req.video_dir) if req.video_dir else None,
        tasks=selected,
        trials=req.trials,
        task_filter=req.tasks,
        settings=settings.model_dump(),
        shard=req.shard,
    )
    return PreparedRun(
        request=req,
        settings=settings,
        variants=variants,
        selected=selected,
        agent=agent,
        make_user=make_user,
        manifest=manifest,
    )


def _identity(info: dict[str, Any]) -> str:
    return (
        f"{info.get('name')}@{info['sha256'][:12]}" if info.get("sha256") else str(info.get("name"))
    )


class RunOutcome(BaseModel):
    """What one invocation did: episodes written now, already present, and with errors;
    ``invocation`` and ``run`` are ``run.json``'s summaries of this invocation and of the whole
    run (every invocation; :func:`interactscope.egobench.run_folder.run_totals`)."""

    written: int = 0
    skipped: int = 0
    errors: int = 0
    records: list[EpisodeRecord] = Field(default_factory=list)
    invocation: dict[str, Any] = Field(default_factory=dict)
    run: dict[str, Any] = Field(default_factory=dict)

    def line(self) -> str:
        """The end-of-run line: this invocation, then the whole run (wall seconds vs model
        seconds summed over episodes, which overlap with ``--max-concurrency``)."""
        inv, tot = self.invocation, self.run
        k = int(tot.get("invocations", 1))
        untimed = int(tot.get("untimed", 0))
        note = f", {untimed} of them untimed (killed)" if untimed else ""
        return (
            f"this invocation: {plural(self.written, 'episode')} played, "
            f"{self.skipped} already done, {self.errors} with errors, "
            f"{float(inv.get('wall_s') or 0):.1f} s wall | whole run ({plural(k, 'invocation')}"
            f"{note}): {tot.get('episodes', 0)}/{plural(int(tot.get('expected', 0)), 'episode')}, "
            f"{tot.get('episodes_with_errors', 0)} with errors, "
            f"{float(tot.get('wall_s') or 0):.1f} s wall, model {float(tot.get('model_s') or 0):.1f}"
            " s summed over episodes"
        )


def _planned(run: PreparedRun) -> list[tuple[Variant, int, int]]:
    """(variant, task id, trial) of every episode, in run order: trial-major, so a later
    ``--trials K'`` > K only appends."""
    return [
        (v, tid, k)
        for k in range(1, run.request.trials + 1)
        for v in run.variants
        for tid in run.selected[v.name]
    ]


def _bar(total: int, initial: int, stream: Any) -> Any:
    """The episode bar on ``stream`` (None: no bar): off unless ``stream`` is a terminal."""
    isatty = getattr(stream, "isatty", None)
    return tqdm(
        total=total,
        initial=initial,
        unit="episode",
        desc="ego run",
        file=stream,
        disable=stream is None or not (callable(isatty) and isatty()),
        dynamic_ncols=True,
        mininterval=PROGRESS_REFRESH_S,
    )


def execute(
    run: PreparedRun,
    progress: Callable[[EpisodeRecord], None] | None = None,
    bar: Any = None,
) -> RunOutcome:
    """Play every planned episode (task x trial) not yet in the folder, appending each as
    it ends. ``progress`` is called with each record written; ``bar`` (a stream, e.g.
    ``sys.stderr``) shows a tqdm bar over the episodes when it is a terminal, its postfix the
    running episode's user turn, agent step and tool calls (redrawn every
    :data:`PROGRESS_REFRESH_S` s at most).

    With ``max_concurrency`` N > 1, N episodes are in flight at once (threads; one
    environment, one agent copy and one user each); records are still appended by this one
    writer, in run order: an episode that ends early waits for those before it, so
    ``episodes.jsonl`` has the same order whatever the timing (a kill loses at most the
    episodes in flight or waiting; they are played again).

    Raises:
        EgoRunError / RunLockedError: the folder holds another run or is in use.
        VideoMissingError / MediaError: a video cannot be used (``frames.missing_video=fail``)."""
    out = RunOutcome()
    req, agent = run.request, run.agent
    with run_lock(req.out, "ego run"):
        writer = open_episodes(req.out, run.manifest, req.command)
        shown = None
        try:
            todo = []
            for v, tid, k in _planned(run):
                if episode_key(v.name, tid, k) in writer.done:
                    out.skipped += 1
                else:
                    todo.append((v, tid, k))

            shown = _bar(len(todo) + out.skipped, out.skipped, bar)

            def write(rec: EpisodeRecord) -> None:
                writer.append(rec)
                out.written += 1
                out.errors += rec.stop_reason == "error"
                out.records.append(rec)
                shown.update(1)
                if progress:
                    progress(rec)

            def on_step(status: str) -> None:
                shown.set_postfix_str(status, refresh=False)
                shown.update(0)  # redraws only when PROGRESS_REFRESH_S has passed

            if req.max_concurrency <= 1:
                for v, tid, k in todo:
                    write(_play(run, v, v.task(tid), agent, k, on_step))
            else:
                _play_concurrently(run, todo, write, on_step)
            writer.finish()
            out.invocation = writer.manifest.invocations[-1].summary or {}
            out.run = writer.manifest.summary or {}
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM (cli.common.Terminated): time it
            writer.interrupted()
            raise
        finally:
            if shown is not None:
                shown.close()
            writer.close()
            close = getattr(agent, "close", None)
            if callable(close):
                close()
    return out


def _fork(agent: Agent) -> Agent:
    """An agent for one concurrent episode: ``agent.fork()`` when it has one, else a shallow
    copy (the engine is shared; ``begin`` gives the copy its own conversation)."""
    fork = getattr(agent, "fork", None)
    return fork() if callable(fork) else copy.copy(agent)


def _play_concurrently(
    run: PreparedRun,
    todo: list[tuple[Variant, int, int]],
    write: Callable[[EpisodeRecord], None],
    on_step: Callable[[str], None] | None = None,
) -> None:
    """At most ``max_concurrency`` episodes in flight; finished ones are written in order."""
    n = run.request.max_concurrency
    done: dict[int, EpisodeRecord] = {}
    nxt = 0
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="ego-episode") as pool:
        futures = {}
        it = iter(enumerate(todo))
        for i, (v, tid, k) in itertools.islice(it, n):
            futures[pool.submit(_play, run, v, v.task(tid), _fork(run.agent), k, on_step)] = i
        while futures:
            finished, _ = wait(futures, return_when=FIRST_COMPLETED)
            for f in finished:
                done[futures.pop(f)] = f.result()
                for i, (v, tid, k) in itertools.islice(it, 1):
                    futures[
                        pool.submit(_play, run, v, v.task(tid), _fork(run.agent), k, on_step)
                    ] = i
            while nxt in done:
                write(done.pop(nxt))
                nxt += 1


def _play(
    run: PreparedRun,
    v: Variant,
    task: Task,
    agent: Agent,
    trial: int = 1,
    on_step: Callable[[str], None] | None = None,
) -> EpisodeRecord:
    s = run.settings
    if trial > 1:  # each trial its own seed, recorded in the episode
        s = s.model_copy(
            update={"user": s.user.model_copy(update={"seed": s.user.seed + trial - 1})}
        )
    visual = load_visual(
        task, run.request.video_dir, s.frames, getattr(agent, "wants_pixels", True)
    )
    user = run.make_user(v, task, s)
    return run_episode(
        v,
        task,
        agent,
        user,
        s,
        visual,
        agent_name=run.manifest.agent.get("name", ""),
        user_name=run.manifest.user.get("name", ""),
        trial=trial,
        on_step=on_step,
    )


__all__ = [
    "EgoBenchError",
    "PreparedRun",
    "PromptError",
    "RunOutcome",
    "RunRequest",
    "execute",
    "load_scripts",
    "parse_task_ids",
    "prepare",
    "user_factory",
]
