"""EgoBench run folders: ``run.json`` + append-only ``episodes.jsonl`` (one
:class:`~interactscope.egobench.records.EpisodeRecord` per task), resume, shards and merge
(docs/egobench-episodes.md, "Run folder").

An episode is written only once it has ended, flushed and fsynced, so a killed run loses at
most the episode in progress: reopening drops a torn last line with a warning and the
unfinished episode is played again; nothing is duplicated or skipped. Writers hold the
folder's lock (:func:`interactscope.runs.common.run_lock`)."""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from interactscope.core.files import open_append, refuse_link, write_atomic
from interactscope.core.settings import diff_settings
from interactscope.egobench.records import EpisodeRecord, Variant
from interactscope.runs.common import (
    git_revision,
    host_facts,
    now_iso,
    package_versions,
    parse_shard,
    run_lock,
    write_manifest,
)

log = logging.getLogger(__name__)

MANIFEST = "run.json"
EPISODES = "episodes.jsonl"
FORMAT = "interactscope.egobench.run/1"
IDENTITY = ("agent_id", "user_id", "mode", "data", "tasks", "shard", "video_dir")
"""Manifest fields that must match to resume a run (settings are compared key by key)."""


class EgoRunError(RuntimeError):
    """A run folder that cannot be opened, resumed or merged; the message says why."""


class EgoInvocation(BaseModel):
    """One ``ego run`` invocation on the folder: times, command, episodes it wrote."""

    started_at: str
    ended_at: str | None = None
    command: list[str] | None = None
    written: int = 0


class EgoRunManifest(BaseModel):
    """``run.json`` of an EgoBench run: agent, user, mode, data fingerprint per variant, the
    tasks selected (per variant, after ``--tasks`` and ``--shard``), every setting, versions,
    and a summary over every episode of the folder."""

    format: str = FORMAT
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
    p = Path(path)
    if not p.exists():
        return []
    data = p.read_bytes()
    out: list[EpisodeRecord] = []
    pos, lineno = 0, 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl
        lineno += 1
        chunk = data[pos:end]
        if chunk.strip():
            try:
                rec = EpisodeRecord.model_validate_json(chunk)
            except ValidationError as exc:
                if nl >= 0 and data[nl + 1 :].strip():
                    raise EgoRunError(
                        f"{p}:{lineno}: corrupt episode record ({exc.errors()[0]['msg']})"
                    ) from None
                rec = None
            if rec is None or nl < 0:
                log.warning(
                    "%s:%d: dropping a half-written last line (%d bytes); that episode "
                    "is played again",
                    p,
                    lineno,
                    len(chunk),
                )
                if repair:
                    refuse_link(p)  # never truncate through a planted link
                    with open(p, "r+b") as fh:
                        fh.truncate(pos)
                        os.fsync(fh.fileno())
                break
            out.append(rec)
        pos = end + 1
    return _dedupe(out)


def _dedupe(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    seen: set[str] = set()
    out = []
    for r in records:
        k = record_key(r)
        if k not in seen:
            seen.add(k)
            out.append(r)
    return out


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


def differences(old: EgoRunManifest, new: EgoRunManifest) -> list[str]:
    """What forbids resuming ``old`` with ``new``: identity fields and settings, listed."""
    diffs = [
        f"{f}: {getattr(old, f)!r} != {getattr(new, f)!r}"
        for f in IDENTITY
        if getattr(old, f) != getattr(new, f)
    ]
    return diffs + [f"settings.{d}" for d in diff_settings(old.settings, new.settings)]


class EpisodeWriter:
    """Appends episode records durably; ``done`` holds the keys already written."""

    def __init__(self, path: Path, manifest: EgoRunManifest, records: list[EpisodeRecord]):
        self.path, self.manifest = path, manifest
        self.records = records
        self.done = {record_key(r) for r in records}
        self._fh = open_append(path / EPISODES)

    def append(self, rec: EpisodeRecord) -> None:
        """Write one record (flush + fsync). A key already written is an error."""
        key = record_key(rec)
        if key in self.done:
            raise EgoRunError(f"{self.path}: episode {key} already written")
        self._fh.write(rec.model_dump_json() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.done.add(key)
        self.records.append(rec)
        self.manifest.invocations[-1].written += 1

    def finish(self) -> None:
        """Record the end time and the summary over every episode in ``run.json``."""
        self.manifest.ended_at = now_iso()
        self.manifest.invocations[-1].ended_at = self.manifest.ended_at
        self.manifest.summary = summarise(self.records, len(self.manifest.keys()))
        write_manifest(self.path, self.manifest)
        self.close()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def open_episodes(
    path: str | Path, manifest: EgoRunManifest, command: list[str] | None = None
) -> EpisodeWriter:
    """Create the run folder or resume the one at ``path`` (call inside :func:`run_lock`).

    Raises:
        EgoRunError: the folder holds a run with other settings (every difference listed), or
            ``episodes.jsonl`` without ``run.json``, or a corrupt record."""
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    records: list[EpisodeRecord] = []
    inv = EgoInvocation(started_at=now_iso(), command=command)
    if (p / MANIFEST).exists():
        old = read_manifest(p)
        diffs = differences(old, manifest)
        if diffs:
            raise EgoRunError(
                f"{p} holds a run with different settings; use another --out or "
                "the original options. Differences (existing != requested): " + "; ".join(diffs)
            )
        records = read_episodes(p / EPISODES, repair=True)
        manifest.started_at = old.started_at
        manifest.invocations = old.invocations
        log.info("resuming %s: %d episode(s) already written", p, len(records))
    elif (p / EPISODES).exists() and (p / EPISODES).stat().st_size:
        raise EgoRunError(f"{p}: {EPISODES} exists without {MANIFEST}; refusing to append")
    manifest.started_at = manifest.started_at or inv.started_at
    manifest.ended_at = None
    manifest.invocations = [*manifest.invocations, inv]
    write_manifest(p, manifest)
    return EpisodeWriter(p, manifest, records)


def read_manifest(path: str | Path) -> EgoRunManifest:
    """``RUN/run.json`` of an EgoBench run.

    Raises:
        EgoRunError: no such file, or not an EgoBench run (one line)."""
    f = Path(path) / MANIFEST
    try:
        return EgoRunManifest.model_validate_json(f.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EgoRunError(f"{Path(path)}: not a run folder (no {MANIFEST})") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        raise EgoRunError(
            f"{f}: not an EgoBench run ({'.'.join(map(str, e['loc']))}: {e['msg']})"
        ) from None


def load_run(path: str | Path) -> tuple[EgoRunManifest, list[EpisodeRecord]]:
    """The manifest and every episode record of a run folder (torn last line ignored)."""
    return read_manifest(path), read_episodes(Path(path) / EPISODES)


def _shard_problems(manifests: list[EgoRunManifest], sources: list[Path]) -> list[str]:
    specs = [parse_shard(m.shard) for m in manifests]
    problems = [
        f"{s} is not a shard (run without --shard K/N)"
        for s, sp in zip(sources, specs, strict=True)
        if sp is None
    ]
    ns = {sp[1] for sp in specs if sp}
    if len(ns) > 1:
        problems.append("shards of different N: " + ", ".join(str(m.shard) for m in manifests))
    elif ns:
        (n,) = ns
        lost = sorted(set(range(1, n + 1)) - {sp[0] for sp in specs if sp})
        problems += [f"missing shard {k}/{n}" for k in lost]
    base = manifests[0].model_copy(update={"shard": None, "tasks": {}})
    for s, m in zip(sources[1:], manifests[1:], strict=True):
        other = m.model_copy(update={"shard": None, "tasks": {}})
        problems += [f"{sources[0]} vs {s}: {d}" for d in differences(base, other)]
    return problems


def merge_runs(sources: list[str | Path], out: str | Path) -> EgoRunManifest:
    """Join shard runs (``ego run --shard K/N``) into one folder.

    Raises:
        EgoRunError: fewer than two folders, ``out`` holds a run, settings differ, shards are
            missing or overlap, a shard never finished, or an episode is missing (all listed)."""
    if len(sources) < 2:
        raise EgoRunError("merge needs at least two run folders")
    outp, paths = Path(out), [Path(s) for s in sources]
    if (outp / MANIFEST).exists() or (outp / EPISODES).exists():
        raise EgoRunError(f"{outp} already holds a run; choose an empty --out")
    loaded = [load_run(p) for p in paths]
    manifests = [m for m, _ in loaded]
    problems = _shard_problems(manifests, paths)
    problems += [
        f"{p}: its run never finished; run the same command again to resume it"
        for p, m in zip(paths, manifests, strict=True)
        if m.ended_at is None
    ]
    owner: dict[str, Path] = {}
    records: list[EpisodeRecord] = []
    for p, (m, recs) in zip(paths, loaded, strict=True):
        have = {record_key(r) for r in recs}
        problems += [f"{p}: episode {k} missing" for k in m.keys() if k not in have]
        for r in recs:
            k = record_key(r)
            if k in owner:
                problems.append(f"episode {k} in both {owner[k]} and {p}")
            owner[k] = p
        records += recs
    if problems:
        raise EgoRunError("cannot merge: " + "; ".join(problems))
    tasks: dict[str, list[int]] = {}
    for m in manifests:
        for v, ids in m.tasks.items():
            tasks[v] = sorted(set(tasks.get(v, [])) | set(ids))
    merged = manifests[0].model_copy(
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
    order = {k: i for i, k in enumerate(merged.keys())}
    with run_lock(outp, "merge"):
        ordered = sorted(records, key=lambda r: order[record_key(r)])
        write_atomic(outp / EPISODES, (r.model_dump_json() + "\n" for r in ordered))
        write_manifest(outp, merged)
    return merged
