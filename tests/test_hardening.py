"""Hardening of run folders: lock, complete merges, whole-run summary, execution settings,
record errors, verdicts cached as they arrive, storable text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from interactscope.core import registry as plugins
from interactscope.runs.common import RunLockedError, RunLogError, run_lock
from interactscope.streaming.collect import CollectError, run_collect, run_completeness
from interactscope.streaming.judges.base import Judge, JudgeItem, Verdict
from interactscope.streaming.judges.cache import VerdictCache
from interactscope.streaming.judges.runner import run_judge
from interactscope.streaming.runlog import RunFolder
from tests.helpers.demo_points import DEMO_POINTS
from tests.helpers.foundation_fixtures import DEMO, interaction, write_bench

CLI = [sys.executable, "-m", "interactscope.cli"]


def _lines(run):
    return (run / "responses.jsonl").read_text().splitlines(keepends=True)


# ----------------------------------------------------------------------------- lock
def test_second_writer_is_refused_naming_the_holder_pid(tmp_path):
    run = tmp_path / "run"
    with run_lock(run, "collect"):
        with pytest.raises(CollectError, match=rf"in use by process {os.getpid()} \(collect\)"):
            run_collect(model="silent", bench=DEMO, out=run, progress=False)
        with pytest.raises(RunLockedError):
            with run_lock(run, "score"):
                pass
    # released with the block: the same folder can be collected now
    s = run_collect(model="silent", bench=DEMO, out=run, progress=False)
    assert s.written == sum(DEMO_POINTS.values()) == 89
    assert not (run / ".lock").exists()  # a finished run folder holds no lock file


@pytest.mark.slow
def test_two_concurrent_collects_one_refuses_records_stay_unique(tmp_path):
    # 89 points x 0.1 s: the second process starts (1-3 s on a loaded CI box) well inside it
    cfg = tmp_path / "slow-oracle.yaml"
    cfg.write_text("backend: oracle\noptions:\n  simulate_latency_s: 0.1\n")
    run = tmp_path / "run"
    cmd = [*CLI, "collect", "--model", str(cfg), "--bench", str(DEMO), "--out", str(run),
           "--no-progress"]  # fmt: skip
    first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and not (run / "responses.jsonl").exists():
        time.sleep(0.02)
    second = subprocess.run(cmd, capture_output=True, text=True)
    assert first.wait(timeout=120) == 0
    assert second.returncode == 1
    assert f"in use by process {first.pid} (collect)" in second.stderr
    assert "Traceback" not in second.stderr and len(second.stderr.strip().splitlines()) == 1
    keys = [(json.loads(x)["interaction_id"], json.loads(x)["t"]) for x in _lines(run)]
    assert len(keys) == len(set(keys)) == 89  # the demo's decision points (DEMO_POINTS)


def test_score_refuses_a_locked_run(tmp_path):
    from typer.testing import CliRunner

    from interactscope.cli import app

    run = tmp_path / "run"
    run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    with run_lock(run, "collect"):
        res = CliRunner().invoke(app, ["score", str(run), "--judge", "lexical"])
    assert res.exit_code == 1 and f"in use by process {os.getpid()}" in res.output
    assert not (run / "scores").exists()


# ----------------------------------------------------------------------------- merge
@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    out = {}
    for spec in ("1/2", "2/2", "2/3"):
        p = base / spec.replace("/", "of")
        run_collect(model="oracle", bench=DEMO, out=p, progress=False, shard=spec)
        out[spec] = p
    return out


def _merge(*args):
    return subprocess.run([*CLI, "merge", *map(str, args)], capture_output=True, text=True)


@pytest.mark.slow
def test_merge_refuses_a_truncated_shard_listing_missing_points(tmp_path, shards):
    import shutil

    cut = tmp_path / "cut"
    shutil.copytree(shards["1/2"], cut)
    lines = _lines(cut)
    keep = lines[: int(len(lines) * 0.6)]
    (cut / "responses.jsonl").write_text("".join(keep))
    lost = [json.loads(x) for x in lines[len(keep) :]]
    res = _merge(cut, shards["2/2"], "--out", tmp_path / "m")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "cannot merge, the shards are incomplete" in res.stderr
    for iid in {r["interaction_id"] for r in lost}:
        assert iid in res.stderr
    assert not (tmp_path / "m").exists()
    # --allow-incomplete merges, records what is missing, and leaves the run unfinished
    res = _merge(cut, shards["2/2"], "--out", tmp_path / "m", "--allow-incomplete")
    assert res.returncode == 0, res.stderr
    m = json.loads((tmp_path / "m" / "run.json").read_text())
    assert m["ended_at"] is None and m["incomplete"]
    assert len(RunFolder(tmp_path / "m").responses()) == 89 - len(lost)


@pytest.mark.slow
def test_merge_refuses_unfinished_shard_and_mixed_n(tmp_path, shards):
    import shutil

    unfinished = tmp_path / "unfinished"
    shutil.copytree(shards["2/2"], unfinished)
    m = json.loads((unfinished / "run.json").read_text())
    m["ended_at"] = None  # what a killed collect leaves
    (unfinished / "run.json").write_text(json.dumps(m))
    res = _merge(shards["1/2"], unfinished, "--out", tmp_path / "m1")
    assert res.returncode == 1 and "its collect never finished" in res.stderr
    res = _merge(shards["1/2"], shards["2/3"], "--out", tmp_path / "m2")
    assert res.returncode == 1 and "shards of different N" in res.stderr
    assert "missing shard" not in res.stderr
    res = _merge(shards["1/2"], shards["2/2"], "--out", tmp_path / "ok")
    assert res.returncode == 0, res.stderr
    assert len(RunFolder(tmp_path / "ok").responses()) == 89


# ----------------------------------------------------------------------------- summary, settings
def test_summary_after_resume_counts_every_record(tmp_path):
    run = tmp_path / "run"
    run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    lines = _lines(run)
    (run / "responses.jsonl").write_text("".join(lines[:40]))
    s = run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    assert s.written == 49  # 89 - 40
    m = json.loads((run / "run.json").read_text())
    # the demo oracle answers once per target (14 targets) over 89 decision points
    assert m["summary"]["non_silent"] == 14 and m["summary"]["decision_points"] == 89
    assert [i["summary"]["written"] for i in m["invocations"]] == [89, 49]


def test_execution_settings_may_change_on_resume(tmp_path, monkeypatch):

    # a backend that takes any option (the baselines reject options they do not know)
    monkeypatch.setitem(plugins.table("backends"), "talkative", "tests.helpers.talkative:Talkative")
    cfg = tmp_path / "talkative.yaml"
    cfg.write_text("backend: talkative\n")
    run = tmp_path / "run"
    bench = write_bench(tmp_path / "b", [interaction("a")])

    def go(**over):
        return run_collect(model=str(cfg), bench=bench, out=run, progress=False, overrides=over)

    go(**{"adapter.max_concurrency": 2})
    go(**{"adapter.max_concurrency": 8, "adapter.timeout_s": 5})
    m = RunFolder(run).manifest
    assert [i.execution for i in m.invocations] == [
        {"adapter.max_concurrency": 2},
        {"adapter.max_concurrency": 8, "adapter.timeout_s": 5},
    ]
    with pytest.raises(CollectError, match="settings.adapter.fail_at"):
        go(**{"adapter.fail_at": 1.0})


def test_old_run_json_without_invocations_still_reads(tmp_path):
    run = tmp_path / "run"
    run_collect(model="silent", bench=DEMO, out=run, progress=False, limit=1)
    m = json.loads((run / "run.json").read_text())
    for key in ("invocations", "incomplete", "video_durations"):
        m.pop(key)
    (run / "run.json").write_text(json.dumps(m))
    assert RunFolder(run).manifest.invocations == []
    assert run_completeness(run).complete  # durations measured again from the media
    s = run_collect(model="silent", bench=DEMO, out=run, progress=False, limit=1)
    assert s.written == 0 and len(RunFolder(run).manifest.invocations) == 1


def test_completeness_names_interactions_without_or_with_partial_records(tmp_path):
    run = tmp_path / "run"
    run_collect(model="silent", bench=DEMO, out=run, progress=False)
    rows = [json.loads(x) for x in _lines(run)]
    keep = [r for r in rows if r["interaction_id"] != "t1-taxi"]
    keep = [r for r in keep if not (r["interaction_id"] == "t8b-said" and r["t"] == 7.6)]
    (run / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    c = run_completeness(run)
    assert c.missing == {"t1-taxi": [float(k) for k in range(11)], "t8b-said": [7.6]}
    assert c.lines == [
        "t1-taxi: no records (11 decision points)",
        "t8b-said: 1 of 4 decision points missing (t = 7.6)",
    ]
    assert DEMO_POINTS["t8b-said"] == 4


# ----------------------------------------------------------------------------- record errors
def test_collect_exits_3_naming_interactions_with_error_records(tmp_path):
    root = write_bench(
        tmp_path / "b",
        [interaction("good"), {**interaction("broken"), "video_id": "bad"}],
        videos=[{"id": "city", "path": "media/city.mp4"}, {"id": "bad", "path": "media/bad.mp4"}],
    )
    (root / "media" / "bad.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 this is not a video")
    run = tmp_path / "run"
    args = [*CLI, "collect", "-m", "oracle", "-b", str(root), "-o", str(run), "--no-progress"]
    res = subprocess.run(args, capture_output=True, text=True)
    assert res.returncode == 3, res.stderr
    assert "2 interactions, 10 decision points" in res.stdout  # the summary comes first
    last = res.stderr.strip().splitlines()[-1]
    assert "1 record(s) of 1 interaction(s) carry an error (broken)" in last
    assert "--retry-errors" in last and "Traceback" not in res.stderr


# ----------------------------------------------------------------------------- verdict cache
class _DyingJudge(Judge):
    """Answers 'yes' to every triple; the process 'dies' on its second call."""

    name = backend = model = "dying"

    def __init__(self):
        self.calls = 0

    def judge(self, triples):
        self.calls += 1
        if self.calls == 2:
            raise KeyboardInterrupt
        return [Verdict(True, "yes") for _ in triples]


def test_verdicts_are_cached_as_they_arrive(tmp_path):
    items = [JudgeItem("i", "k", float(n), "req", "ref", f"cand {n}") for n in range(40)]
    with VerdictCache(tmp_path / "v.sqlite") as cache:
        with pytest.raises(KeyboardInterrupt):
            run_judge(_DyingJudge(), items, cache)
        assert len(cache) == 32  # the first chunk (CACHE_CHUNK) was stored before the kill
        rep = run_judge(_DyingJudge(), items, cache)  # resumes: only 8 asked, in one call
        assert (rep.cache_hits, rep.calls, len(cache)) == (32, 8, 40)


# ----------------------------------------------------------------------------- storable text
def test_lone_surrogates_in_replies_are_stored_with_a_flag(tmp_path):
    from interactscope.streaming.schema import ResponseRecord

    r = ResponseRecord(interaction_id="a", t=1, text="ok \ud800", error=None)
    assert r.text == "ok \ufffd" and r.text_replaced
    line = r.model_dump_json()  # would raise without the replacement
    assert ResponseRecord.model_validate_json(line).text_replaced
    assert ResponseRecord(interaction_id="a", t=1, text="plain").text_replaced is False


def test_lone_surrogate_in_an_annotation_does_not_stop_collect(tmp_path):
    tg = [{"id": "k1", "reference": "look \\ud800 here", "time_s": 4.0}]
    root = write_bench(tmp_path / "b", [interaction("a", targets=tg)])
    text = (root / "interactions.jsonl").read_text().replace("\\\\ud800", "\\ud800")
    (root / "interactions.jsonl").write_text(text)
    s = run_collect(model="oracle", bench=root, out=tmp_path / "run", progress=False)
    assert s.errors == 0 and s.non_silent == 1
    (spoken,) = [r for r in RunFolder(tmp_path / "run").responses() if not r.silent]
    assert spoken.text == "look \ufffd here"


def test_merge_into_a_locked_folder_is_refused(tmp_path, shards):
    out = tmp_path / "m"
    with run_lock(out, "collect"):
        with pytest.raises(RunLogError, match="in use by process"):
            from interactscope.streaming.collect import run_merge

            run_merge([shards["1/2"], shards["2/2"]], out)


def test_score_warns_on_an_unfinished_run_naming_interactions(tmp_path):
    from typer.testing import CliRunner

    from interactscope.cli import app

    run = tmp_path / "run"
    run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    rows = [json.loads(x) for x in _lines(run)]
    keep = [r for r in rows if r["interaction_id"] != "t2-cut"]
    (run / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    m = json.loads((run / "run.json").read_text())
    m["ended_at"] = None  # Ctrl-C during collect
    (run / "run.json").write_text(json.dumps(m))
    res = CliRunner().invoke(app, ["score", str(run), "--judge", "lexical"])
    assert res.exit_code == 0, res.output
    assert "the run never finished; 1 interaction(s) without or with partial records" in res.output
    assert "t2-cut: no records (9 decision points)" in res.output
    assert "Resume it by running the same `interactscope collect` command again" in res.output


def test_score_on_an_unfinished_run_with_every_record_says_scores_are_complete(tmp_path):
    # a crash after the last record was written: nothing is missing, so no resume advice
    from typer.testing import CliRunner

    from interactscope.cli import app

    run = tmp_path / "run"
    run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    m = json.loads((run / "run.json").read_text())
    m["ended_at"] = None
    (run / "run.json").write_text(json.dumps(m))
    res = CliRunner().invoke(app, ["score", str(run), "--judge", "lexical"])
    assert res.exit_code == 0, res.output
    assert "every decision point has a record; the scores are complete" in res.output
    assert "Resume it" not in res.output
