"""``collect`` fsyncs ``responses.jsonl`` once per batch (``adapter.fsync``,
docs/protocol.md#run-folder-contract), and a kill between records or right after a batch still
resumes to exactly the records of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from interactscope.core import registry as plugins
from interactscope.streaming.collect import CollectError, run_collect
from tests.helpers.foundation_fixtures import interaction, write_bench

ROOT = Path(__file__).resolve().parents[1]
# each interaction over the 9 s city clip from q = 0 has the 9 decision points 1..9 s
POINTS = 9


def _bench(tmp_path: Path, n: int = 2) -> Path:
    return write_bench(tmp_path / "b", [interaction(f"i{k}") for k in range(n)])


@pytest.fixture
def response_fsyncs(monkeypatch):
    """The fsync calls made on a ``responses.jsonl`` (``run.json`` writes are not counted)."""
    calls: list[int] = []
    real = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith("responses.jsonl"):
            calls.append(fd)
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def _collect(tmp_path, bench, **kw):
    return run_collect(model="oracle", bench=bench, out=tmp_path / "run", progress=False, **kw)


def test_offline_probing_fsyncs_once_per_batch(tmp_path, response_fsyncs):
    s = _collect(tmp_path, _bench(tmp_path), batch_size=4)
    assert s.written == 2 * POINTS
    # per interaction: batches of 4, 4 and 1 point -> 3 fsyncs; the interaction's end adds none
    assert len(response_fsyncs) == 2 * 3


def test_fsync_record_keeps_one_fsync_per_record(tmp_path, response_fsyncs):
    _collect(tmp_path, _bench(tmp_path), batch_size=4, overrides={"adapter.fsync": "record"})
    assert len(response_fsyncs) == 2 * POINTS


def test_online_rolling_fsyncs_once_per_interaction(tmp_path, response_fsyncs, monkeypatch):
    monkeypatch.setitem(plugins.table("backends"), "talkative", "tests.helpers.talkative:Talkative")
    cfg = tmp_path / "talkative.yaml"
    cfg.write_text('{"backend": "talkative"}')
    bench = _bench(tmp_path)
    s = run_collect(
        model=str(cfg), bench=bench, out=tmp_path / "run", progress=False, protocol="online"
    )
    assert s.written == 2 * POINTS
    assert len(response_fsyncs) == 2  # a partial interaction is redone on resume anyway


def test_sequential_offline_fsyncs_each_point(tmp_path, response_fsyncs):
    # history control: each point is its own model call, the next request reads its answer
    _collect(tmp_path, _bench(tmp_path, 1), overrides={"history.n": 1})
    assert len(response_fsyncs) == POINTS


def test_unknown_fsync_policy_is_refused_in_one_line(tmp_path):
    with pytest.raises(CollectError, match=r"adapter.fsync must be one of batch, record, got 'x'"):
        _collect(tmp_path, _bench(tmp_path, 1), overrides={"adapter.fsync": "x"})
    assert not (tmp_path / "run").exists()


KILL_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from interactscope.runs import folder
    from interactscope.streaming.collect import run_collect
    where, n = {where!r}, {n}
    real = getattr(folder.RecordWriter, where)
    count = [0]
    def patched(self, *a):
        counts = where == "append" or self._unsynced  # a sync with nothing to sync is no batch end
        real(self, *a)
        if not counts:
            return
        count[0] += 1
        if count[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)
    setattr(folder.RecordWriter, where, patched)
    run_collect(model="oracle", bench={bench!r}, out={run!r}, progress=False, batch_size=4)
    """
)


def _rows(run: Path) -> list[dict]:
    """The records' content: what the model answered at each point (timings left out)."""
    out = []
    for line in (run / "responses.jsonl").read_text().splitlines():
        r = json.loads(line)
        out.append({k: v for k, v in r.items() if k not in ("latency_s", "model_s")})
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "n", "on_disk"),
    [
        ("append", 6, 6),  # between records: the 2nd point of the 2nd batch
        ("sync", 2, 8),  # right after the 2nd batch's fsync
        ("sync", 3, POINTS),  # right after the 1st interaction's last (1-point) batch
    ],
)
def test_kill_between_records_or_after_a_batch_then_resume(tmp_path, where, n, on_disk):
    bench = _bench(tmp_path)
    run = tmp_path / "run"
    code = KILL_CHILD.format(root=str(ROOT), where=where, n=n, bench=str(bench), run=str(run))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == -signal.SIGKILL, res.stderr
    # a kill loses nothing written: every appended record was flushed to the OS
    assert len(_rows(run)) == on_disk
    run_collect(model="oracle", bench=bench, out=run, progress=False, batch_size=4)
    got = _rows(run)
    keys = [(r["interaction_id"], r["t"]) for r in got]
    assert len(keys) == len(set(keys)) == 2 * POINTS  # no duplicates, no gaps
    ref = tmp_path / "ref"
    run_collect(model="oracle", bench=bench, out=ref, progress=False, batch_size=4)
    assert got == _rows(ref)
