"""ONE append-only run folder, generic over the record type, its key and the manifest.

A run folder is ``RUN/run.json`` (the manifest: what the run measures, provenance, a summary)
plus one append-only JSON-lines file of records (``responses.jsonl`` for the streaming
protocol, ``episodes.jsonl`` for EgoBench). Each benchmark describes its folder once as a
:class:`RunFormat` (record type, key function, manifest type, identity rule) and gets from here:

- torn-line repair: a killed writer leaves at most one half-written last line; reading drops it
  with a warning (``repair`` also cuts it from the file), a bad line before the last is an error;
- dedupe (the first record of a key wins) and an append-only writer (flush + fsync per record by
  default, :attr:`RecordWriter.sync_every`) that refuses a key already written;
- open/resume identity: a folder is resumed only by a run whose manifest has no differences;
- invocation accounting (:class:`Accounting`): each invocation's end time, summary and
  ``interrupted`` flag, the run's totals over every record (``run.json``'s ``summary``) and the
  records of an invocation killed outright, filled in on resume; the running invocation's
  summary checkpointed in ``RUN/.checkpoint.json`` (:meth:`RecordWriter.checkpoint`), for a
  kill;
- the shard check and merge completeness of ``merge`` (shards share N, cover 1..N, finished);
- the lock and provenance are in :mod:`interactscope.runs.common`.

Nothing here knows either benchmark: ``runs/`` imports nothing from ``streaming/`` or
``egobench/`` (tests/test_architecture.py).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

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

log = logging.getLogger(__name__)

# torn last lines already warned about in this process: one command (e.g. `score`) reads the
# same records file several times, and one warning each is enough
_TORN_WARNED: set[tuple[str, int, int]] = set()

R = TypeVar("R", bound=BaseModel)
M = TypeVar("M", bound=BaseModel)
S = TypeVar("S")


@dataclass(frozen=True)
class Accounting(Generic[R, M, S]):
    """How ``run.json`` accounts for the invocations of one benchmark's run folder: the hooks
    each benchmark hands in (like the key function); the bookkeeping is :class:`RecordWriter`'s.

    A *tally* (type S) is a running count over records, folded one record at a time so a run of
    ~10^5 records need not be held in memory. The writer keeps two: over every record of the
    folder, and over the records of this invocation.

    Attributes:
        start: a new, empty tally.
        add: ``(tally, record) -> tally`` with ``record`` counted in.
        summary: ``tally -> dict``: one invocation's ``summary`` (the writer adds ``wall_s``).
        totals: ``(manifest, run tally, [summary of each invocation, None where unknown]) ->
            dict``: ``run.json``'s ``summary`` over the whole run.
    """

    start: Callable[[], S]
    add: Callable[[S, R], S]
    summary: Callable[[S], dict[str, Any]]
    totals: Callable[[Any, S, list[dict[str, Any] | None]], dict[str, Any]]

    def tally(self, records: Iterable[R]) -> S:
        """A tally of ``records``."""
        out = self.start()
        for r in records:
            out = self.add(out, r)
        return out


@dataclass(frozen=True)
class RunFormat(Generic[R, M]):
    """How one benchmark's run folder looks: what each benchmark hands in.

    Attributes:
        records_file: name of the JSON-lines file inside the folder.
        record: the pydantic type of one line.
        key: a record's identity; one record per key (the first written wins).
        manifest: the pydantic type of ``run.json``; it must have ``shard`` (``"K/N"`` or None)
            and ``ended_at`` (None while the run is unfinished) fields.
        differences: ``(existing, requested) -> [difference, ...]``: what forbids resuming (or
            merging) one manifest with the other; empty when they describe the same run.
        owner: the unit merge checks for overlap between shards (streaming: the interaction id,
            EgoBench: the episode key); defaults to ``key``.
        error: the exception raised for every problem (a subclass of RunLogError).
        noun: what a record is called in messages ("record", "episode").
        owner_noun: what an owner is called in messages ("interaction", "episode").
        manifest_noun: what ``run.json`` is in "not a valid ..." messages.
        command: the command that writes the folder, named in "run it again" hints.
        torn_note: appended to the torn-last-line warning (what happens to that unit).
        accounting: how the writer's :meth:`~RecordWriter.finish` and
            :meth:`~RecordWriter.interrupted` fill ``run.json`` (None: a writer of records only).
    """

    records_file: str
    record: type[R]
    key: Callable[[R], Hashable]
    manifest: type[M]
    differences: Callable[[M, M], list[str]]
    owner: Callable[[R], Hashable] | None = None
    error: type[RunLogError] = RunLogError
    noun: str = "record"
    owner_noun: str = "interaction"
    manifest_noun: str = "a valid run manifest"
    command: str = "command"
    torn_note: str = ""
    accounting: Accounting | None = None

    def owner_of(self, record: R) -> Hashable:
        return (self.owner or self.key)(record)


# --------------------------------------------------------------------------- reading


def read_records(path: Path, fmt: RunFormat[R, M], *, repair: bool = False) -> list[R]:
    """Parse a records file line by line, in file order (duplicates kept; see :func:`dedupe`).

    A torn last line (no newline, or unparseable) was being written when the run was killed: it
    is dropped with a warning (the unit is done again on resume) and, with ``repair``, truncated
    from the file. A missing file holds no records.

    Raises:
        fmt.error: a line that does not parse before the last one (names file and line).
    """
    if not path.exists():
        return []
    data = path.read_bytes()
    out: list[R] = []
    pos = lineno = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl
        chunk = data[pos:end]
        lineno += 1
        if chunk.strip():
            rec = _parse_line(path, lineno, chunk, fmt, last=nl < 0 or not data[nl + 1 :].strip())
            if rec is None or nl < 0:
                key = (str(path.resolve()), len(data), lineno)
                if key not in _TORN_WARNED:
                    _TORN_WARNED.add(key)
                    log.warning(
                        "%s:%d: dropping a half-written last line (%d bytes)%s",
                        path,
                        lineno,
                        len(chunk),
                        fmt.torn_note,
                    )
                if repair:
                    _truncate(path, pos)
                break
            out.append(rec)
        pos = end + 1
    return out


_LINE_ONE = re.compile(r"at line 1 column (\d+)")


def _parse_line(path: Path, lineno: int, chunk: bytes, fmt: RunFormat, *, last: bool):
    """One record, or None for an unparseable last line; a bad line elsewhere raises."""
    try:
        return fmt.record.model_validate_json(chunk)
    except ValueError as exc:
        if last:
            return None
        # pydantic reads the line as a document of its own: "at line 1 column 6" is that line's
        why = _LINE_ONE.sub(r"at column \1", first_problem(exc))
        why = f"{why}; fix or delete that line (collected again on resume)"
        what = fmt.noun if fmt.noun == "record" else f"{fmt.noun} record"
        raise fmt.error(f"{path}:{lineno}: corrupt {what}, {why}") from None


def _truncate(path: Path, size: int) -> None:
    refuse_link(path)  # never truncate through a planted link
    with open(path, "r+b") as fh:
        fh.truncate(size)
        fh.flush()
        os.fsync(fh.fileno())


def dedupe(records: Iterable[R], key: Callable[[R], Hashable]) -> list[R]:
    """One record per ``key``: the first written wins (file order kept)."""
    seen: set[Hashable] = set()
    out = []
    for r in records:
        k = key(r)
        if k not in seen:
            seen.add(k)
            out.append(r)
    return out


def load_records(path: Path, fmt: RunFormat[R, M], *, repair: bool = False) -> list[R]:
    """:func:`read_records` then :func:`dedupe` by the format's key."""
    return dedupe(read_records(path, fmt, repair=repair), fmt.key)


def read_manifest(folder: str | Path, fmt: RunFormat[R, M]) -> M:
    """``FOLDER/run.json`` parsed as the format's manifest type.

    Raises:
        fmt.error: no ``run.json`` ("not a run folder"), unreadable, or invalid (one line naming
            the file and the first bad field).
    """
    f = Path(folder) / MANIFEST
    try:
        return fmt.manifest.model_validate_json(f.read_bytes())
    except FileNotFoundError:
        raise fmt.error(f"{Path(folder)}: not a run folder (no {MANIFEST})") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(map(str, e["loc"]))
        why = f"{where}: {e['msg']}" if where else e["msg"]  # no field: the JSON itself is bad
        raise fmt.error(f"{f}: not {fmt.manifest_noun} ({why})") from None
    except OSError as exc:
        raise fmt.error(f"{f}: cannot read ({exc.strerror})") from None


def rewrite(path: Path, records: Iterable[BaseModel]) -> None:
    """Replace a records file with ``records`` (temp file, fsync, rename: a reader never sees
    half of it)."""
    write_atomic(path, (r.model_dump_json() + "\n" for r in records))


# --------------------------------------------------------------------------- writing

CHECKPOINT = ".checkpoint.json"
"""The running invocation's summary so far (:meth:`RecordWriter.checkpoint`): rewritten after
each synced batch, removed once ``run.json`` accounts for the invocation."""


class Checkpoint(BaseModel):
    """``RUN/.checkpoint.json``: the ``summary`` so far of the invocation started at
    ``started_at`` (its ``invocations[k].started_at``), as of ``at`` (ISO 8601 UTC)."""

    model_config = ConfigDict(extra="ignore")

    started_at: str | None = None
    at: str
    summary: dict[str, Any]


class RecordWriter(Generic[R]):
    """Append-only writer of one run folder's records file, and the accounting of the
    invocation that writes it.

    ``done`` holds the keys already in the file. Each :meth:`append` writes one JSON line and
    flushes; every ``sync_every`` appends the file is fsynced (1, the default: every record is
    durable before ``append`` returns, so a kill loses at most the line being written; a larger
    N trades up to N-1 records on a power loss for fewer syncs; 0 syncs only in :meth:`sync`
    and :meth:`close`). Subclasses keep their own running state in :meth:`_appended`.

    With a ``manifest`` (which has ``ended_at``, ``summary`` and ``invocations``, the last one
    being this invocation) and the format's :class:`Accounting`, :meth:`finish` and
    :meth:`interrupted` write ``run.json``; ``run_tally`` counts every record of the folder,
    ``tally`` those this invocation appended, ``t0`` is its start (``time.perf_counter``, s),
    ``latest`` the summary of its last :meth:`checkpoint` (None before the first).
    """

    def __init__(
        self,
        path: Path,
        fmt: RunFormat[R, BaseModel],
        records: list[R],
        *,
        manifest: Any = None,
        sync_every: int = 1,
    ):
        self.path = path
        self.fmt = fmt
        self.manifest = manifest
        self.sync_every = sync_every
        self.done: set[Hashable] = {fmt.key(r) for r in records}
        acct = fmt.accounting
        self.run_tally = acct.tally(records) if acct else None
        self.tally = acct.start() if acct else None
        self.t0 = time.perf_counter()
        self.latest: dict[str, Any] | None = None
        self._unsynced = 0
        self._fh = open_append(path / fmt.records_file)

    def append(self, record: R) -> None:
        """Write one record (durably under the sync policy).

        Raises:
            fmt.error: a record with this key is already written.
        """
        key = self.fmt.key(record)
        if key in self.done:
            raise self.fmt.error(f"{self.path}: {self.fmt.noun} {key} already written")
        self._fh.write(record.model_dump_json() + "\n")
        self._fh.flush()
        self._unsynced += 1
        if self.sync_every and self._unsynced >= self.sync_every:
            self.sync()
        self.done.add(key)
        if acct := self.fmt.accounting:
            self.run_tally = acct.add(self.run_tally, record)
            self.tally = acct.add(self.tally, record)
        self._appended(record)

    def _appended(self, record: R) -> None:
        """Hook: called after each record is written."""

    def invocation_summary(self, wall_s: float | None = None) -> dict[str, Any]:
        """This invocation's ``summary``: the format's summary of the records it appended, with
        ``wall_s`` (s; default: since the writer was made), rounded to ms."""
        wall = time.perf_counter() - self.t0 if wall_s is None else wall_s
        return {**self._accounting().summary(self.tally), "wall_s": round(wall, 3)}

    def _accounting(self) -> Accounting:
        if self.fmt.accounting is None or self.manifest is None:  # a programming error
            raise TypeError("finish/interrupted need a manifest and the format's accounting")
        return self.fmt.accounting

    def finish(self, summary: dict[str, Any] | None = None) -> None:
        """Mark the run finished and write ``run.json``: the last invocation gets its end time
        and ``summary`` (default: :meth:`invocation_summary`), the manifest the run's totals
        over every record (the format's ``totals``). Closes the writer.

        Raises:
            TypeError: a writer made without a manifest, or for a format without accounting.
        """
        self._accounting()
        self.manifest.ended_at = now_iso()
        if summary is None:
            summary = self.invocation_summary()
        self._account(self.manifest.ended_at, summary)

    def checkpoint(self, summary: dict[str, Any], *, persist: bool = True) -> None:
        """Note this invocation's own summary so far (counts, ``wall_s``, stage timings: what
        the benchmark's driver measures; the streaming driver calls it after each synced
        batch): :meth:`interrupted` summarises the invocation by the latest one. With
        ``persist`` it is also written to ``RUN/`` :data:`CHECKPOINT` (temp file and rename,
        no fsync: it survives the process being killed, not a power loss), which the next
        invocation gives a killed one (:func:`account_checkpoint`).

        Raises:
            OSError: the checkpoint cannot be written (ENOSPC, ...).
        """
        self.latest = summary
        if persist:
            invs = getattr(self.manifest, "invocations", None)
            cp = Checkpoint(
                started_at=invs[-1].started_at if invs else None, at=now_iso(), summary=summary
            )
            write_atomic(self.path / CHECKPOINT, cp.model_dump_json(), sync=False)

    def interrupted(self, wall_s: float | None = None) -> None:
        """A caught Ctrl-C or SIGTERM (or an error that stops the run): like :meth:`finish`,
        with the last invocation marked ``interrupted`` and summarised by the latest
        :meth:`checkpoint` (the driver's own figures up to the interruption, timings included),
        else by :meth:`invocation_summary` (``wall_s``: s, the invocation so far), while the run
        stays unfinished (``ended_at`` None) and resumable. An invocation killed outright
        (SIGKILL, power loss) is accounted on resume (:func:`account_checkpoint`,
        :func:`account_killed`)."""
        if self.manifest.invocations:
            self.manifest.invocations[-1].interrupted = True
        summary = self.latest if self.latest is not None else self.invocation_summary(wall_s)
        self._account(now_iso(), summary)

    def _account(self, ended_at: str, summary: dict[str, Any]) -> None:
        invs = self.manifest.invocations
        if invs:
            invs[-1].ended_at = ended_at
            invs[-1].summary = summary
        # a manifest from before invocations were recorded: this one is the only one known
        summaries = [i.summary for i in invs] if invs else [summary]
        self.manifest.summary = self._accounting().totals(self.manifest, self.run_tally, summaries)
        self.sync()
        write_manifest(self.path, self.manifest)
        self.close()
        clear_checkpoint(self.path)  # after run.json: a crash in between leaves both, harmless

    def sync(self) -> None:
        """fsync what was appended so far."""
        if not self._fh.closed and self._unsynced:
            self._unsynced = 0  # first: a failed fsync is not retried by close() in a finally
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self.sync()
            self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def account_killed(invocations: list[Any], records: list[R], fmt: RunFormat[R, Any]) -> list[Any]:
    """Invocations with a killed last one (no summary, no end time: SIGKILL or power loss)
    given the records it wrote: those after the ``written`` of the earlier invocations (records
    are kept in append order), summarised by the format's accounting with ``wall_s`` None
    (unknown). Other invocation lists come back as they are.

    Needs invocations with a ``written`` count and a records file only ever appended to (a
    resume that rewrites it, e.g. streaming's ``--retry-errors``, breaks the attribution).
    """
    if not invocations or invocations[-1].summary is not None or invocations[-1].ended_at:
        return invocations  # finished (runs from before per-invocation summaries included)
    before = sum(i.written for i in invocations[:-1])
    mine = records[before:]
    summary = {**fmt.accounting.summary(fmt.accounting.tally(mine)), "wall_s": None}
    last = invocations[-1].model_copy(update={"written": len(mine), "summary": summary})
    return [*invocations[:-1], last]


def read_checkpoint(folder: Path) -> Checkpoint | None:
    """``FOLDER/.checkpoint.json``, or None when there is none or it cannot be read (a warning
    names the file: a power loss can leave it empty, it was never fsynced)."""
    f = folder / CHECKPOINT
    try:
        return Checkpoint.model_validate_json(f.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else first_problem(exc)
        log.warning(
            "%s: unreadable (%s), ignored: the killed invocation's stage times are lost, its "
            "records still count",
            f,
            why,
        )
        return None


def account_checkpoint(folder: Path, invocations: list[Any]) -> list[Any]:
    """Invocations with a killed last one (no summary, no end time: SIGKILL, OOM) given the
    summary of its last checkpoint in ``folder`` (:meth:`RecordWriter.checkpoint`, same
    ``started_at``), with ``checkpoint_at`` (its ISO time): its counts, wall and stage seconds
    up to its last synced batch, so the run's totals include them; what it did after that
    checkpoint is lost (its records are still counted in the run's totals). Without a matching
    checkpoint (killed before its first batch was synced, a folder written before checkpoints
    existed, an unreadable file) the invocation stays untimed. Other lists come back as they
    are."""
    if not invocations:
        return invocations
    last = invocations[-1]
    if last.summary is not None or last.ended_at:
        return invocations  # finished or interrupted: already accounted
    cp = read_checkpoint(folder)
    if cp is None or cp.started_at is None or cp.started_at != last.started_at:
        return invocations
    summary = {**cp.summary, "checkpoint_at": cp.at}
    return [*invocations[:-1], last.model_copy(update={"summary": summary})]


def clear_checkpoint(folder: Path) -> None:
    """Remove ``FOLDER/.checkpoint.json`` (once ``run.json`` accounts for its invocation)."""
    (folder / CHECKPOINT).unlink(missing_ok=True)


def open_folder(path: str | Path, manifest: M, fmt: RunFormat[R, M]) -> tuple[M | None, list[R]]:
    """Check that ``path`` can take the run ``manifest``; return the existing manifest (None for
    a new folder) and the records already written (deduplicated, a torn last line cut off).

    The caller merges what it keeps of the old manifest, writes the new one and makes its
    writer (call inside :func:`~interactscope.runs.common.run_lock`). Creates the folder.

    Raises:
        fmt.error: the folder holds a run with differences (every one listed), a records file
            without ``run.json``, or a corrupt record before the last line.
    """
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    records_path = p / fmt.records_file
    if (p / MANIFEST).exists():
        old = read_manifest(p, fmt)
        diffs = fmt.differences(old, manifest)
        if diffs:
            raise fmt.error(
                f"{p} holds a run with different settings; refusing to resume. Use another --out "
                "or the original options. Differences (existing != requested):\n  "
                + "\n  ".join(diffs)
            )
        return old, load_records(records_path, fmt, repair=True)
    if records_path.exists() and records_path.stat().st_size:
        raise fmt.error(f"{p}: {fmt.records_file} exists without {MANIFEST}; refusing to append")
    return None, []


# --------------------------------------------------------------------------- merge


def shard_problems(folders: list[Path], manifests: list[BaseModel], fmt: RunFormat) -> list[str]:
    """Why the shards do not make one whole run: a folder that is no shard, shards of different
    N, shards of 1..N missing, a shard whose run never finished (``ended_at`` None)."""
    specs = [parse_shard(m.shard) if m.shard else None for m in manifests]
    problems = [
        f"{f} is not a shard (written without --shard K/N)"
        for f, sp in zip(folders, specs, strict=True)
        if sp is None
    ]
    ns = {sp[1] for sp in specs if sp is not None}
    if len(ns) > 1:
        problems.append(
            "shards of different N: "
            + ", ".join(f"{f} is {m.shard}" for f, m in zip(folders, manifests, strict=True))
        )
    elif ns:
        (n,) = ns
        lost = sorted(set(range(1, n + 1)) - {sp[0] for sp in specs if sp is not None})
        if lost:
            problems.append("missing shard(s): " + ", ".join(f"{k}/{n}" for k in lost))
    problems += [
        f"{f}: its {fmt.command} never finished (killed or still running); "
        f"run the same {fmt.command} command again to resume it"
        for f, m in zip(folders, manifests, strict=True)
        if m.ended_at is None
    ]
    return problems


def mismatch_problems(
    folders: list[Path], manifests: list[M], fmt: RunFormat[R, M], ignore: Iterable[str]
) -> list[str]:
    """Differences between the first shard's manifest and each other's, the ``ignore``d
    fields (those that differ per shard by design) set equal first."""
    ignore = tuple(ignore)
    base = manifests[0]
    same = {f: getattr(base, f) for f in ignore}
    return [
        f"{folders[0]} vs {f}: {d}"
        for f, m in zip(folders[1:], manifests[1:], strict=True)
        for d in fmt.differences(base, m.model_copy(update=same))
    ]


def gather(folders: list[Path], fmt: RunFormat[R, M]) -> tuple[list[R], list[str]]:
    """Every shard's records (deduplicated per shard, torn last line ignored) and the owners
    (interactions, episodes) found in more than one shard, as problems."""
    owner: dict[Hashable, Path] = {}
    problems: list[str] = []
    records: list[R] = []
    for f in folders:
        recs = load_records(f / fmt.records_file, fmt)
        for o in dict.fromkeys(fmt.owner_of(r) for r in recs):
            if o in owner:
                problems.append(f"{fmt.owner_noun} {o} appears in both {owner[o]} and {f}")
            owner[o] = f
        records.extend(recs)
    return records, problems


def refuse_existing(out: Path, fmt: RunFormat) -> None:
    """Raises fmt.error when ``out`` already holds a run."""
    if (out / MANIFEST).exists() or (out / fmt.records_file).exists():
        raise fmt.error(f"{out} already holds a run; choose an empty --out")


def merge_folders(
    sources: list[str | Path],
    out: str | Path,
    fmt: RunFormat[R, M],
    *,
    per_shard: Iterable[str],
    missing: Callable[[list[M], list[R]], list[str]],
    combine: Callable[[list[M], list[R], list[str]], M],
    order: Callable[[M], Callable[[R], object]],
    allow_incomplete: bool = False,
    incomplete_hint: str = "",
) -> M:
    """Join shard run folders into one at ``out``.

    Hard problems (always refused, all listed): fewer than two sources, ``out`` holds a run,
    manifests differ beyond the ``per_shard`` fields, an owner in two shards. Incompleteness
    (refused unless ``allow_incomplete``): :func:`shard_problems` plus ``missing(manifests,
    records)`` (units expected but without records). ``combine(manifests, records, incomplete)``
    makes the merged manifest; records are written sorted by ``order(merged)``, under the
    lock of ``out``.

    Raises:
        fmt.error: any problem above.
    """
    if len(sources) < 2:
        raise fmt.error("merge needs at least two run folders")
    outp, paths = Path(out), [Path(s) for s in sources]
    refuse_existing(outp, fmt)
    manifests = [read_manifest(p, fmt) for p in paths]
    problems = mismatch_problems(paths, manifests, fmt, per_shard)
    records, overlap = gather(paths, fmt)
    problems += overlap
    incomplete = shard_problems(paths, manifests, fmt) + missing(manifests, records)
    if problems:  # listed with the incompleteness, so one attempt shows everything to fix
        raise fmt.error("cannot merge:\n  " + "\n  ".join(problems + incomplete))
    if incomplete and not allow_incomplete:
        raise fmt.error(
            f"cannot merge, the shards are incomplete{incomplete_hint}:\n  "
            + "\n  ".join(incomplete)
        )
    merged = combine(manifests, records, incomplete)
    with run_lock(outp, "merge"):
        refuse_existing(outp, fmt)
        rewrite(outp / fmt.records_file, sorted(records, key=order(merged)))
        write_manifest(outp, merged)
    return merged
