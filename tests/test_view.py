"""The viewer's data: per-response classes, gained/lost targets, frames seen, score cells, CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.view import ViewError, ViewSettings, build_view, render_page
from interactscope.view.classify import classify_interaction
from tests.helpers.view_fixtures import collect_oracle, make_pair


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    return make_pair(tmp_path_factory.mktemp("view"))


def _records(iid: str, end: int, said: dict[float, str], **flags) -> list[ResponseRecord]:
    out = []
    for t in range(end + 1):
        text = said.get(float(t))
        out.append(
            ResponseRecord(interaction_id=iid, t=t, text=text or "<SILENT>", silent=text is None)
        )
    for t, kw in flags.items():
        rec = out[int(t[1:])]
        for k, v in kw.items():
            setattr(rec, k, v)
    return out


def _inter(task: str, targets: list[dict], q: float = 0.0) -> Interaction:
    return Interaction.model_validate(
        {
            "id": "x",
            "video_id": "v",
            "task": task,
            "query": {"time_s": q, "text": "r"},
            "targets": targets,
        }  # fmt: skip
    )


def test_worked_example_classes():
    # The specification's worked example: q = 0, τ = 10 and 20, δ = 2, merge 2; responses at
    # 6 and 7 ("x"), 11 and 19 (correct). Scoring wrote k1 premature (consumed group {6, 7}),
    # k2 hit by the response at 19.
    inter = _inter("T2", [{"id": "k1", "time_s": 10.0}, {"id": "k2", "time_s": 20.0}])
    recs = _records("x", 25, {6.0: "x", 7.0: "x", 11.0: "right", 19.0: "right"})
    rows = {
        "k1": {"outcome": "premature", "response_t": 6.0, "verdict": ""},
        "k2": {"outcome": "hit", "response_t": 19.0, "verdict": "yes"},
    }
    marks, outcomes, regions = classify_interaction(inter, recs, rows)
    got = [(m.t, m.cls, m.target, m.matched) for m in marks]
    assert got == [
        (6.0, "premature", "k1", False),
        (7.0, "premature", "k1", False),
        (11.0, "unmatched", None, False),  # a later group in k1's region counts for nothing
        (19.0, "hit", "k2", True),
    ]
    assert outcomes == {"k1": "premature", "k2": "hit"}
    assert regions == {"k1": (0.0, 15.0), "k2": (15.0, None)}
    assert marks[3].verdict == "yes"


def test_a_late_group_of_an_infra_error_target_is_marked_infra_error():
    # T2 target at 10 s, δ = 2: every window point 10, 11, 12 failed, so infra_error_rule=window
    # made the target infra_error; the response at 15 joined its (late) group. The mark says
    # infra_error, as scores/responses.csv does, not late.
    inter = _inter("T2", [{"id": "k1", "time_s": 10.0}])
    failed = {f"t{t}": {"error": "boom", "silent": False} for t in (10, 11, 12)}
    recs = _records("x", 16, {15.0: "late answer"}, **failed)
    rows = {"k1": {"outcome": "infra_error", "response_t": 15.0, "verdict": ""}}
    marks, outcomes, _ = classify_interaction(inter, recs, rows)
    assert [(m.t, m.cls) for m in marks] == [
        (10.0, "error"), (11.0, "error"), (12.0, "error"), (15.0, "infra_error"),
    ]  # fmt: skip
    assert marks[3].target == "k1"
    assert outcomes == {"k1": "infra_error"}


def test_t8_matching_classes():
    inter = _inter(
        "T8-A", [{"id": "k1", "interval_s": [2.0, 4.0]}, {"id": "k2", "interval_s": [6.0, 8.0]}]
    )
    recs = _records("x", 9, {3.0: "a", 5.0: "b", 7.0: "c"})
    rows = {
        "k1": {"outcome": "hit", "response_t": 3.0},
        "k2": {"outcome": "hit", "response_t": 7.0},
    }
    marks, _, regions = classify_interaction(inter, recs, rows)
    assert [(m.t, m.cls, m.target) for m in marks] == [
        (3.0, "hit", "k1"),
        (5.0, "unmatched", None),
        (7.0, "hit", "k2"),
    ]
    assert regions == {}


def test_error_suppressed_before_q_and_unscored():
    inter = _inter("T2", [{"id": "k1", "time_s": 5.0}], q=2.0)
    recs = _records(
        "x", 8, {1.0: "early", 4.0: "ok"}, t6={"error": "boom", "silent": False},
        t7={"suppressed": True},
    )  # fmt: skip
    rows = {"k1": {"outcome": "hit", "response_t": 4.0, "verdict": "yes"}}
    marks, _, _ = classify_interaction(inter, recs, rows)
    assert [(m.t, m.cls) for m in marks] == [
        (1.0, "ignored"), (4.0, "hit"), (6.0, "error"), (7.0, "suppressed"),
    ]  # fmt: skip
    assert marks[2].error == "boom"
    unscored, outcomes, _ = classify_interaction(inter, recs, None)
    assert [m.cls for m in unscored] == ["ignored", "unscored", "error", "suppressed"]
    assert outcomes == {"k1": ""}


def test_pair_gained_lost_and_marks(pair):
    a, b = pair
    page = build_view([a, b], ViewSettings(resamples=200))
    assert [r.label for r in page.runs] == ["run-a", "run-b"]  # one model: folder names
    assert len(page.interactions) == 11  # the demo's 11 interactions
    assert page.gained == ["t2-bunny/k1"]
    assert page.lost == ["t1-taxi/k1"]
    taxi = next(i for i in page.interactions if i.id == "t1-taxi")
    assert [(m.t, m.cls, m.target) for m in taxi.runs[1].marks] == [(0.0, "premature", "k1")]
    assert [(m.t, m.cls, m.verdict) for m in taxi.runs[0].marks] == [(2.0, "hit", "yes (tool set)")]
    obst = next(i for i in page.interactions if i.id == "t8a-obstacles")
    classes = {m.t: m.cls for m in obst.runs[1].marks}
    assert classes[5.0] == "error" and classes[6.0] == "suppressed"


def test_scores_of_run_a(pair):
    a, _ = pair
    cells = {c.metric: c for c in build_view([a], ViewSettings(resamples=200)).runs[0].scores}
    assert cells["T2"].estimate == pytest.approx(50.0)  # t2-cut hit, t2-bunny missed
    assert cells["T2"].counts == "1/2"
    assert cells["Overall"].estimate == pytest.approx(100 * 13 / 14)  # 14 demo targets
    assert cells["Overall"].low <= cells["Overall"].estimate <= cells["Overall"].high
    # Avg(6) over T1, T2, T3, T7 = (100 + 50 + 100 + 100) / 4
    assert cells["Avg(6)"].estimate == pytest.approx(87.5)
    # 13 non-silent responses over the probed span (interactions' last t - q, summed: 69.116 s
    # + t1-home-chores' 5.312 s = 74.428 s)
    vol = cells["Output volume"]  # the metric table's name, as in summary.json and compare
    assert vol.estimate == pytest.approx(13 / (74.428 / 60), rel=1e-3)
    assert vol.counts == "13 responses / 1.24 min"
    # T1: t1-taxi, t1-cyclist, t1-speech, t1-home-chores (2 targets): all on time and correct
    assert cells["T1 joint"].counts == cells["T1 on-time"].counts == "5/5"
    assert "T1" not in cells and "Output volume (/min)" not in cells


@pytest.mark.slow
def test_frames_follow_the_run_settings(tmp_path):
    run = collect_oracle(tmp_path / "capped", **{"frames.max": 2, "frames.cap_policy": "recent"})
    page = build_view([run], ViewSettings(resamples=200))
    taxi = next(i for i in page.interactions if i.id == "t1-taxi")  # bikes.mp4, 25 fps from 0
    seen = taxi.runs[0].frames["5000"]
    assert seen.times == [4.0, 5.0]  # the newest 2 of the frames at seconds 0..5
    assert all(k and page.thumbs[k].startswith("data:image/jpeg;base64,") for k in seen.thumbs)
    default = build_view([collect_oracle(tmp_path / "plain")], ViewSettings(resamples=200))
    d_taxi = next(i for i in default.interactions if i.id == "t1-taxi")
    assert d_taxi.runs[0].frames["5000"].times == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_thumbnail_cap(pair):
    a, _ = pair
    page = build_view([a], ViewSettings(max_thumbnails=3, resamples=200))
    assert len(page.thumbs) == 3
    assert any("thumbnail cap reached" in w for w in page.runs[0].warnings)
    first = page.interactions[0].runs[0].frames
    assert sum(1 for f in first.values() for k in f.thumbs if k) >= 3


def test_page_is_self_contained(pair):
    a, b = pair
    html = render_page(build_view([a, b], ViewSettings(resamples=200)))
    assert not re.search(r"""(src|href)=["']https?://""", html)  # no network
    payload = re.search(
        r'<script type="application/json" id="view-data">(.*?)</script>', html, re.S
    )
    data = json.loads(payload.group(1))
    assert len(data["interactions"]) == 11 and data["page"] == "streaming"


def test_cli_view_and_errors(pair, tmp_path):
    a, b = pair
    out = tmp_path / "page.html"
    res = CliRunner().invoke(app, ["view", str(a), str(b), "--out", str(out), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert out.is_file() and f"wrote {out}" in res.output
    bad = CliRunner().invoke(app, ["view", str(tmp_path), "--out", str(out)])
    assert bad.exit_code == 1
    assert "not a run folder" in bad.output and "Traceback" not in bad.output
    neg = CliRunner().invoke(app, ["view", str(a), "--max-thumbs", "-1"])
    assert neg.exit_code == 1 and "--max-thumbs" in neg.output


def test_no_runs_is_an_error():
    with pytest.raises(ViewError, match="no run folders"):
        build_view([])


def test_run_card_and_score_column_say_how_many_interactions_a_run_covers(pair, tmp_path):
    """A `collect --limit 4` run covers 4 of the demo's 11 interactions: the page says so in its
    run card and score column header, as the demo leaderboard's `interactions` column does."""
    from interactscope.streaming.collect import run_collect
    from tests.helpers.foundation_fixtures import DEMO

    part = tmp_path / "part"
    run_collect(model="silent", bench=DEMO, out=part, limit=4, progress=False)
    page = build_view([pair[0], part], ViewSettings(resamples=200))
    assert [r.interactions for r in page.runs] == ["11 of 11 interactions", "4 of 11 interactions"]
    html = render_page(page)
    assert '"interactions":"4 of 11 interactions"' in html.replace(": ", ":")
    js = (Path(__file__).parents[1] / "interactscope/view/templates/streaming.js").read_text()
    card = next(x for x in js.splitlines() if 'class="runcard"' in x)
    head = next(x for x in js.splitlines() if "metric (%; 95% CI)" in x)
    assert "r.interactions" in card and "r.interactions" in head


def test_score_cells_round_as_the_leaderboard():
    """blind-fire's Avg(6) interval [6.25, 12.5]: Python's one-decimal format gives 6.2 (6.25 is
    exact in binary, ties go to even); JavaScript's toFixed(1) gave 6.3. The page prints the
    text Python formatted, so it equals the leaderboard's cell."""
    import pandas as pd

    from interactscope.streaming.demo import _cell
    from interactscope.view.model import ScoreCell

    cell = ScoreCell(metric="Avg(6)", estimate=10.0, low=6.25, high=12.5)
    assert (cell.text, cell.interval) == ("10.0", "[6.2, 12.5]")
    assert cell.model_dump()["interval"] == "[6.2, 12.5]"
    row = pd.Series({"estimate": 10.0, "low": 6.25, "high": 12.5})
    assert _cell(row) == "10.0 [6.2, 12.5]" == f"{cell.text} {cell.interval}"
    assert ScoreCell(metric="T2", estimate=None).text == "—"
    js = (Path(__file__).parents[1] / "interactscope/view/templates/streaming.js").read_text()
    ci = js[js.index("function ciCell") : js.index("function runCell")]
    assert "c.interval" in ci and "c.text" in ci and "fmt(c.low)" not in ci
