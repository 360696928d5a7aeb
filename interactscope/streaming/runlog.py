"""Run folder I/O: ``run.json`` + append-only ``responses.jsonl``, resume, shards and merge.

A run folder is self-describing and re-scorable (docs/protocol.md#run-folder-contract). Records are appended one per decision
point and flushed (``collect`` fsyncs once per batch, ``adapter.fsync``), so a killed run loses at
most the line being written; reopening the folder drops such a torn last line with a warning and resumes without duplicates or gaps.

Every process that writes a run folder (collect, merge into it, score, ego run) holds an
exclusive OS lock on ``RUN/.lock`` (:func:`run_lock`); the lock dies with the process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from interactscope.core.text import plural
from interactscope.runs.common import MANIFEST, RunLogError, now_iso, write_manifest
from interactscope.runs.folder import (
    Accounting,
    RecordWriter,
    RunFormat,
    account_checkpoint,
    clear_checkpoint,
    merge_folders,
    open_folder,
    read_records,
    rewrite,
)
from interactscope.runs.folder import dedupe as _dedupe
from interactscope.runs.folder import read_manifest as _read_manifest
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.schema import ResponseRecord, RunManifest, StageTimings
from interactscope.streaming.settings import diff_settings, restoring_sets

log = logging.getLogger(__name__)

RESPONSES = "responses.jsonl"
IDENTITY_FIELDS = ("model", "backend", "protocol", "shard")
"""Manifest fields that must match for a run folder to be resumed."""


def _differences(old: RunManifest, new: RunManifest) -> list[str]:
    return manifest_differences(old, new)


def _read_lines(path: Path, *, repair: bool) -> list[ResponseRecord]:
    """Parse ``responses.jsonl`` (torn last line dropped; :func:`interactscope.runs.folder.read_records`)."""
    return read_records(path, FORMAT, repair=repair)


def dedupe(records: Iterable[ResponseRecord]) -> list[ResponseRecord]:
    """One record per (interaction id, t): the first written wins."""
    return _dedupe(records, FORMAT.key)


class RunSummary(BaseModel):
    """Counts over every record of a run folder (``run.json``'s ``summary``), recomputed from
    ``responses.jsonl`` after each invocation so a resumed run reports the whole run.

    ``decision_points`` counts the records; ``failed_interactions`` maps an interaction id to
    its first error. Timing fields (``wall_s``, ``model_s``, the stage seconds of ``timings``)
    sum every invocation (seconds), interrupted and killed ones included as far as they were
    timed (:func:`run_totals`); ``timings`` is ``None`` when no invocation recorded one."""

    interactions: int = 0
    decision_points: int = 0
    non_silent: int = 0
    suppressed: int = 0
    errors: int = 0
    text_replaced: int = 0
    failed_interactions: dict[str, str] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    model_s: float = 0.0
    timings: StageTimings | None = None


def summarise_records(records: Iterable[ResponseRecord], n_interactions: int) -> RunSummary:
    """A :class:`RunSummary` of ``records`` (timing left at 0; the caller adds it)."""
    out = RunSummary(interactions=n_interactions)
    for r in records:
        out = count_record(out, r)
    return out


def count_record(totals: RunSummary, r: ResponseRecord) -> RunSummary:
    """``totals`` (changed in place) with one more record counted."""
    totals.decision_points += 1
    totals.non_silent += int(not r.silent and not r.error)
    totals.suppressed += int(r.suppressed)
    totals.text_replaced += int(r.text_replaced)
    totals.prompt_tokens += r.prompt_tokens or 0
    totals.completion_tokens += r.completion_tokens or 0
    if r.error:
        totals.errors += 1
        totals.failed_interactions.setdefault(r.interaction_id, r.error)
    return totals


def run_totals(
    manifest: RunManifest, tally: RunSummary, invocations: list[dict[str, Any] | None]
) -> dict[str, Any]:
    """``run.json``'s ``summary``: the counts over every record (``tally``) of the manifest's
    interactions, with the wall and model seconds and stage timings summed over the
    ``invocations``' summaries that have them: finished, interrupted (timed up to the
    interruption) and killed ones with a checkpoint (timed up to it); only a killed invocation
    without one, or a ``collect --ray`` one for the stages, adds nothing."""
    totals = tally.model_copy(update={"interactions": len(manifest.interaction_ids or [])})
    timed = [t for t in invocations if t]
    totals.wall_s = round(sum(float(t.get("wall_s") or 0) for t in timed), 3)
    totals.model_s = round(sum(float(t.get("model_s") or 0) for t in timed), 3)
    stages = [StageTimings.model_validate(t["timings"]) for t in timed if t.get("timings")]
    totals.timings = StageTimings.combine(stages) if stages else None
    return totals.model_dump()


ACCOUNTING: Accounting[ResponseRecord, RunManifest, RunSummary] = Accounting(
    start=RunSummary,
    add=count_record,
    # a caught Ctrl-C's invocation: its counts, "written" as collect's own summary has it
    summary=lambda s: {**s.model_dump(), "written": s.decision_points},
    totals=run_totals,
)
"""Invocation accounting of the streaming run folder. A killed invocation gets, on resume, the
summary its last checkpoint holds (the driver checkpoints after each synced batch:
:meth:`~interactscope.runs.folder.RecordWriter.checkpoint`), not "the records after the earlier
ones": a resume may rewrite ``responses.jsonl`` (``--retry-errors``, partial interactions
redone), so position does not tell which invocation wrote a record. Killed before its first
checkpoint it stays untimed (summary None); its records still count in the totals."""

FORMAT: RunFormat[ResponseRecord, RunManifest] = RunFormat(
    records_file=RESPONSES,
    record=ResponseRecord,
    key=lambda r: r.key,
    owner=lambda r: r.interaction_id,
    manifest=RunManifest,
    differences=_differences,
    command="collect",
    accounting=ACCOUNTING,
)
"""The streaming run folder: one :class:`ResponseRecord` per (interaction id, t)."""


class RunFolder:
    """Read access to a finished or partial run folder.

    Raises:
        RunLogError: ``path`` does not exist (``no such folder``, as ``score`` says it) or holds
            no ``run.json``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.exists():
            raise RunLogError(f"{self.path}: not a run folder (no such folder)")
        if not (self.path / MANIFEST).exists():
            raise RunLogError(f"{self.path}: not a run folder (no {MANIFEST})")

    @property
    def manifest(self) -> RunManifest:
        """``run.json`` parsed.

        Raises:
            RunLogError: unreadable or invalid ``run.json`` (one line naming the file and field).
        """
        return read_manifest(self.path / MANIFEST)

    def responses(self) -> list[ResponseRecord]:
        """All records, deduplicated, sorted by (interaction id, t). A torn last line is ignored."""
        recs = dedupe(_read_lines(self.path / RESPONSES, repair=False))
        return sorted(recs, key=lambda r: (r.interaction_id, r.t))

    def benchmark(self, **kwargs: Any):
        """Load the benchmark this run was collected on, checking its fingerprint."""

        m = self.manifest
        bench = load_benchmark(m.benchmark.path, **kwargs)
        if bench.fingerprint != m.benchmark.fingerprint:
            log.warning(
                "%s: the benchmark at %s changed since the run (fingerprint %s, run has %s)",
                self.path,
                m.benchmark.path,
                bench.fingerprint,
                m.benchmark.fingerprint,
            )
        return bench


# --------------------------------------------------------------------------- writing


class RunWriter(RecordWriter[ResponseRecord]):
    """Append-only writer of ``responses.jsonl``. Use ``open_run`` to create or resume one.

    ``finish(summary)`` / ``interrupted(wall_s)`` (:class:`~interactscope.runs.folder.RecordWriter`)
    write ``run.json`` with the run's :class:`RunSummary` over every record of the folder, not
    only of the last invocation (:data:`ACCOUNTING`); ``checkpoint(summary)`` (called by the
    driver after each synced batch) keeps the invocation's own summary so far for
    ``interrupted`` and for a kill. ``sync_every``: see
    :class:`~interactscope.runs.folder.RecordWriter` (default: fsync per record)."""

    def __init__(
        self,
        path: Path,
        manifest: RunManifest,
        records: list[ResponseRecord],
        *,
        sync_every: int = 1,
    ):
        # only non-silent records are kept in memory (history control, cooldown); a paper-scale
        # run has ~180k mostly silent records
        self._spoken: dict[str, list[ResponseRecord]] = {}
        for r in records:
            self._remember(r)
        super().__init__(path, FORMAT, records, manifest=manifest, sync_every=sync_every)

    def _appended(self, record: ResponseRecord) -> None:
        self._remember(record)

    def _remember(self, r: ResponseRecord) -> None:
        if not r.silent and not r.error:
            self._spoken.setdefault(r.interaction_id, []).append(r)

    def spoken(self, interaction_id: str) -> list[ResponseRecord]:
        """Non-silent, error-free records of one interaction written so far, in time order."""
        return sorted(self._spoken.get(interaction_id, []), key=lambda r: r.t)


def read_manifest(path: Path) -> RunManifest:
    """Parse a ``run.json`` file; raises RunLogError naming the file and the first bad field."""
    return _read_manifest(path.parent, FORMAT)


def manifest_differences(old: RunManifest, new: RunManifest) -> list[str]:
    """Differences that forbid resuming (or merging): identity fields, the subset collected
    (``collect --only/--task``), the settings that define what the run measures (execution
    settings may change), benchmark."""
    diffs = [
        f"{f}: {getattr(old, f)!r} != {getattr(new, f)!r}"
        for f in IDENTITY_FIELDS
        if getattr(old, f) != getattr(new, f)
    ]
    old_sub, new_sub = getattr(old, "subset", None), getattr(new, "subset", None)
    if old_sub != new_sub:  # collect --only / --task: resume the same subset
        diffs.append(f"subset (--only/--task): {old_sub!r} != {new_sub!r}")
    if old.benchmark.fingerprint != new.benchmark.fingerprint:
        diffs.append(
            f"benchmark: {old.benchmark.name}@{old.benchmark.fingerprint} != "
            f"{new.benchmark.name}@{new.benchmark.fingerprint}"
        )
    old_s, new_s = old.settings.model_dump(mode="json"), new.settings.model_dump(mode="json")
    old_fa, new_fa = frames_layout(old), frames_layout(new)
    if old_fa is not None and new_fa is not None:  # compared as used, however it was set
        for d in (old_s, new_s):
            d.get("adapter", {}).pop("frames_as", None)
        if old_fa != new_fa:
            diffs.append(
                f"frames_as: {old_fa!r} != {new_fa!r} (the model config's frames layout; pass "
                f"--set adapter.frames_as={old_fa} to resume with the one the run used)"
            )
    setting_diffs = [f"settings.{d}" for d in diff_settings(old_s, new_s)]
    sets = restoring_sets(old_s, new_s)
    if old_fa is not None and new_fa is not None and old_fa != new_fa:
        sets.append(f"--set adapter.frames_as={old_fa}")
    if setting_diffs:  # one line that gives the run's own settings back
        setting_diffs.append("to resume with the run's own settings: " + " ".join(sets))
    return diffs + setting_diffs


FRAMES_AS_DEFAULTS = {"transformers": "video", "vllm": "image"}
"""The ``frames_as`` of a model config that names none, per backend (``QwenOptions``)."""


def frames_layout(m: RunManifest) -> str | None:
    """How a run sent the stream frames (``frames_as``: ``image`` | ``video`` | ``video_pairs``):
    ``settings.adapter.frames_as`` (``--set``), else its recorded model config's (top level or
    under ``limits:`` / ``vllm:`` / ``transformers:``), else the backend's default (:data:`FRAMES_AS_DEFAULTS`).
    None when ``run.json`` holds no model config (older runs) or the backend has no such key."""
    cfg = (m.model_extra or {}).get("model_config")
    if not isinstance(cfg, dict):
        return None
    found = m.settings.adapter.get("frames_as")
    for where in (cfg, cfg.get("limits"), cfg.get("vllm"), cfg.get("transformers")):
        if found is None and isinstance(where, dict):
            found = where.get("frames_as")
    found = found or FRAMES_AS_DEFAULTS.get(str(cfg.get("backend") or m.backend))
    return None if found is None else str(found)


def open_run(
    path: str | Path,
    manifest: RunManifest,
    *,
    retry_errors: bool = False,
    redo_partial: dict[str, list[float]] | None = None,
    in_order: set[str] | None = None,
    sync_every: int = 1,
) -> RunWriter:
    """Create a run folder, or resume the one at ``path``.

    Resuming keeps every record already written (key: interaction id + decision time), drops a
    half-written last line with a warning, and refuses a run started with different settings
    (execution settings such as ``adapter.max_concurrency`` may change; each invocation is
    appended to ``invocations``; a killed last one gets the summary of its last checkpoint,
    :func:`~interactscope.runs.folder.account_checkpoint`). Call it inside :func:`run_lock`.

    Args:
        path: run folder (created if missing).
        manifest: the new run's manifest; on resume the original ``started_at`` is kept.
        retry_errors: drop records carrying an infrastructure ``error`` so they are collected again.
        in_order: interaction ids whose records must be collected in time order (environment
            interactions: each record's calls change the state the later ones see); with
            ``retry_errors`` such an interaction's records are dropped from its first error on,
            so the retried point and every later one are collected again after it.
        redo_partial: expected decision times per interaction id; interactions with some but not
            all of them recorded are removed and redone (Online Rolling cannot restore a session
            mid-interaction).
        sync_every: fsync the records file every N records (1: every record; see
            :class:`~interactscope.runs.folder.RecordWriter`).

    Raises:
        RunLogError: the folder holds a different run (the message lists every differing setting)
            or a corrupt record before the last line.
    """
    p = Path(path)
    old, records = open_folder(p, manifest, FORMAT)
    if old is not None:
        # retried first: an Online Rolling interaction whose error records go is then partial
        kept = retried(records, in_order) if retry_errors else records
        drop = partial_interactions(kept, redo_partial) if redo_partial else set()
        if drop:
            log.warning(
                "redoing %d partially collected interaction(s): %s", len(drop), sorted(drop)
            )
        keep = [r for r in kept if r.interaction_id not in drop]
        if len(keep) != len(records):
            rewrite(p / RESPONSES, keep)
            records = keep
        manifest.started_at = old.started_at
        manifest.ended_at = None
        # a killed invocation: its stage times as of its last checkpoint (a kill writes none)
        manifest.invocations = account_checkpoint(p, old.invocations) + manifest.invocations
        log.info("resuming %s: %d records already written", p, len(records))
    manifest.started_at = manifest.started_at or now_iso()
    write_manifest(p, manifest)
    clear_checkpoint(p)  # folded in above (or stale): this invocation writes its own
    return RunWriter(p, manifest, records, sync_every=sync_every)


def retried(
    records: list[ResponseRecord], in_order: set[str] | None = None
) -> list[ResponseRecord]:
    """The records ``collect --retry-errors`` keeps: those without an ``error``, and for an
    interaction in ``in_order`` only its records before its first error (by time), so the points
    collected again come after every kept one in time (docs/protocol.md#environments)."""
    first_error: dict[str, float] = {}
    for r in records:
        if r.error and r.interaction_id in (in_order or ()):
            first_error[r.interaction_id] = min(r.t, first_error.get(r.interaction_id, r.t))
    return [
        r for r in records if not r.error and r.t < first_error.get(r.interaction_id, float("inf"))
    ]


def partial_interactions(
    records: list[ResponseRecord], expected: dict[str, list[float]]
) -> set[str]:
    """Interaction ids with some but not all of their expected decision times recorded."""
    have: dict[str, set[float]] = {}
    for r in records:
        have.setdefault(r.interaction_id, set()).add(r.t)
    return {
        iid for iid, ts in have.items() if iid in expected and ts and not set(expected[iid]) <= ts
    }


# --------------------------------------------------------------------------- merge


def missing_points(
    records: Iterable[ResponseRecord], expected: dict[str, list[float]]
) -> dict[str, list[float]]:
    """Expected decision times (s) without a record, per interaction id (only ids with gaps)."""
    have: dict[str, set[float]] = {}
    for r in records:
        have.setdefault(r.interaction_id, set()).add(r.t)
    out: dict[str, list[float]] = {}
    for iid, ts in expected.items():
        got = have.get(iid, set())
        miss = [t for t in ts if round(t, 3) not in got]
        if miss:
            out[iid] = miss
    return out


def describe_missing(
    missing: dict[str, list[float]], expected: dict[str, list[float]]
) -> list[str]:
    """One line per interaction: ``ID: no records`` or ``ID: 3 of 9 decision points missing
    (t = 6, 7, 7.6)``."""
    out = []
    for iid in sorted(missing):
        ts = missing[iid]
        n = len(expected.get(iid, ts))
        if len(ts) == n:
            out.append(f"{iid}: no records ({plural(n, 'decision point')})")
        else:
            shown = ", ".join(f"{t:g}" for t in ts[:8]) + (", ..." if len(ts) > 8 else "")
            out.append(f"{iid}: {len(ts)} of {plural(n, 'decision point')} missing (t = {shown})")
    return out


def merge_runs(
    sources: list[str | Path],
    out: str | Path,
    *,
    expected: dict[str, list[float]] | None = None,
    allow_incomplete: bool = False,
) -> RunManifest:
    """Join shard run folders into one.

    Checks that the shards share settings, model and benchmark, share N and cover shards 1..N,
    that every shard's collect finished, and (with ``expected``) that every expected decision
    point of every interaction is present.

    Args:
        sources: shard run folders (``collect --shard K/N``).
        out: new run folder; locked while it is written.
        expected: decision times (s) per interaction id of the whole benchmark; without it only
            the shards' own records are checked for overlap.
        allow_incomplete: merge even when shards are missing, unfinished or lack records; what
            is missing is recorded in the merged ``run.json`` (``incomplete``) and the merged run
            is marked unfinished.

    Raises:
        RunLogError: fewer than 2 sources, ``out`` already holds a run, setting/benchmark
            mismatches between shards (listed), overlapping interactions/records, or (unless
            ``allow_incomplete``) missing shards or decision points, listed.
    """

    def missing(_manifests: list[RunManifest], records: list[ResponseRecord]) -> list[str]:
        if expected is None:
            return []
        return describe_missing(missing_points(records, expected), expected)

    def combine(manifests: list[RunManifest], records: list[ResponseRecord], incomplete):
        ids = sorted({i for m in manifests for i in m.interaction_ids or []})
        ended = [m.ended_at for m in manifests]
        return manifests[0].model_copy(
            update={
                "shard": None,
                "interaction_ids": ids or None,
                "started_at": min((m.started_at or "") for m in manifests) or None,
                "ended_at": None if incomplete or None in ended else max(e or "" for e in ended),
                "merged_from": [str(Path(s).resolve()) for s in sources],
                "summary": summarise_records(records, len(ids)).model_dump(),
                "invocations": [inv for m in manifests for inv in m.invocations],
                "incomplete": incomplete or None,
            }
        )

    return merge_folders(
        sources,
        out,
        FORMAT,
        per_shard=("shard",),
        missing=missing,
        combine=combine,
        order=lambda _m: lambda r: (r.interaction_id, r.t),
        allow_incomplete=allow_incomplete,
        incomplete_hint=" (--allow-incomplete merges anyway)",
    )
