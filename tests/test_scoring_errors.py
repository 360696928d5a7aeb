"""Infrastructure-error records are not misses: a target whose decision points all failed gets
the outcome ``infra_error``, leaves numerator and denominator, and is counted and warned about
(docs/protocol.md, which records count as responses). Values worked out by hand."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from interactscope.streaming.judges import make_judge
from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.scoring.core import score_interaction
from interactscope.streaming.scoring.run import load_run_inputs, score_collection, score_run
from tests.helpers.foundation_fixtures import DEMO

CLI = [sys.executable, "-m", "interactscope.cli"]


def _rec(t: float, *, error: bool = False, text: str | None = None) -> ResponseRecord:
    if error:
        return ResponseRecord(interaction_id="i", t=t, silent=False, error="HTTP 503")
    if text is not None:
        return ResponseRecord(interaction_id="i", t=t, silent=False, text=text)
    return ResponseRecord(interaction_id="i", t=t, silent=True, text="<SILENT>")


def _inter(task: str, targets: list[dict]) -> Interaction:
    return Interaction(
        id="i", video_id="v", task=task, query={"time_s": 0.0, "text": "r"}, targets=targets
    )


def _yes_if_ok(target_id: str, t_ms: int) -> tuple[bool, str]:
    return True, "yes"


def _outcomes(s) -> list[str]:
    return [r["outcome"] for r in s.targets]


# ------------------------------------------------------------------- first-response allocation
# Targets τ = 3 and τ = 9, q = 0: regions [0, 6) and [6, ∞), windows [1, 5] and [7, 11].


def _two_targets() -> Interaction:
    return _inter(
        "T2",
        [
            {"id": "a", "time_s": 3.0, "reference": "x"},
            {"id": "b", "time_s": 9.0, "reference": "y"},
        ],
    )


def test_region_of_only_error_records_is_infra_error_and_unscored():
    recs = [_rec(t, error=t < 6) for t in range(13)]  # 0..5 failed, 6..12 silent
    s = score_interaction(_two_targets(), recs, _yes_if_ok, cluster="c")
    assert _outcomes(s) == ["infra_error", "missed"]
    a = s.targets[0]
    assert (a["hit"], a["scored"], a["on_time"]) == (0, 0, None)
    # scored: only b; probed span from the error-free records: 12 − 0
    assert s.interaction["scored"] == 1 and s.interaction["hits"] == 0
    assert s.interaction["infrastructure_errors"] == 6 and s.interaction["probed_s"] == 12.0


def test_one_good_silent_point_in_the_region_keeps_the_miss():
    recs = [_rec(t, error=t < 5) for t in range(13)]  # 5 s answered silently: a real miss
    s = score_interaction(_two_targets(), recs, _yes_if_ok, cluster="c")
    assert _outcomes(s) == ["missed", "missed"]


def test_a_response_among_errors_is_scored_as_usual():
    recs = [_rec(t, error=t != 4) for t in range(6)] + [_rec(t) for t in range(6, 13)]
    recs[4] = _rec(4, text="x")
    s = score_interaction(_two_targets(), recs, _yes_if_ok, cluster="c")
    assert _outcomes(s) == ["hit", "missed"]


def test_all_records_failed_every_target_infra_error_and_no_probed_minutes():
    recs = [_rec(t, error=True) for t in range(13)]
    s = score_interaction(_two_targets(), recs, _yes_if_ok, cluster="c")
    assert _outcomes(s) == ["infra_error", "infra_error"]
    assert s.interaction["scored"] == 0 and s.interaction["probed_s"] == 0.0


def test_unreadable_video_single_error_record_at_q_fails_every_target():
    """An unreadable video's interaction has one error record at t = q (its grid is unknown):
    b's region [6, ∞) holds no record at all, yet it is not the model's miss."""
    s = score_interaction(_two_targets(), [_rec(0.0, error=True)], _yes_if_ok, cluster="c")
    assert _outcomes(s) == ["infra_error", "infra_error"]


# ------------------------------------------------------------------- order-preserving matching


def test_matching_window_of_only_errors_is_infra_error():
    inter = _inter(
        "T8-C",
        [
            {"id": "s1", "time_s": 3.0, "reference": "x"},
            {"id": "s2", "time_s": 9.0, "reference": "y"},
        ],
    )
    # window of s1 = [1, 5]: all failed; window of s2 = [7, 11]: 9 answered
    recs = [_rec(t, error=1 <= t <= 5) for t in range(13)]
    recs[9] = _rec(9, text="y")
    s = score_interaction(inter, recs, _yes_if_ok, cluster="c")
    assert _outcomes(s) == ["infra_error", "hit"]
    assert s.interaction["complete"] is None  # an episode with a failed step is not counted
    recs[5] = _rec(5)  # one good point in the window: an honest miss, the episode counts
    s = score_interaction(inter, recs, _yes_if_ok, cluster="c")
    assert _outcomes(s) == ["missed", "hit"] and s.interaction["complete"] == 0


# ------------------------------------------------------------------- a whole run


@pytest.fixture(scope="module")
def oracle_runs(tmp_path_factory):
    """A clean oracle run on the demo benchmark, and a copy whose t1-cyclist records (q = 2,
    D = 10: 9 decision points) all carry an error (the server was down)."""
    if not (DEMO / "benchmark.json").exists():
        pytest.skip("demo benchmark not present")
    root = tmp_path_factory.mktemp("errs")
    clean = root / "clean"
    cmd = [*CLI, "collect", "--model", "oracle", "--bench", DEMO, "--out", clean, "--no-progress"]
    subprocess.run(list(map(str, cmd)), check=True, capture_output=True)
    err = root / "err"
    shutil.copytree(clean, err)
    rows = [json.loads(x) for x in (err / "responses.jsonl").read_text().splitlines()]
    for r in rows:
        if r["interaction_id"] == "t1-cyclist":
            r.update(text="", silent=False, tool_calls=[], error="HTTP 503: server down")
    (err / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return clean, err


@pytest.mark.slow
def test_failed_interaction_left_out_other_scores_equal_the_clean_run(oracle_runs, tmp_path):
    clean, err = oracle_runs
    res = score_run(err, judge="lexical", out_dir=tmp_path / "err")
    m = json.loads(res.summary.to_json())["metrics"]
    h = json.loads(res.summary.to_json())["health"]
    # hand-worked: 14 oracle hits minus t1-cyclist's one target; it leaves T1's denominators
    # (5 T1 targets: taxi, cyclist, speech, and t1-home-chores' two; minus the cyclist's = 4)
    assert m["T1"] == {
        "targets": 4,
        "on_time_count": 4,
        "joint_count": 4,
        "on_time": 1.0,
        "joint": 1.0,
        "conditional": 1.0,
    }
    assert m["tasks"]["T1"]["failures"]["infra_error"] == 1
    assert "infra_error" not in m["tasks"]["T2"]["failures"]
    assert (m["overall"]["hits"], m["overall"]["scored"], m["overall"]["infra_error"]) == (
        13,
        13,
        1,
    )
    # volume: 14 − 1 responses; probed 74.428 s (69.116 s + t1-home-chores' 5.312 s of bunny)
    # − (10 − 2) s = 66.428 s = 1.107133 min (6 decimals); 13 / 1.1071333 min = 11.742036 per min
    vol = m["output_volume"]
    assert (vol["responses"], vol["probed_min"], vol["per_min"]) == (13, 1.107133, 11.742036)
    assert h["infrastructure_errors"] == 9
    assert (h["infra_error_interactions"], h["infra_error_targets"]) == (1, 1)
    assert "partial_interactions" not in h and "run_finished" not in h
    # the same numbers as the clean run scored without that interaction
    inputs = load_run_inputs(clean)
    others = [i for i in inputs.interactions if i.id != "t1-cyclist"]
    ref = score_collection(others, inputs.records, inputs.clusters, make_judge("lexical"))
    r = json.loads(ref.summary.to_json())["metrics"]
    for key in ("T1", "T8", "six_task_mean", "six_task_mean_tasks", "output_volume"):
        assert m[key] == r[key], key
    assert {k: v for k, v in m["overall"].items() if k != "infra_error"} == r["overall"]
    for task in ("T2", "T3", "T7", "T8-A", "T8-B"):
        assert m["tasks"][task] == r["tasks"][task], task
    cdf = res.clusters.set_index(["cluster", "task"])
    assert cdf.loc[("bikes", "T1"), "targets"] == 1 and cdf.loc[("bikes", "T1"), "infra_error"] == 1


@pytest.mark.slow
def test_score_warns_and_strict_exits_3(oracle_runs, tmp_path):
    _clean, err = oracle_runs
    run = tmp_path / "err"
    shutil.copytree(err, run)
    res = subprocess.run([*CLI, "score", str(run)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert (
        "warning: 9 record(s) of 1 interaction(s) carry an infrastructure error (t1-cyclist); "
        "1 target(s) whose decision points all failed are left out of every score"
    ) in res.stderr
    assert "--retry-errors" in res.stderr
    strict = subprocess.run([*CLI, "score", str(run), "--strict"], capture_output=True, text=True)
    assert strict.returncode == 3 and (run / "scores" / "summary.json").exists()


@pytest.mark.slow
def test_partial_run_counted_in_health_and_strict_exits_4(oracle_runs, tmp_path):
    clean, _err = oracle_runs
    run = tmp_path / "partial"
    shutil.copytree(clean, run)
    rows = (run / "responses.jsonl").read_text().splitlines(keepends=True)
    # drop t8b-said's last point (7.6) and every point of t2-cut
    recs = [json.loads(x) for x in rows]
    keep = [r for r in recs if r["interaction_id"] != "t2-cut"]
    keep = [r for r in keep if not (r["interaction_id"] == "t8b-said" and r["t"] == 7.6)]
    assert len(keep) < len(rows) - 1
    (run / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    res = subprocess.run([*CLI, "score", str(run), "--strict"], capture_output=True, text=True)
    assert res.returncode == 4, res.stderr
    assert "Resume it by running the same `interactscope collect` command again" in res.stderr
    h = json.loads((run / "scores" / "summary.json").read_text())["health"]
    assert h["partial_interactions"] == 1 and h["interactions_without_records"] == 1
    clean_res = subprocess.run([*CLI, "score", str(clean), "--strict"], capture_output=True)
    assert clean_res.returncode == 0


def test_a_judge_that_raises_is_named_in_one_line(tmp_path, monkeypatch):
    """A (plug-in) judge whose judge() raises: score says which judge, in one line, exit 1."""
    from typer.testing import CliRunner

    from interactscope.cli import app
    from interactscope.core import registry
    from interactscope.streaming.collect import run_collect
    from interactscope.streaming.judges.lexical import LexicalJudge

    class Boom(LexicalJudge):
        def judge(self, triples):
            raise RuntimeError("boom\nsecond line")

    def make_boom(arg, **options):
        j = Boom()
        j.name = "boom"
        return j

    monkeypatch.setitem(registry.table("judges"), "boom", make_boom)
    run = tmp_path / "run"
    run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    res = CliRunner().invoke(app, ["score", str(run), "--judge", "boom"])
    assert res.exit_code == 1
    assert res.stderr == ("judge 'boom' raised RuntimeError: boom (-v shows the traceback)\n")
