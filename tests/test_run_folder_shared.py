"""The one run folder (interactscope/runs/folder.py), the same checks against both record types:
streaming ResponseRecords (responses.jsonl) and EgoBench EpisodeRecords (episodes.jsonl).

Kill/resume (a child process SIGKILLed mid-run, then resumed), torn last line, dedupe, refusing a
different run, shard coverage, merge completeness, the lock, and the invocation accounting of
``run.json`` (finish, a caught interrupt, an invocation killed outright). Expected values are
counted by hand from the records each case writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from interactscope.egobench import run_folder as ego
from interactscope.egobench.records import EpisodeRecord
from interactscope.runs import folder
from interactscope.runs.common import RunLockedError, RunLogError, in_shard, run_lock
from interactscope.runs.folder import RunFormat, load_records
from interactscope.streaming import runlog
from interactscope.streaming.schema import BenchmarkInfo, Invocation, ResponseRecord, RunManifest

N_UNITS = 12


@dataclass
class Kind:
    """What a test needs of one benchmark's run folder."""

    name: str
    fmt: RunFormat
    unit: Any  # i -> record i (unit ids u00..u11)
    manifest: Any  # (shard, other_setting) -> manifest
    open: Any  # (path, manifest) -> writer
    merge: Any  # (sources, out) -> merged manifest
    finish: Any  # writer -> None
    rich: Any  # i -> record i with 10*i tokens in (streaming: non-silent for odd i)
    counted: str  # the summary key counting records
    tokens: str  # the summary key summing input tokens
    fills_killed: bool  # a killed invocation is given its records on resume


def _stream_manifest(shard: str | None = None, step: float = 1.0) -> RunManifest:
    bench = BenchmarkInfo(name="b", version="1", path="/b", fingerprint="f", n_interactions=12)
    return RunManifest(model="m", backend="x", protocol="offline", shard=shard,
                       settings={"grid": {"step_s": step}}, benchmark=bench,
                       invocations=[Invocation(started_at="2026-01-01T00:00:00+00:00")])  # fmt: skip


def _ego_manifest(shard: str | None = None, step: float = 1.0) -> ego.EgoRunManifest:
    return ego.EgoRunManifest(
        agent={"name": "a"}, user={"name": "u"}, agent_id="a", user_id="u", mode="easy",
        data={}, tasks={"v": list(range(N_UNITS))}, settings={"grid": {"step_s": step}},
        shard=shard,
    )  # fmt: skip


STREAM = Kind(
    "streaming",
    runlog.FORMAT,
    unit=lambda i: ResponseRecord(interaction_id=f"u{i:02d}", t=0.0),
    manifest=_stream_manifest,
    open=lambda p, m: runlog.open_run(p, m),
    merge=lambda s, o: runlog.merge_runs(s, o),
    finish=lambda w: w.finish(),
    rich=lambda i: ResponseRecord(
        interaction_id=f"u{i:02d}", t=0.0, silent=i % 2 == 0, prompt_tokens=10 * i
    ),
    counted="decision_points",
    tokens="prompt_tokens",
    fills_killed=False,  # a resume may rewrite responses.jsonl: position tells nothing
)
EGO = Kind(
    "egobench",
    ego.FORMAT,
    unit=lambda i: EpisodeRecord(variant="v", task_id=i),
    manifest=_ego_manifest,
    open=lambda p, m: ego.open_episodes(p, m),
    merge=lambda s, o: ego.merge_runs(s, o),
    finish=lambda w: w.finish(),
    rich=lambda i: EpisodeRecord(variant="v", task_id=i, input_tokens=10 * i),
    counted="episodes",
    tokens="input_tokens",
    fills_killed=True,
)


def _unit_id(kind: Kind, i: int) -> str:
    return f"u{i:02d}" if kind is STREAM else f"v:{i}"


@pytest.fixture(params=[STREAM, EGO], ids=lambda k: k.name)
def kind(request) -> Kind:
    return request.param


def _write(kind: Kind, path: Path, n: int, manifest=None) -> None:
    with run_lock(path):
        w = kind.open(path, manifest or kind.manifest())
        for i in range(n):
            if kind.fmt.key(kind.unit(i)) not in w.done:
                w.append(kind.unit(i))
        kind.finish(w)


def _keys(kind: Kind, path: Path) -> list:
    return [kind.fmt.key(r) for r in load_records(path / kind.fmt.records_file, kind.fmt)]


def test_torn_last_line_is_dropped_then_cut_on_resume(kind, tmp_path, caplog):
    run = tmp_path / "run"
    _write(kind, run, 5)
    f = run / kind.fmt.records_file
    lines = f.read_text().splitlines(keepends=True)
    f.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 2])  # killed mid-write
    assert len(_keys(kind, run)) == 3 and "half-written last line" in caplog.text
    _write(kind, run, 5)
    assert _keys(kind, run) == [kind.fmt.key(kind.unit(i)) for i in range(5)]
    assert len(f.read_text().splitlines()) == 5  # the torn half is gone, nothing duplicated


def test_a_corrupt_line_before_the_last_is_an_error_naming_the_line(kind, tmp_path):
    run = tmp_path / "run"
    _write(kind, run, 3)
    f = run / kind.fmt.records_file
    lines = f.read_text().splitlines(keepends=True)
    f.write_text(lines[0] + "{not json\n" + "".join(lines[1:]))
    with pytest.raises(kind.fmt.error, match=r":2: corrupt"):
        load_records(f, kind.fmt)


def test_duplicate_lines_first_wins_and_writer_refuses_a_written_key(kind, tmp_path):
    run = tmp_path / "run"
    _write(kind, run, 2)
    f = run / kind.fmt.records_file
    f.write_text(f.read_text() + f.read_text().splitlines(keepends=True)[0])
    assert len(_keys(kind, run)) == 2
    with run_lock(run):
        w = kind.open(run, kind.manifest())
        with pytest.raises(kind.fmt.error, match="already written"):
            w.append(kind.unit(0))
        w.close()


def test_resume_refuses_a_run_with_other_settings(kind, tmp_path):
    run = tmp_path / "run"
    _write(kind, run, 1)
    with pytest.raises(kind.fmt.error, match=r"settings\.grid\.step_s: 1\.0 != 2\.0"):
        kind.open(run, kind.manifest(step=2.0))


def test_records_without_manifest_are_not_appended_to(kind, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / kind.fmt.records_file).write_text("{}\n")
    with pytest.raises(kind.fmt.error, match="exists without run.json"):
        kind.open(run, kind.manifest())


def test_the_lock_refuses_a_second_writer(kind, tmp_path):
    run = tmp_path / "run"
    with run_lock(run, kind.name):
        code = f"from interactscope.runs.common import run_lock\nwith run_lock({str(run)!r}): pass"
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert res.returncode == 1 and "RunLockedError" in res.stderr
        assert f"in use by process {os.getpid()} ({kind.name})" in res.stderr
    with run_lock(run):  # released with its holder
        pass
    assert issubclass(RunLockedError, RunLogError)


def test_the_lock_file_is_removed_when_the_block_ends(kind, tmp_path):
    run = tmp_path / "run"
    _write(kind, run, 2)  # finished normally
    assert sorted(x.name for x in run.iterdir()) == [kind.fmt.records_file, "run.json"]
    for exc in (ValueError("boom"), KeyboardInterrupt()):  # a handled error, Ctrl-C
        with pytest.raises(type(exc)):
            with run_lock(run, kind.name):
                assert (run / ".lock").read_text() == f"{os.getpid()} {kind.name}\n"
                raise exc
        assert not (run / ".lock").exists()


def test_a_killed_holders_lock_file_is_taken_over(kind, tmp_path):
    run = tmp_path / "run"
    code = (
        "import os, signal\nfrom interactscope.runs.common import run_lock\n"
        f"with run_lock({str(run)!r}, {kind.name!r}):\n    os.kill(os.getpid(), signal.SIGKILL)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == -signal.SIGKILL
    pid = int((run / ".lock").read_text().split()[0])  # the stale file names the dead holder
    assert pid != os.getpid()
    with run_lock(run, "score"):
        assert (run / ".lock").read_text() == f"{os.getpid()} score\n"
    assert not (run / ".lock").exists()


def test_a_lock_file_removed_while_opening_it_is_not_held(tmp_path, monkeypatch):
    # B opened RUN/.lock just before its holder A removed it and let go: B's flock on that
    # unlinked file would not exclude C, so B must lock the file now at RUN/.lock instead.
    from interactscope.core import files
    from interactscope.runs import common

    run = tmp_path / "run"
    with run_lock(run, "collect"):
        stale = common.open_append(run / ".lock", read=True)
    opened = []

    def open_append(path, *, read=False):
        opened.append(path)
        return stale if len(opened) == 1 else files.open_append(path, read=read)

    monkeypatch.setattr(common, "open_append", open_append)
    with run_lock(run, "merge"):
        assert len(opened) == 2 and stale.closed
        assert (run / ".lock").read_text() == f"{os.getpid()} merge\n"
        with pytest.raises(RunLockedError, match=rf"process {os.getpid()} \(merge\)"):
            with run_lock(run, "score"):
                pass


def _shard(kind: Kind, path: Path, k: int, n: int, finish: bool = True) -> None:
    with run_lock(path):
        m = kind.manifest(shard=f"{k}/{n}")
        if kind is EGO:
            m.tasks = {"v": [i for i in range(N_UNITS) if in_shard(f"v:{i}", (k, n))]}
        w = kind.open(path, m)
        for i in range(N_UNITS):
            if in_shard(_unit_id(kind, i), (k, n)):
                w.append(kind.unit(i))
        if finish:
            kind.finish(w)
        else:
            w.close()


def test_shards_cover_every_unit_once_and_merge_restores_the_whole(kind, tmp_path):
    shards = [tmp_path / f"s{k}" for k in (1, 2, 3)]
    for k, s in enumerate(shards, 1):
        _shard(kind, s, k, 3)
    sizes = [len(_keys(kind, s)) for s in shards]
    assert sum(sizes) == N_UNITS and all(sizes)
    merged = kind.merge(shards, tmp_path / "m")
    assert merged.shard is None and merged.ended_at is not None
    assert sorted(_keys(kind, tmp_path / "m"), key=str) == sorted(
        (kind.fmt.key(kind.unit(i)) for i in range(N_UNITS)), key=str
    )
    with pytest.raises(kind.fmt.error, match="already holds a run"):
        kind.merge(shards, tmp_path / "m")


def test_merge_refuses_a_missing_or_unfinished_shard_and_overlap(kind, tmp_path):
    s1, s2, s3 = (tmp_path / f"s{k}" for k in (1, 2, 3))
    _shard(kind, s1, 1, 3)
    _shard(kind, s2, 2, 3, finish=False)
    with pytest.raises(kind.fmt.error) as exc:
        kind.merge([s1, s2], tmp_path / "m")
    msg = str(exc.value)
    assert "missing shard(s): 3/3" in msg and f"{s2}: its " in msg and "never finished" in msg
    with pytest.raises(kind.fmt.error, match="appears in both"):
        kind.merge([s1, s1], tmp_path / "m2")
    _write(kind, s3, 2)
    with pytest.raises(kind.fmt.error, match=r"is not a shard"):
        kind.merge([s1, s3], tmp_path / "m3")
    assert not (tmp_path / "m").exists()


KILL_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from tests.test_run_folder_shared import KINDS, _write
    kind = KINDS[{name!r}]
    from interactscope.runs import folder
    real = folder.RecordWriter.append
    def append(self, rec, n=[0]):
        real(self, rec)
        n[0] += 1
        if n[0] == 7:
            os.kill(os.getpid(), signal.SIGKILL)
    folder.RecordWriter.append = append
    _write(kind, __import__("pathlib").Path({run!r}), {n})
    """
)
KINDS = {"streaming": STREAM, "egobench": EGO}


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_gives_every_unit_exactly_once(kind, tmp_path):
    run = tmp_path / "run"
    root = str(Path(__file__).resolve().parents[1])
    code = KILL_CHILD.format(root=root, name=kind.name, run=str(run), n=N_UNITS)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == -signal.SIGKILL, res.stderr
    assert len(_keys(kind, run)) == 7  # each append was fsynced before the kill
    manifest = kind.fmt.manifest.model_validate_json((run / "run.json").read_bytes())
    assert manifest.ended_at is None
    _write(kind, run, N_UNITS)
    keys = _keys(kind, run)
    assert len(keys) == len(set(keys)) == N_UNITS
    assert len((run / kind.fmt.records_file).read_text().splitlines()) == N_UNITS


def test_sync_every_n_fsyncs_once_per_n_records(kind, tmp_path, monkeypatch):
    from interactscope.runs import folder

    calls = []
    real = os.fsync
    monkeypatch.setattr(folder.os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    run = tmp_path / "run"
    run.mkdir()
    w = folder.RecordWriter(run, kind.fmt, [], sync_every=4)
    for i in range(10):
        w.append(kind.unit(i))
    assert len(calls) == 2  # after records 4 and 8
    w.close()
    assert len(calls) == 3  # the last 2 on close


# --------------------------------------------------------------- invocation accounting


@pytest.fixture
def clock(monkeypatch):
    """The writers' time.perf_counter, returning these seconds in turn: each writer reads it
    when made (t0) and when it finishes or is interrupted."""
    ticks = iter([0.0, 1.25, 10.0, 12.5, 20.0, 22.5, 30.0])
    monkeypatch.setattr(folder, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))


def _invocation(kind: Kind, path: Path, units: range, end: str) -> None:
    """One invocation writing ``units``, then ``end``: finish, interrupt or kill (close only)."""
    with run_lock(path):
        w = kind.open(path, kind.manifest())
        for i in units:
            w.append(kind.rich(i))
        if end == "finish":
            w.finish()
        elif end == "interrupt":
            w.interrupted()
        else:  # killed outright: run.json stays as open_* wrote it
            w.close()


def _run_json(kind: Kind, path: Path):
    return kind.fmt.manifest.model_validate_json((path / "run.json").read_bytes())


def test_finish_accounts_each_invocation_and_the_whole_run(kind, tmp_path, clock):
    run = tmp_path / "run"
    _invocation(kind, run, range(3), "finish")  # clock 0 -> 1.25
    _invocation(kind, run, range(3, 5), "finish")  # clock 10 -> 12.5
    m = _run_json(kind, run)
    first, second = m.invocations
    assert m.ended_at is not None and m.ended_at == second.ended_at
    assert not first.interrupted and not second.interrupted
    # invocation 1 wrote records 0, 1, 2 (tokens 0 + 10 + 20), invocation 2 records 3, 4 (30 + 40)
    assert (first.summary[kind.counted], first.summary[kind.tokens]) == (3, 30)
    assert (second.summary[kind.counted], second.summary[kind.tokens]) == (2, 70)
    assert (first.summary["wall_s"], second.summary["wall_s"]) == (1.25, 2.5)
    assert (m.summary[kind.counted], m.summary[kind.tokens], m.summary["wall_s"]) == (5, 100, 3.75)


def test_an_interrupted_invocation_is_timed_and_the_run_stays_resumable(kind, tmp_path, clock):
    run = tmp_path / "run"
    _invocation(kind, run, range(3), "interrupt")  # clock 0 -> 1.25
    m = _run_json(kind, run)
    (inv,) = m.invocations
    assert m.ended_at is None and inv.interrupted and inv.ended_at is not None
    assert (inv.summary[kind.counted], inv.summary["wall_s"]) == (3, 1.25)
    assert (m.summary[kind.counted], m.summary["wall_s"]) == (3, 1.25)
    _invocation(kind, run, range(3, 5), "finish")  # clock 10 -> 12.5
    m = _run_json(kind, run)
    assert [i.interrupted for i in m.invocations] == [True, False] and m.ended_at is not None
    assert (m.summary[kind.counted], m.summary[kind.tokens], m.summary["wall_s"]) == (5, 100, 3.75)


def test_a_killed_invocation_is_accounted_on_resume(kind, tmp_path, clock):
    run = tmp_path / "run"
    _invocation(kind, run, range(3), "finish")  # clock 0 -> 1.25
    _invocation(kind, run, range(3, 5), "kill")  # clock 10, never read again
    m = _run_json(kind, run)
    assert m.ended_at is None and m.invocations[-1].summary is None
    _invocation(kind, run, range(5, 7), "finish")  # clock 12.5 -> 20
    m = _run_json(kind, run)
    first, killed, third = m.invocations
    assert killed.ended_at is None and not killed.interrupted
    if kind.fills_killed:  # the records after invocation 1's three: 3 and 4 (tokens 30 + 40)
        assert killed.written == 2
        assert (killed.summary[kind.counted], killed.summary[kind.tokens]) == (2, 70)
        assert killed.summary["wall_s"] is None  # unknown, not 0
        assert (m.summary["invocations"], m.summary["untimed"]) == (3, 1)
    else:
        assert killed.summary is None
    assert third.summary[kind.counted] == 2 and third.summary["wall_s"] == 7.5
    # the whole run: records 0..6 (tokens 0 + 10 + ... + 60), wall of the timed ones 1.25 + 7.5
    assert (m.summary[kind.counted], m.summary[kind.tokens], m.summary["wall_s"]) == (7, 210, 8.75)
