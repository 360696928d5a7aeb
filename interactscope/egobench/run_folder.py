"""EgoBench run folders: ``run.json`` + append-only ``episodes.jsonl`` (one
:class:`~interactscope.egobench.records.EpisodeRecord` per task), resume, shards and merge
(docs/egobench.md, "Run folder").

An episode is written only once it has ended, flushed and fsynced, so a killed run loses at
most the episode in progress: reopening drops a torn last line with a warning and the
unfinished episode is played again; nothing is duplicated or skipped. Writers hold the
folder's lock (:func:`interactscope.runs.common.run_lock`)."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from interactscope.core.settings import diff_settings
from interactscope.egobench.data import EgoBenchError, scenario_of
from interactscope.egobench.episode_settings import with_legacy_defaults
from interactscope.egobench.profiles import SCENARIO_RULES, TOOL_RULE_OVERRIDES, run_profile
from interactscope.egobench.records import EpisodeRecord, Variant
from interactscope.runs.common import (
    RunLogError,
    git_revision,
    host_facts,
    now_iso,
    package_versions,
    write_manifest,
)
from interactscope.runs.folder import (
    Accounting,
    RecordWriter,
    RunFormat,
    account_killed,
    load_records,
    merge_folders,
    open_folder,
)
from interactscope.runs.folder import read_manifest as _read_manifest

log = logging.getLogger(__name__)


EPISODES = "episodes.jsonl"
FORMAT_ID = "interactscope.egobench.run/1"
"""``run.json``'s ``format`` field of an EgoBench run folder."""
IDENTITY = ("agent_id", "user_id", "mode", "data", "tasks", "shard", "video_dir")
"""Manifest fields that must match to resume a run (settings are compared key by key)."""


class EgoRunError(RunLogError):
    """A run folder that cannot be opened, resumed or merged; the message says why."""


class EgoInvocation(BaseModel):
    """One ``ego run`` invocation on the folder: times, command, episodes it wrote, and
    ``summary`` (:func:`summarise` over those episodes, plus ``wall_s``: the invocation's wall
    seconds, None for one that was killed). A killed invocation's episodes and counts are filled
    in when the run is resumed (they are the records after the earlier invocations' ones).
    ``interrupted``: it stopped on a caught Ctrl-C or SIGTERM; its summary and wall time are
    recorded then, so only a real kill (SIGKILL, power loss) stays untimed."""

    started_at: str
    ended_at: str | None = None
    command: list[str] | None = None
    written: int = 0
    summary: dict[str, Any] | None = None
    interrupted: bool = False


class EgoRunManifest(BaseModel):
    """``run.json`` of an EgoBench run: agent, user, mode, data fingerprint per variant, the
    tasks selected (per variant, after ``--tasks`` and ``--shard``), every setting, versions,
    and a summary over every episode of the folder."""

    format: str = FORMAT_ID
    agent: dict[str, Any]
    user: dict[str, Any]
    agent_id: str
    user_id: str
    mode: str
    data: dict[str, Any]
    video_dir: str | None = None
    tasks: dict[str, list[int]]
    trials: int = 1
    task_filter: str | None = None
    settings: dict[str, Any]
    shard: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    git_revision: str | None = None
    host: str | None = None
    python: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    invocations: list[EgoInvocation] = Field(default_factory=list)
    summary: dict[str, Any] | None = None
    merged_from: list[str] | None = None

    @field_validator("settings")
    @classmethod
    def _legacy(cls, v: dict[str, Any]) -> dict[str, Any]:
        # a setting added after the folder was written reads as its old default
        return with_legacy_defaults(v)

    def keys(self) -> list[str]:
        """``variant:task_id[#trial]`` of every planned episode, in run order (trial-major)."""
        return [
            episode_key(v, t, k)
            for k in range(1, self.trials + 1)
            for v, ids in self.tasks.items()
            for t in ids
        ]


def episode_key(variant: str, task_id: int, trial: int = 1) -> str:
    """The key of one episode in a run; trial 1 is ``variant:task_id`` (also the shard-hashing
    id: every trial of a task falls in the task's shard), trial k > 1 ``variant:task_id#k``."""
    return f"{variant}:{task_id}" + (f"#{trial}" if trial > 1 else "")


def record_key(r: EpisodeRecord) -> str:
    """:func:`episode_key` of a record."""
    return episode_key(r.variant, r.task_id, r.trial)


def fingerprint(variant: Variant) -> str:
    """sha256 (hex, 16 chars) over the variant's task, database and tool files' bytes."""
    h = hashlib.sha256()
    for kind in ("tasks", "db", "tools"):
        path = variant.files.get(kind)
        h.update(kind.encode())
        h.update(Path(path).read_bytes() if path and Path(path).exists() else b"")
    return h.hexdigest()[:16]


def new_manifest(**fields: Any) -> EgoRunManifest:
    """A manifest with versions, git revision and host filled in."""
    host = host_facts()
    return EgoRunManifest(
        packages=package_versions(),
        git_revision=git_revision(),
        host=host["host"],
        python=host["python"],
        **fields,
    )


def read_episodes(path: str | Path, *, repair: bool = False) -> list[EpisodeRecord]:
    """Records of ``episodes.jsonl``; a torn last line (no newline, or unparseable) is dropped
    with a warning (and cut from the file with ``repair``); the first record of a key wins.

    Raises:
        EgoRunError: a bad line before the last one (names file and line)."""
    return load_records(Path(path), FORMAT, repair=repair)


def run_totals(
    manifest: EgoRunManifest,
    records: list[EpisodeRecord],
    invocations: list[dict[str, Any] | None],
) -> dict[str, Any]:
    """``run.json``'s ``summary``: :func:`summarise` over every episode of the folder (all
    invocations) against the manifest's planned episodes, with ``invocations`` (how many) and
    ``wall_s``, the wall seconds of the invocations' summaries summed over those that measured
    it (``untimed``: how many did not, e.g. killed ones). ``model_s`` sums the episodes' model
    seconds, so with ``--max-concurrency`` > 1 it can exceed ``wall_s``."""
    walls = [(i or {}).get("wall_s") for i in invocations]
    known = [w for w in walls if w is not None]
    return {
        **summarise(records, len(manifest.keys())),
        "invocations": len(invocations),
        "wall_s": round(sum(known), 3),
        "untimed": len(invocations) - len(known),
    }


def summarise(records: list[EpisodeRecord], expected: int) -> dict[str, Any]:
    """Counts over a run's episodes: stop reasons, episodes with errors, pixels seen, tokens."""
    return {
        "episodes": len(records),
        "expected": expected,
        "stop_reasons": dict(Counter(r.stop_reason or "none" for r in records)),
        "episodes_with_errors": sum(r.stop_reason == "error" for r in records),
        "sees_pixels": dict(Counter(str(r.sees_pixels).lower() for r in records)),
        "tool_calls": sum(len(r.calls) for r in records),
        "input_tokens": sum(r.input_tokens for r in records),
        "output_tokens": sum(r.output_tokens for r in records),
        "model_s": round(sum(r.latency_s for r in records), 3),
    }


def _listed(records: list[EpisodeRecord], record: EpisodeRecord) -> list[EpisodeRecord]:
    records.append(record)
    return records


ACCOUNTING: Accounting[EpisodeRecord, EgoRunManifest, list[EpisodeRecord]] = Accounting(
    start=list,
    add=_listed,  # a run has at most a few thousand episodes: the tally is the records
    summary=lambda records: summarise(records, len(records)),
    totals=run_totals,
)
"""Invocation accounting of the EgoBench run folder (an invocation's ``summary`` is
:func:`summarise` over its episodes, plus ``wall_s``)."""


def _differences(old: EgoRunManifest, new: EgoRunManifest) -> list[str]:
    return differences(old, new)


FORMAT: RunFormat[EpisodeRecord, EgoRunManifest] = RunFormat(
    records_file=EPISODES,
    record=EpisodeRecord,
    key=record_key,  # variant:task_id, and #trial past the first
    manifest=EgoRunManifest,
    differences=_differences,
    error=EgoRunError,
    noun="episode",
    owner_noun="episode",
    manifest_noun="an EgoBench run",
    command="ego run",
    torn_note="; that episode is played again",
    accounting=ACCOUNTING,
)
"""The EgoBench run folder: one :class:`EpisodeRecord` per ``variant:task_id``."""


def differences(old: EgoRunManifest, new: EgoRunManifest) -> list[str]:
    """What forbids resuming ``old`` with ``new``: identity fields and settings, listed."""
    diffs = [
        f"{f}: {getattr(old, f)!r} != {getattr(new, f)!r}"
        for f in IDENTITY
        if getattr(old, f) != getattr(new, f)
    ]
    scenarios = _scenarios(old.tasks)
    return diffs + [
        f"settings.{d}"
        for d in diff_settings(
            _effective(with_legacy_defaults(old.settings, old, new.settings), scenarios),
            _effective(new.settings, scenarios),
        )
    ]


def _scenarios(variants: Any) -> set[str]:
    """The scenarios of a run's variants; a name that is no scenario + number (a test's or a
    user's own data) counts as every scenario, so no scenario rule is left out for it."""
    try:
        return {scenario_of(v) for v in variants}
    except EgoBenchError:
        return set(SCENARIO_RULES.values())


def _effective(settings: dict[str, Any], scenarios: set[str]) -> dict[str, Any]:
    """``settings`` with each tool-rule override replaced by the rule the run executes with
    (:func:`~interactscope.egobench.profiles.run_profile`): an old ``run.json``'s explicit
    ``undeclared_params: drop`` equals a new run's ``None`` under ``ours``, whose rule is drop.
    A rule of a scenario the run does not play (:data:`SCENARIO_RULES`) is left out."""
    try:
        rules = run_profile(settings)
    except ValueError:  # an unknown profile: compare as written
        return settings
    out = {**settings, **{k: getattr(rules, k) for k in TOOL_RULE_OVERRIDES}}
    unplayed = {k for k, scenario in SCENARIO_RULES.items() if scenario not in scenarios}
    return {k: v for k, v in out.items() if k not in unplayed}


class EpisodeWriter(RecordWriter[EpisodeRecord]):
    """Appends episode records durably; ``done`` holds the keys already written. ``finish()``
    / ``interrupted()`` (:class:`~interactscope.runs.folder.RecordWriter`) record the end time,
    this invocation's summary (wall seconds since the writer was made) and the run's
    (:func:`run_totals`) in ``run.json``; an interrupted run stays unfinished (``ended_at``
    None), so resuming plays the rest."""

    def __init__(
        self,
        path: Path,
        manifest: EgoRunManifest,
        records: list[EpisodeRecord],
        *,
        sync_every: int = 1,
    ):
        super().__init__(path, FORMAT, records, manifest=manifest, sync_every=sync_every)

    def _appended(self, record: EpisodeRecord) -> None:
        self.manifest.invocations[-1].written += 1


def open_episodes(
    path: str | Path,
    manifest: EgoRunManifest,
    command: list[str] | None = None,
    *,
    sync_every: int = 1,
) -> EpisodeWriter:
    """Create the run folder or resume the one at ``path`` (call inside :func:`run_lock`).

    Raises:
        EgoRunError: the folder holds a run with other settings (every difference listed), or
            ``episodes.jsonl`` without ``run.json``, or a corrupt record."""
    p = Path(path)
    inv = EgoInvocation(started_at=now_iso(), command=command)
    old, records = open_folder(p, manifest, FORMAT)
    if old is not None:
        manifest.started_at = old.started_at
        manifest.invocations = account_killed(old.invocations, records, FORMAT)
        log.info("resuming %s: %d episode(s) already written", p, len(records))
    manifest.started_at = manifest.started_at or inv.started_at
    manifest.ended_at = None
    manifest.invocations = [*manifest.invocations, inv]
    write_manifest(p, manifest)
    return EpisodeWriter(p, manifest, records, sync_every=sync_every)


def read_manifest(path: str | Path) -> EgoRunManifest:
    """``RUN/run.json`` of an EgoBench run.

    Raises:
        EgoRunError: no such file, or not an EgoBench run (one line)."""
    return _read_manifest(path, FORMAT)


def load_run(path: str | Path) -> tuple[EgoRunManifest, list[EpisodeRecord]]:
    """The manifest and every episode record of a run folder (torn last line ignored)."""
    return read_manifest(path), read_episodes(Path(path) / EPISODES)


def merge_runs(sources: list[str | Path], out: str | Path) -> EgoRunManifest:
    """Join shard runs (``ego run --shard K/N``) into one folder.

    Raises:
        EgoRunError: fewer than two folders, ``out`` holds a run, settings differ, shards are
            missing or overlap, a shard never finished, or an episode is missing (all listed)."""
    paths = [Path(s) for s in sources]

    def missing(manifests: list[EgoRunManifest], records: list[EpisodeRecord]) -> list[str]:
        have = {FORMAT.key(r) for r in records}
        return [
            f"{p}: episode {k} missing"
            for p, m in zip(paths, manifests, strict=True)
            for k in m.keys()
            if k not in have
        ]

    def combine(manifests: list[EgoRunManifest], records: list[EpisodeRecord], _incomplete):
        tasks: dict[str, list[int]] = {}
        for m in manifests:
            for v, ids in m.tasks.items():
                tasks[v] = sorted(set(tasks.get(v, [])) | set(ids))
        return manifests[0].model_copy(
            update={
                "shard": None,
                "tasks": tasks,
                "merged_from": [str(p.resolve()) for p in paths],
                "started_at": min(m.started_at or "" for m in manifests),
                "ended_at": max(m.ended_at or "" for m in manifests),
                "invocations": [i for m in manifests for i in m.invocations],
                "summary": summarise(
                    records, sum(len(i) for i in tasks.values()) * manifests[0].trials
                ),
            }
        )

    def order(merged: EgoRunManifest):
        rank = {k: i for i, k in enumerate(merged.keys())}
        return lambda r: rank[FORMAT.key(r)]

    return merge_folders(
        paths,
        out,
        FORMAT,
        per_shard=("shard", "tasks"),
        missing=missing,
        combine=combine,
        order=order,
    )
