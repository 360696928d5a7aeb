"""``compare-judges``: per-task agreement and Cohen's kappa of two verdict files on one run,
checked against kappas worked by hand, and the disagreement list with its viewer links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import interactscope.cli.judges  # noqa: F401 - registers compare-judges on the app
from interactscope.cli import app
from interactscope.streaming.analysis.judge_agreement import cohen_kappa, compare_judges
from tests.helpers.media_fixtures import write_silent_video

TAUS = (2.0, 5.0, 8.0)  # windows [0, 4], [3, 7], [6, 10]; the oracle answers at τ


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """Oracle run: T2 interactions a, b and T3 interaction c, three targets each (9 pairs)."""
    from interactscope.streaming.collect import run_collect

    root = tmp_path_factory.mktemp("agree")
    bench = root / "bench"
    (bench / "media").mkdir(parents=True)
    write_silent_video(bench / "media" / "v.mp4", seconds=10.0)
    videos = [{"id": "v", "path": "media/v.mp4"}]
    (bench / "benchmark.json").write_text(
        json.dumps({"name": "a", "version": "1", "videos": videos})
    )
    inters = [
        {
            "id": iid,
            "video_id": "v",
            "task": task,
            "query": {"time_s": 0, "text": f"request {iid}"},
            "targets": [
                {"id": f"k{n}", "reference": f"{iid} event {n}", "time_s": tau}
                for n, tau in enumerate(TAUS, 1)
            ],
        }
        for iid, task in (("a", "T2"), ("b", "T2"), ("c", "T3"))
    ]
    (bench / "interactions.jsonl").write_text("".join(json.dumps(i) + "\n" for i in inters))
    run_collect(model="oracle", bench=bench, out=root / "run", progress=False)
    return root / "run"


def verdict_file(path: Path, verdicts: dict[str, str]) -> Path:
    """{"a/k1": "yes", ...} -> a file: judge JSONL (response time = the target's τ)."""
    lines = []
    for key, v in verdicts.items():
        iid, tid = key.split("/")
        t = TAUS[int(tid[1:]) - 1]
        lines.append(json.dumps({"interaction_id": iid, "target_id": tid, "t": t, "verdict": v}))
    path.write_text("\n".join(lines) + "\n")
    return path


A = {"a/k1": "yes", "a/k2": "yes", "a/k3": "yes", "b/k1": "no", "b/k2": "no", "b/k3": "yes",
     "c/k1": "yes", "c/k2": "no", "c/k3": "no"}  # fmt: skip
B = {"a/k1": "yes", "a/k2": "no", "a/k3": "yes", "b/k1": "no", "b/k2": "yes", "b/k3": "yes",
     "c/k1": "yes", "c/k2": "no", "c/k3": "maybe"}  # fmt: skip


@pytest.fixture
def files(tmp_path):
    return verdict_file(tmp_path / "a.jsonl", A), verdict_file(tmp_path / "b.jsonl", B)


def test_kappa_matches_the_hand_computation(run_dir, files):
    fa, fb = files
    rep = compare_judges(run_dir, f"file:{fa}", f"file:{fb}")
    t2, t3 = rep.tasks
    # T2, 6 pairs: A = Y Y Y N N Y, B = Y N Y N Y Y -> agree 4, p_o = 4/6 = 2/3;
    # A yes 4/6, B yes 4/6: p_e = (4/6)(4/6) + (2/6)(2/6) = 20/36 = 5/9;
    # kappa = (2/3 - 5/9) / (1 - 5/9) = (1/9) / (4/9) = 1/4
    assert (t2.task, t2.pairs, t2.compared, t2.agree, t2.a_yes, t2.b_yes) == ("T2", 6, 6, 4, 4, 4)
    assert t2.agreement == pytest.approx(2 / 3) and t2.kappa == pytest.approx(0.25)
    # T3, 3 pairs, B's "maybe" is unparseable: 2 compared (Y/Y, N/N), p_o = 1;
    # p_e = (1/2)(1/2) + (1/2)(1/2) = 1/2; kappa = (1 - 1/2) / (1 - 1/2) = 1
    assert (t3.pairs, t3.compared, t3.unparseable, t3.kappa) == (3, 2, 1, pytest.approx(1.0))
    # overall, 8 compared: agree 6, p_o = 3/4; A yes 5/8, B yes 5/8:
    # p_e = 25/64 + 9/64 = 17/32; kappa = (24/32 - 17/32) / (15/32) = 7/15
    o = rep.overall
    assert (o.pairs, o.compared, o.agree) == (9, 8, 6)
    assert o.kappa == pytest.approx(7 / 15)


def test_disagreements_listed_with_text_outcomes_and_view_link(run_dir, files):
    fa, fb = files
    rep = compare_judges(run_dir, f"file:{fa}", f"file:{fb}")
    got = [(d.interaction_id, d.target_id, d.verdict_a, d.verdict_b) for d in rep.disagreements]
    assert got == [
        ("a", "k2", "yes", "no"),
        ("b", "k2", "no", "yes"),
        ("c", "k3", "no", "unparseable"),
    ]
    d = rep.disagreements[0]
    assert (d.reference, d.candidate, d.request) == ("a event 2", "a event 2", "request a")
    assert (d.outcome_a, d.outcome_b, d.response_t, d.link) == ("hit", "wrong", 5.0, None)
    (run_dir / "view.html").write_text("<html></html>")
    try:
        rep = compare_judges(run_dir, f"file:{fa}", f"file:{fb}")
    finally:
        (run_dir / "view.html").unlink()
    assert [d.link for d in rep.disagreements] == [
        f"{run_dir / 'view.html'}#i-{n}"
        for n in (0, 1, 2)  # the viewer's section ids i-N
    ]


def test_cli_prints_table_and_writes_json(run_dir, files, tmp_path):
    fa, fb = files
    out = tmp_path / "agree.json"
    args = ["compare-judges", str(run_dir), "--judges", f"file:{fa}", f"file:{fb}", "-o", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "0.250" in res.output and "0.467" in res.output and "3 pair(s)" in res.output
    assert json.loads(out.read_text())["overall"]["agree"] == 6
    bad = CliRunner().invoke(app, ["compare-judges", str(run_dir), "--judges", "nope", "lexical"])
    assert bad.exit_code == 1 and "unknown judge 'nope'" in bad.output
    assert "Traceback" not in bad.output


def test_kappa_edge_cases():
    assert cohen_kappa([], []) is None
    assert cohen_kappa([True, True], [True, True]) is None  # p_e = 1: undefined
    # p_o = 0, p_e = (1/2)(1/2) + (1/2)(1/2) = 1/2: kappa = -1
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="paired"):
        cohen_kappa([True], [])
