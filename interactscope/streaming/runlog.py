"""Run folder I/O: ``run.json`` + append-only ``responses.jsonl``, resume, shards and merge.

A run folder is self-describing and re-scorable (docs/protocol.md#run-folder-contract). Records are appended one per decision
point, flushed and fsynced, so a killed run loses at most the line being written; reopening the
folder drops such a torn last line with a warning and resumes without duplicates or gaps.

Every process that writes a run folder (collect, merge into it, score, ego run) holds an
exclusive OS lock on ``RUN/.lock`` (:func:`run_lock`); the lock dies with the process.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from interactscope.core.errors import first_problem
from interactscope.core.files import open_append, refuse_link, write_atomic
from interactscope.runs.common import (
    MANIFEST,
    RunLogError,
    now_iso,
    parse_shard,
    run_lock,
    write_manifest,
)
from interactscope.streaming.schema import ResponseRecord, RunManifest, StageTimings
from interactscope.streaming.settings import diff_settings

log = logging.getLogger(__name__)

RESPONSES = "responses.jsonl"
IDENTITY_FIELDS = ("model", "backend", "protocol", "shard")
"""Manifest fields that must match for a run folder to be resumed."""


# --------------------------------------------------------------------------- reading


def _read_lines(path: Path, *, repair: bool) -> list[ResponseRecord]:
    """Parse ``responses.jsonl``. A torn last line (no newline, or unparseable) is dropped with a
    warning, and with ``repair`` truncated from the file. A bad line elsewhere is an error."""
    if not path.exists():
        return []
    data = path.read_bytes()
    records: list[ResponseRecord] = []
    pos = 0
    lineno = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl
        chunk = data[pos:end]
        lineno += 1
        if chunk.strip():
            try:
                rec = ResponseRecord.model_validate_json(chunk)
            except ValueError as exc:
                if nl >= 0 and data[nl + 1 :].strip():
                    why = (
                        f"{first_problem(exc)}; fix or delete that line (collected again on resume)"
                    )
                    raise RunLogError(f"{path}:{lineno}: corrupt record, {why}") from exc
                rec = None
            # A last line that does not parse, or lacks its newline, was being written when the
            # run was killed: drop it (it is collected again on resume).
            if rec is None or nl < 0:
                log.warning(
                    "%s:%d: dropping a half-written last line (%d bytes)", path, lineno, len(chunk)
                )
                if repair:
                    refuse_link(path)  # never truncate through a planted link
                    with open(path, "r+b") as fh:
                        fh.truncate(pos)
                        fh.flush()
                        os.fsync(fh.fileno())
                break
            records.append(rec)
        pos = end + 1
    return records


def dedupe(records: Iterable[ResponseRecord]) -> list[ResponseRecord]:
    """One record per (interaction id, t): the first written wins."""
    seen: set[tuple[str, float]] = set()
    out = []
    for r in records:
        if r.key in seen:
            continue
        seen.add(r.key)
        out.append(r)
    return out


class RunSummary(BaseModel):
    """Counts over every record of a run folder (``run.json``'s ``summary``), recomputed from
    ``responses.jsonl`` after each invocation so a resumed run reports the whole run.

    ``decision_points`` counts the records; ``failed_interactions`` maps an interaction id to
    its first error. Timing fields (``wall_s``, ``model_s``, the stage seconds of ``timings``)
    sum every invocation (seconds); ``timings`` is ``None`` when no invocation recorded one."""

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
        out.decision_points += 1
        out.non_silent += int(not r.silent and not r.error)
        out.suppressed += int(r.suppressed)
        out.text_replaced += int(r.text_replaced)
        out.prompt_tokens += r.prompt_tokens or 0
        out.completion_tokens += r.completion_tokens or 0
        if r.error:
            out.errors += 1
            out.failed_interactions.setdefault(r.interaction_id, r.error)
    return out


class RunFolder:
    """Read access to a finished or partial run folder."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
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
        from interactscope.streaming.bench import load_benchmark

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


class RunWriter:
    """Append-only writer. Use ``open_run`` to create or resume one.

    Keeps running counts over every record of the folder (:class:`RunSummary`) so ``finish``
    writes a summary of the whole run, not only of the last invocation."""

    def __init__(self, path: Path, manifest: RunManifest, records: list[ResponseRecord]):
        self.path = path
        self.manifest = manifest
        self.done: set[tuple[str, float]] = {r.key for r in records}
        # only non-silent records are kept in memory (history control, cooldown); a paper-scale
        # run has ~180k mostly silent records
        self._spoken: dict[str, list[ResponseRecord]] = {}
        for r in records:
            self._remember(r)
        self.totals = summarise_records(records, len(manifest.interaction_ids or []))
        self._fh = open_append(path / RESPONSES)

    def append(self, record: ResponseRecord) -> None:
        """Write one record durably (flush + fsync). A key already present is an error."""
        if record.key in self.done:
            raise RunLogError(f"{self.path}: record {record.key} already written")
        self._fh.write(record.model_dump_json() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.done.add(record.key)
        self._remember(record)
        self.totals = _add_record(self.totals, record)

    def _remember(self, r: ResponseRecord) -> None:
        if not r.silent and not r.error:
            self._spoken.setdefault(r.interaction_id, []).append(r)

    def spoken(self, interaction_id: str) -> list[ResponseRecord]:
        """Non-silent, error-free records of one interaction written so far, in time order."""
        return sorted(self._spoken.get(interaction_id, []), key=lambda r: r.t)

    def finish(self, summary: dict[str, Any] | None = None) -> None:
        """Mark the run finished: ``summary`` (this invocation's counts) goes to the last
        invocation; the manifest's ``summary`` is recomputed over every record, with the
        invocations' wall and model seconds summed."""
        self.manifest.ended_at = now_iso()
        invs = self.manifest.invocations
        if invs:
            invs[-1].ended_at = self.manifest.ended_at
            if summary is not None:
                invs[-1].summary = summary
        totals = self.totals.model_copy()
        timed = [i.summary for i in invs if i.summary] or ([summary] if summary else [])
        totals.wall_s = round(sum(float(t.get("wall_s") or 0) for t in timed), 3)
        totals.model_s = round(sum(float(t.get("model_s") or 0) for t in timed), 3)
        stages = [StageTimings.model_validate(t["timings"]) for t in timed if t.get("timings")]
        totals.timings = StageTimings.combine(stages) if stages else None
        self.manifest.summary = totals.model_dump()
        write_manifest(self.path, self.manifest)
        self.close()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _add_record(totals: RunSummary, r: ResponseRecord) -> RunSummary:
    one = summarise_records([r], 0)
    for name in ("decision_points", "non_silent", "suppressed", "errors", "text_replaced",
                 "prompt_tokens", "completion_tokens"):  # fmt: skip
        setattr(totals, name, getattr(totals, name) + getattr(one, name))
    for iid, err in one.failed_interactions.items():
        totals.failed_interactions.setdefault(iid, err)
    return totals


def read_manifest(path: Path) -> RunManifest:
    """Parse a ``run.json`` file; raises RunLogError naming the file and the first bad field."""
    from pydantic import ValidationError

    try:
        return RunManifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(map(str, e["loc"])) or "<file>"
        raise RunLogError(f"{path}: not a valid run manifest ({where}: {e['msg']})") from exc
    except OSError as exc:
        raise RunLogError(f"{path}: cannot read ({exc.strerror})") from exc


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
    diffs += [f"settings.{d}" for d in diff_settings(old.settings, new.settings)]
    return diffs


def open_run(
    path: str | Path,
    manifest: RunManifest,
    *,
    retry_errors: bool = False,
    redo_partial: dict[str, list[float]] | None = None,
    in_order: set[str] | None = None,
) -> RunWriter:
    """Create a run folder, or resume the one at ``path``.

    Resuming keeps every record already written (key: interaction id + decision time), drops a
    half-written last line with a warning, and refuses a run started with different settings
    (execution settings such as ``adapter.max_concurrency`` may change; each invocation is
    appended to ``invocations``). Call it inside :func:`run_lock`.

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

    Raises:
        RunLogError: the folder holds a different run (the message lists every differing setting)
            or a corrupt record before the last line.
    """
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    mpath = p / MANIFEST
    records: list[ResponseRecord] = []
    if mpath.exists():
        old = read_manifest(mpath)
        diffs = manifest_differences(old, manifest)
        if diffs:
            raise RunLogError(
                f"{p} holds a run with different settings; refusing to resume. Use another --out "
                "or the original options. Differences (existing != requested):\n  "
                + "\n  ".join(diffs)
            )
        records = dedupe(_read_lines(p / RESPONSES, repair=True))
        # retried first: an Online Rolling interaction whose error records go is then partial
        kept = retried(records, in_order) if retry_errors else records
        drop = partial_interactions(kept, redo_partial) if redo_partial else set()
        if drop:
            log.warning(
                "redoing %d partially collected interaction(s): %s", len(drop), sorted(drop)
            )
        keep = [r for r in kept if r.interaction_id not in drop]
        if len(keep) != len(records):
            _rewrite(p / RESPONSES, keep)
            records = keep
        manifest.started_at = old.started_at
        manifest.ended_at = None
        manifest.invocations = old.invocations + manifest.invocations
        log.info("resuming %s: %d records already written", p, len(records))
    elif (p / RESPONSES).exists() and (p / RESPONSES).stat().st_size:
        raise RunLogError(f"{p}: {RESPONSES} exists without {MANIFEST}; refusing to append")
    manifest.started_at = manifest.started_at or now_iso()
    write_manifest(p, manifest)
    return RunWriter(p, manifest, records)


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


def _rewrite(path: Path, records: list[ResponseRecord]) -> None:
    write_atomic(path, (r.model_dump_json() + "\n" for r in records))


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
            out.append(f"{iid}: no records ({n} decision points)")
        else:
            shown = ", ".join(f"{t:g}" for t in ts[:8]) + (", ..." if len(ts) > 8 else "")
            out.append(f"{iid}: {len(ts)} of {n} decision points missing (t = {shown})")
    return out


def _shard_problems(folders: list[RunFolder], manifests: list[RunManifest]) -> list[str]:
    """Shards must share N, cover 1..N once each, and every shard's collect must have finished."""
    problems: list[str] = []
    specs = [parse_shard(m.shard) if m.shard else None for m in manifests]
    ns = {sp[1] for sp in specs if sp is not None}
    if any(sp is None for sp in specs):
        problems += [f"{f.path} is not a shard (collected without --shard K/N)"
                     for f, sp in zip(folders, specs, strict=True) if sp is None]  # fmt: skip
    if len(ns) > 1:
        problems.append(
            "shards of different N: "
            + ", ".join(f"{f.path} is {m.shard}" for f, m in zip(folders, manifests, strict=True))
        )
    elif len(ns) == 1:
        (n,) = ns
        have = {sp[0] for sp in specs if sp is not None}
        lost = sorted(set(range(1, n + 1)) - have)
        if lost:
            problems.append("missing shard(s): " + ", ".join(f"{k}/{n}" for k in lost))
    for f, m in zip(folders, manifests, strict=True):
        if m.ended_at is None:
            problems.append(
                f"{f.path}: its collect never finished (killed or still running); "
                "run the same collect command again to resume it"
            )
    return problems


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
    if len(sources) < 2:
        raise RunLogError("merge needs at least two run folders")
    outp = Path(out)
    _refuse_existing(outp)
    folders = [RunFolder(s) for s in sources]
    manifests = [f.manifest for f in folders]
    problems = _mismatch_problems(folders, manifests)
    all_records, overlap = _gather(folders)
    problems += overlap
    if problems:
        raise RunLogError("cannot merge:\n  " + "\n  ".join(problems))
    incomplete = _shard_problems(folders, manifests)
    if expected is not None:
        incomplete += describe_missing(missing_points(all_records, expected), expected)
    if incomplete and not allow_incomplete:
        raise RunLogError(
            "cannot merge, the shards are incomplete (--allow-incomplete merges anyway):\n  "
            + "\n  ".join(incomplete)
        )
    ids: list[str] = []
    for m in manifests:
        ids.extend(m.interaction_ids or [])
    ended = [m.ended_at for m in manifests]
    merged = manifests[0].model_copy(
        update={
            "shard": None,
            "interaction_ids": sorted(set(ids)) or None,
            "started_at": min((m.started_at or "") for m in manifests) or None,
            "ended_at": None if incomplete or None in ended else max(e or "" for e in ended),
            "merged_from": [str(Path(s).resolve()) for s in sources],
            "summary": summarise_records(all_records, len(set(ids))).model_dump(),
            "invocations": [inv for m in manifests for inv in m.invocations],
            "incomplete": incomplete or None,
        }
    )
    with run_lock(outp, "merge"):
        _refuse_existing(outp)
        _rewrite(outp / RESPONSES, sorted(all_records, key=lambda r: (r.interaction_id, r.t)))
        write_manifest(outp, merged)
    return merged


def _refuse_existing(outp: Path) -> None:
    if (outp / MANIFEST).exists() or (outp / RESPONSES).exists():
        raise RunLogError(f"{outp} already holds a run; choose an empty --out")


def _mismatch_problems(folders: list[RunFolder], manifests: list[RunManifest]) -> list[str]:
    base = manifests[0]
    problems: list[str] = []
    for f, m in zip(folders[1:], manifests[1:], strict=True):
        m_cmp = m.model_copy(update={"shard": base.shard})
        for d in manifest_differences(base, m_cmp):
            problems.append(f"{folders[0].path} vs {f.path}: {d}")
    return problems


def _gather(folders: list[RunFolder]) -> tuple[list[ResponseRecord], list[str]]:
    owner: dict[str, Path] = {}
    problems: list[str] = []
    records: list[ResponseRecord] = []
    for f in folders:
        recs = f.responses()
        for iid in sorted({r.interaction_id for r in recs}):
            if iid in owner:
                problems.append(f"interaction {iid} appears in both {owner[iid]} and {f.path}")
            owner[iid] = f.path
        records.extend(recs)
    return records, problems
