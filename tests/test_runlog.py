"""Run folder: resume, torn last line, settings mismatch, shard/merge."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from interactscope.runs.common import RunLogError, in_shard, parse_shard
from interactscope.streaming.collect import CollectError, run_collect
from interactscope.streaming.runlog import RunFolder, merge_runs
from tests.helpers.demo_points import DEMO_POINTS
from tests.helpers.foundation_fixtures import DEMO, interaction, write_bench

# Demo grid sizes (q .. D per second plus q and D): hand-counted from interactions.jsonl and the
# measured durations (bikes 10.0 s, city 7.6 s, bunny 5.312 s, carphone 4.004 s).


def keys(run):
    return [(r.interaction_id, r.t) for r in RunFolder(run).responses()]


def raw_keys(run):
    out = []
    for line in (run / "responses.jsonl").read_text().splitlines():
        d = json.loads(line)
        out.append((d["interaction_id"], d["t"]))
    return out


def test_oracle_run_has_one_record_per_decision_point(tmp_path):
    run = tmp_path / "run"
    s = run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    assert s.decision_points == sum(DEMO_POINTS.values()) == 89  # 82 + 7 of t1-home-chores
    counts = Counter(iid for iid, _ in raw_keys(run))
    assert dict(counts) == DEMO_POINTS
    assert s.non_silent == 14  # one answer per target: 12 + t1-home-chores' 2


def test_resume_after_torn_last_line(tmp_path, caplog):
    run = tmp_path / "run"
    run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    lines = (run / "responses.jsonl").read_text().splitlines(keepends=True)
    # keep 40 complete records and half of the 41st, as a kill during a write would leave
    (run / "responses.jsonl").write_text("".join(lines[:40]) + lines[40][: len(lines[40]) // 2])
    assert len(RunFolder(run).responses()) == 40  # the reader ignores the torn line
    s = run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    assert "half-written last line" in caplog.text
    assert s.already_present == 40 and s.written == 49  # 89 - 40
    k = raw_keys(run)
    assert len(k) == len(set(k)) == 89


def test_resume_refuses_different_settings(tmp_path):
    run = tmp_path / "run"
    run_collect(model="silent", bench=DEMO, out=run, progress=False, limit=1)
    with pytest.raises(CollectError) as exc:
        run_collect(
            model="silent",
            bench=DEMO,
            out=run,
            progress=False,
            limit=1,
            overrides={"grid.step_s": 2, "cooldown_s": 5},
        )
    msg = str(exc.value)
    assert "settings.grid.step_s: 1.0 != 2" in msg
    assert "settings.cooldown_s: 0.0 != 5" in msg
    with pytest.raises(CollectError, match="model: 'silent' != 'oracle'"):
        run_collect(model="oracle", bench=DEMO, out=run, progress=False, limit=1)


def test_retry_errors_recollects_error_records(tmp_path):
    run = tmp_path / "run"
    run_collect(model="silent", bench=DEMO, out=run, progress=False)
    lines = (run / "responses.jsonl").read_text().splitlines()
    rec = json.loads(lines[3])
    rec["error"] = "TimeoutError: server did not answer"
    lines[3] = json.dumps(rec)
    (run / "responses.jsonl").write_text("\n".join(lines) + "\n")
    s = run_collect(model="silent", bench=DEMO, out=run, progress=False)
    assert s.written == 0  # an error record counts as present unless asked
    s = run_collect(model="silent", bench=DEMO, out=run, progress=False, retry_errors=True)
    assert s.written == 1
    recs = RunFolder(run).responses()
    assert len(recs) == 89 and not any(r.error for r in recs)


def test_shard_spec_and_assignment_partition():
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "x", "1-2"):
        with pytest.raises(ValueError):
            parse_shard(bad)
    ids = [f"i{n}" for n in range(200)]
    owners = [[k for k in range(1, 4) if in_shard(i, (k, 3))] for i in ids]
    assert all(len(o) == 1 for o in owners)  # each interaction in exactly one shard
    sizes = Counter(o[0] for o in owners)
    assert all(40 <= v <= 90 for v in sizes.values())


def test_shard_merge_round_trip(tmp_path):
    full = tmp_path / "full"
    run_collect(model="oracle", bench=DEMO, out=full, progress=False)
    shards = []
    for k in (1, 2, 3):
        p = tmp_path / f"s{k}"
        run_collect(model="oracle", bench=DEMO, out=p, progress=False, shard=f"{k}/3")
        shards.append(p)
    merged = tmp_path / "merged"
    m = merge_runs(shards, merged)
    assert m.shard is None and len(m.interaction_ids) == 11
    a = [r.model_dump() for r in RunFolder(full).responses()]
    b = [r.model_dump() for r in RunFolder(merged).responses()]
    assert a == b
    with pytest.raises(RunLogError, match="already holds a run"):
        merge_runs(shards, merged)


def test_merge_refuses_overlap_and_mismatch(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    run_collect(model="oracle", bench=DEMO, out=a, progress=False, shard="1/2")
    run_collect(model="oracle", bench=DEMO, out=b, progress=False, shard="1/2")
    run_collect(
        model="oracle", bench=DEMO, out=c, progress=False, shard="2/2", overrides={"cooldown_s": 3}
    )
    with pytest.raises(RunLogError, match="appears in both"):
        merge_runs([a, b], tmp_path / "m1")
    with pytest.raises(RunLogError, match="settings.cooldown_s"):
        merge_runs([a, c], tmp_path / "m2")


def test_run_json_records_settings_and_provenance(tmp_path):
    run = tmp_path / "run"
    write_bench(tmp_path / "b", [interaction("a")])
    run_collect(
        model="silent", bench=tmp_path / "b", out=run, progress=False, overrides={"history.n": 5}
    )
    m = json.loads((run / "run.json").read_text())
    assert m["settings"]["history"]["n"] == 5
    assert m["settings"]["grid"]["step_s"] == 1.0
    assert m["settings"]["silence_token"] == "<SILENT>"
    assert m["packages"]["av"] and m["packages"]["pydantic"]
    assert m["started_at"] and m["ended_at"] and m["host"]
    assert m["summary"]["decision_points"] == 9  # 0..7 and 7.6
