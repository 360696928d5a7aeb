"""After an interruption (Ctrl-C, an error that stops the collect, SIGKILL) and a resume,
``run.json``'s ``summary.timings`` is the sum of every invocation's own timings, the stopped one
timed up to the stop (or, killed, up to its last checkpoint), not only the last invocation's.

The stub answers each point with known engine figures (:class:`tests.helpers.timed.Timed`:
model 50 s, process 0.1 s, 10 prompt tokens of which 4 cached, 2 completion tokens); the clip
gives 9 points (t = 0, 1, ..., 7, 7.6), collected in batches of 4, and the first invocation
stops at t = 4: batch 1 (4 points) is written, the remaining 5 points come with the resume."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.runs.folder import CHECKPOINT
from interactscope.streaming.collect import CollectError, run_collect
from interactscope.streaming.schema import StageTimings
from tests.helpers.foundation_fixtures import interaction, write_bench
from tests.helpers.timed import MODEL_S, configs

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("load_s", "collect_s", "decode_s", "process_s", "model_s", "write_s")
TOKENS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cached_of_prompt_tokens")


@pytest.fixture
def stopping(tmp_path, monkeypatch):
    """``make(**cfg)``: the path of the stopping stub's model config."""
    return configs(tmp_path, monkeypatch, "Stopping")


def _collect(model: str, bench: Path, run: Path):
    return run_collect(model=model, bench=bench, out=run, progress=False, batch_size=4)


def _run_json(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def _timings(summary: dict) -> StageTimings:
    assert summary["timings"] is not None
    return StageTimings.model_validate(summary["timings"])


def _assert_whole_run(m: dict) -> StageTimings:
    """The run's timings and wall are the sums of its invocations' own; returns the total."""
    parts = [_timings(i["summary"]) for i in m["invocations"]]
    total = _timings(m["summary"])
    for k in STAGES:
        assert getattr(total, k) == round(sum(getattr(p, k) for p in parts), 3), k
    for k in TOKENS:
        assert getattr(total, k) == sum(getattr(p, k) for p in parts), k
    walls = [i["summary"]["wall_s"] for i in m["invocations"]]
    assert m["summary"]["wall_s"] == round(sum(walls), 3)
    return total


def _assert_by_hand(total: StageTimings) -> None:
    """4 + 5 points: 9 x the stub's figures."""
    assert total.model_s == 9 * MODEL_S and total.process_s == pytest.approx(0.9)
    assert (total.prompt_tokens, total.completion_tokens) == (90, 18)
    assert (total.cached_tokens, total.prefix_cache_hit_rate) == (36, 0.4)


def _assert_first_four(summary: dict) -> StageTimings:
    """The stopped invocation's own figures: the 4 points of batch 1."""
    t = _timings(summary)
    assert summary["written"] == 4
    assert t.model_s == 4 * MODEL_S and summary["model_s"] == 4 * MODEL_S
    assert (t.prompt_tokens, t.cached_tokens) == (40, 16)
    assert t.decode_s > 0 and t.write_s > 0  # the clip decoded, batch 1 synced
    return t


def test_ctrl_c_records_its_timings_and_the_resume_sums_both(tmp_path, stopping):
    bench, run = write_bench(tmp_path / "b", [interaction("a")]), tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        _collect(stopping(stop_at=4, stop="interrupt"), bench, run)
    m = _run_json(run)
    (inv,) = m["invocations"]
    assert inv["interrupted"] and inv.get("error") is None and m["ended_at"] is None
    t = _assert_first_four(inv["summary"])
    # its wall is the load plus the loop up to Ctrl-C (the unanswered batch 2 is in the loop)
    assert inv["summary"]["wall_s"] == pytest.approx(t.load_s + t.collect_s, abs=0.002)
    assert _timings(m["summary"]).model_s == 4 * MODEL_S
    assert not (run / CHECKPOINT).exists()  # run.json holds it now

    second = _collect(stopping(), bench, run)
    assert second.written == 5 and second.timings.model_s == 5 * MODEL_S
    m = _run_json(run)
    assert [i["interrupted"] for i in m["invocations"]] == [True, False]
    _assert_by_hand(_assert_whole_run(m))


def test_an_error_that_stops_collect_is_an_interrupted_timed_invocation(tmp_path, stopping):
    bench, run = write_bench(tmp_path / "b", [interaction("a")]), tmp_path / "r"
    with pytest.raises(CollectError, match="drops the audio"):
        _collect(stopping(stop_at=4, stop="fatal"), bench, run)
    (inv,) = _run_json(run)["invocations"]
    assert (
        inv["interrupted"] and inv.get("error") == "FatalAdapterError: the server drops the audio"
    )
    _assert_first_four(inv["summary"])
    _collect(stopping(), bench, run)
    _assert_by_hand(_assert_whole_run(_run_json(run)))


KILL_CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from interactscope.core import registry as plugins
    from interactscope.streaming.collect import run_collect
    plugins.table("backends")["timed"] = "tests.helpers.timed:Stopping"
    run_collect(model={model!r}, bench={bench!r}, out={run!r}, progress=False, batch_size=4)
    """
)


def test_a_killed_invocation_counts_up_to_its_last_checkpoint(tmp_path, stopping):
    bench, run = write_bench(tmp_path / "b", [interaction("a")]), tmp_path / "r"
    model = stopping(stop_at=4, stop="kill")
    code = KILL_CHILD.format(root=str(ROOT), model=model, bench=str(bench), run=str(run))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == -signal.SIGKILL, res.stderr
    assert _run_json(run)["invocations"][0]["summary"] is None  # a kill writes nothing
    cp = json.loads((run / CHECKPOINT).read_text())  # batch 1's, written with its fsync
    assert cp["started_at"] == _run_json(run)["invocations"][0]["started_at"]
    assert cp["summary"]["timings"]["model_s"] == 4 * MODEL_S

    args = ["collect", "--model", stopping(), "--bench", str(bench), "--out", str(run),
            "--no-progress", "--batch-size", "4"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "whole run (2 invocations, 1 killed (timed up to the last synced batch))" in res.output
    m = _run_json(run)
    killed, second = m["invocations"]
    assert killed["ended_at"] is None and not killed["interrupted"]
    assert killed["summary"]["checkpoint_at"] == cp["at"]
    t = _assert_first_four(killed["summary"])
    assert killed["summary"]["wall_s"] == pytest.approx(t.load_s + t.collect_s, abs=0.002)
    assert _timings(second["summary"]).model_s == 5 * MODEL_S
    _assert_by_hand(_assert_whole_run(m))
    assert not (run / CHECKPOINT).exists()


def _left_as_killed(stopping, tmp_path) -> tuple[Path, Path]:
    """A run folder left as a kill after batch 1 leaves it (run.json untouched since the
    start, the checkpoint of batch 1), made in this process."""
    bench, run = write_bench(tmp_path / "b", [interaction("a")]), tmp_path / "r"
    with pytest.raises(SystemExit):
        _collect(stopping(stop_at=4, stop="exit"), bench, run)
    assert _run_json(run)["invocations"][0]["summary"] is None
    assert (run / CHECKPOINT).exists()
    return bench, run


@pytest.mark.parametrize("damage", ["garbage", "other invocation"])
def test_an_unusable_checkpoint_leaves_the_killed_invocation_untimed(
    tmp_path, stopping, caplog, damage
):
    bench, run = _left_as_killed(stopping, tmp_path)
    cp = run / CHECKPOINT
    if damage == "garbage":  # never fsynced: a power loss can leave anything
        cp.write_text('{"at": ')
    else:
        cp.write_text(json.dumps({**json.loads(cp.read_text()), "started_at": "2020-01-01"}))
    with caplog.at_level(logging.WARNING):
        _collect(stopping(), bench, run)
    assert ("unreadable" in caplog.text) == (damage == "garbage")
    m = _run_json(run)
    killed, second = m["invocations"]
    assert killed["summary"] is None  # its stage times are lost ...
    assert m["summary"]["decision_points"] == 9  # ... its 4 records still count
    assert _timings(m["summary"]) == _timings(second["summary"])
    assert not cp.exists()


def test_a_run_json_from_before_checkpoints_still_resumes(tmp_path, stopping):
    """An interrupted invocation recorded the old way (counts, ``timings`` null, no ``error``
    key) and a killed one without checkpoint: the folder loads and resumes, and the run's
    timings are those of the one invocation that has them."""
    bench, run = write_bench(tmp_path / "b", [interaction("a")]), tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        _collect(stopping(stop_at=4, stop="interrupt"), bench, run)
    m = _run_json(run)
    inv = m["invocations"][0]
    inv.pop("error", None)
    inv["summary"] = {"decision_points": 4, "written": 4, "wall_s": 1.5, "timings": None}
    killed = {k: v for k, v in inv.items() if k not in ("summary", "ended_at", "interrupted")}
    m["invocations"].append(killed)
    m["summary"]["timings"] = None
    (run / "run.json").write_text(json.dumps(m))
    last = _collect(stopping(), bench, run)
    m = _run_json(run)
    assert [i["summary"] is None for i in m["invocations"]] == [False, True, False]
    assert _timings(m["summary"]) == last.timings
    assert m["summary"]["wall_s"] == round(1.5 + last.wall_s, 3)
    assert m["summary"]["decision_points"] == 9
