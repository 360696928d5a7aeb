"""interactscope report: every table and figure from the demo runs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.analysis.compare import run_table
from interactscope.streaming.analysis.report import (
    assistance_table,
    build_report,
    classify,
    pair_runs,
    sequence_outcomes,
)
from interactscope.streaming.analysis.runs import ScoredRun
from tests.helpers.report_fixtures import make_demo_runs, manifest

B = 300
TABLES = [
    "table2_explicit",
    "failure_breakdown",
    "table3_assistance",
    "output_volume",
    "table8_priors",
    "scene_ablation",
    "beyond_paper",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("rep")
    runs = make_demo_runs(root / "runs")
    out = root / "report"
    rep = build_report(list(runs.values()), out, n_resamples=B)
    return runs, out, rep


@pytest.mark.slow
def test_every_table_in_three_formats(report):
    _, out, rep = report
    for name in TABLES:
        for ext in ("md", "tex", "csv"):
            assert (out / f"{name}.{ext}").stat().st_size > 0, f"{name}.{ext}"
    assert (out / "table10_policy.md").exists() and (out / "schedule.md").exists()
    tex = (out / "table2_explicit.tex").read_text()
    assert (
        r"\begin{table}" in tex and r"\caption{Explicit-request tasks (T1–T7), \% of targets" in tex
    )
    assert (out / "report.md").read_text().count("## ") >= 9


@pytest.mark.slow
def test_figures_png_and_pdf(report):
    _, out, _ = report
    for name in ("fig_scene_tolerance", "fig_sequences"):
        png = (out / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
        assert (out / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"


@pytest.mark.slow
def test_hand_checkable_values(report):
    _, out, _ = report
    t2 = pd.read_csv(out / "table2_explicit.csv")
    joint = t2[t2["metric"] == "T1 joint"].set_index("run")["estimate"]
    assert joint["oracle"] == 100.0 and joint["silent"] == 0.0
    fails = pd.read_csv(out / "failure_breakdown.csv").set_index(["Model", "task"])
    assert fails.loc[("silent", "T2"), "missed"] == 2
    curves = pd.read_csv(out / "fig_scene_tolerance.csv")
    oracle = curves[curves["run"] == "oracle (scene=none)"]
    assert oracle["estimate"].tolist() == [100.0, 100.0, 100.0]
    pol = pd.read_csv(out / "table10_policy.csv").set_index("condition")
    assert pol.loc["cooldown_s=10", "d_recall"] == -50.0


# blind-fire must call the most frequent T1 tool among those each interaction is offered; it
# picks the benchmark-wide one (add_to_household_action_list, which t1-taxi is not offered) until
# interactscope/streaming/adapters/baselines.py changes (patch proposed in the report of issue 13 item 4);
# remove the mark with that change. Today: joint 1/5, hit 1, wrong 3, missed 1.
@pytest.mark.slow
def test_hand_checkable_blind_fire_values(report):
    _, out, _ = report
    t2 = pd.read_csv(out / "table2_explicit.csv")
    joint = t2[t2["metric"] == "T1 joint"].set_index("run")["estimate"]
    assert joint["blind-fire"] == pytest.approx(100 * 2 / 5, abs=1e-3)  # CSV: 4 decimals
    fails = pd.read_csv(out / "failure_breakdown.csv").set_index(["Model", "task"])
    # blind fire answers every T1 query at q + 3 s with the most frequent tool it is offered:
    # search_web (taxi hit; cyclist, speech wrong); add_to_household_action_list in
    # t1-home-chores (k1 hit at 3 in [0, 4]; k2 missed: the one firing went to k1)
    assert fails.loc[("blind-fire", "T1"), ["hit", "wrong", "missed"]].tolist() == [2, 2, 1]


@pytest.mark.slow
def test_roles_and_pairs_recorded(report):
    runs, out, _ = report
    meta = json.loads((out / "report.json").read_text())
    roles = {r["label"]: r["role"] for r in meta["runs"]}
    assert roles["oracle"] == "main" and roles["oracle (scene=none)"] == "scene-none"
    assert (
        roles["oracle (history.n=5)"] == "history" and roles["oracle (cooldown_s=10)"] == "cooldown"
    )
    assert roles["oracle (grid.step_s=2)"] == "schedule"
    assert {(p["role"], p["main"]) for p in meta["pairs"]} == {
        ("scene-none", "oracle"),
        ("history", "oracle"),
        ("cooldown", "oracle"),
        ("schedule", "oracle"),
    }
    assert "table2_explicit" in meta["files"]


@pytest.mark.slow
def test_report_cli(report, tmp_path):
    runs, _, _ = report
    res = CliRunner().invoke(
        app,
        [
            "report",
            str(runs["oracle"]),
            str(runs["silent"]),
            "--out",
            str(tmp_path),
            "--resamples",
            "100",
            "--no-beyond",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "table2_explicit.tex").exists() and not (
        tmp_path / "beyond_paper.md"
    ).exists()
    assert "table8_priors: no scene=none run given" in res.output


def _t8c_run(outcomes):
    rows = []
    for e, steps in enumerate(outcomes):
        for k, h in enumerate(steps):
            rows.append(
                {
                    "interaction_id": f"e{e}",
                    "target_id": f"k{k}",
                    "target_index": k,
                    "task": "T8-C",
                    "cluster": f"c{e}",
                    "hit": h,
                    "scored": 1,
                    "on_time": np.nan,
                    "outcome": "hit" if h else "missed",
                }
            )
    t = pd.DataFrame(rows)
    i = pd.DataFrame(
        {
            "interaction_id": [f"e{e}" for e in range(len(outcomes))],
            "task": "T8-C",
            "panel": "assistance",
            "cluster": [f"c{e}" for e in range(len(outcomes))],
            "hits": [sum(s) for s in outcomes],
            "responses": 3,
            "probed_s": 30.0,
            "complete": [int(all(s)) for s in outcomes],
        }
    )
    return ScoredRun(None, manifest("m"), t, i, label="m")


def test_complete_t8c_with_permutation_reference():
    # hand-worked: step-1 outcomes 1,1,1,0,0 and step-2 1,0,1,1,0 -> observed 2, expected 1.8
    run = _t8c_run([[1, 1], [1, 0], [1, 1], [0, 1], [0, 0]])
    seqs = sequence_outcomes(run, "T8-C")
    assert list(seqs) == [2] and seqs[2].sum(axis=0).tolist() == [3, 3]
    metrics = run_table(run, n_resamples=200).assign(run="m")
    disp, raw = assistance_table(metrics, [run], n_permutations=2000)
    assert disp.loc[0, "Complete T8-C"].startswith("2/5 (K=2; perm. E=1.80")
    assert disp.loc[0, "T8-C steps"].startswith("60.00")
    row = raw[raw["metric"] == "Complete T8-C (K=2)"].iloc[0]
    assert row["estimate"] == 2 and row["expected"] == pytest.approx(1.8)


def test_classify_and_pair_by_settings():
    def run(label, model, settings, fp="f"):
        return ScoredRun(
            None, manifest(model, settings, fp), pd.DataFrame(), pd.DataFrame(), label=label
        )

    main = run("a", "m", {"adapter": {"delay_s": 2}})
    none = run("b", "m", {"scene": "none", "adapter": {"delay_s": 2}})
    other = run("c", "m", {"scene": "none", "adapter": {"delay_s": 5}})
    foreign = run("d", "m", {"cooldown_s": 10}, fp="g")
    assert [classify(r) for r in (main, none, foreign)] == ["main", "scene-none", "cooldown"]
    p = pair_runs([main, none, other, foreign])
    assert [(role, m.label, c.label) for role, m, c in p["pairs"]] == [("scene-none", "a", "b")]
    assert p["unpaired"] == ["c", "d"]


@pytest.mark.slow
def test_failure_breakdown_includes_t8(report):
    _, out, _ = report
    fails = pd.read_csv(out / "failure_breakdown.csv").set_index(["Model", "task"])
    assert "infra_error" not in fails.columns  # no run has one: no column
    # the demo has T8-A (2 targets) and T8-B (1): the silent model misses them all
    assert fails.loc[("silent", "T8-A"), ["hit", "missed", "targets"]].tolist() == [0, 2, 2]
    assert fails.loc[("silent", "T8-B"), ["missed", "targets"]].tolist() == [1, 1]
    assert fails.loc[("oracle", "T8-A"), ["hit", "premature", "wrong", "late"]].tolist() == [
        2,
        0,
        0,
        0,
    ]


def test_tolerance_figure_title_names_only_present_conditions():
    from interactscope.streaming.analysis.figures import _scene_words

    both = pd.DataFrame({"scene": ["full", "none"]})
    assert _scene_words(both) == "with and without scene input"
    assert _scene_words(pd.DataFrame({"scene": ["none"]})) == "request only (no scene input)"
    assert _scene_words(pd.DataFrame({"scene": ["full"]})) == "with scene input"


def test_report_names_each_judge_and_the_approximate_ones():
    from interactscope.streaming.analysis.report.build import _judge_lines
    from interactscope.streaming.scoring.results import ScoreSummary

    def run(label, judge, approximation=None):
        summary = ScoreSummary.model_validate(
            {"settings": {"judge": {"name": judge}}, "approximation": approximation}
        )
        return ScoredRun(None, manifest(label), pd.DataFrame(), pd.DataFrame(), summary, label)

    exact = [run("a", "openai:gpt-4o"), run("b", "openai:gpt-4o")]
    assert _judge_lines(exact) == "Judge: `openai:gpt-4o`."
    approx = "all-MiniLM-L6-v2 cosine >= 0.6 (offline approximation of an LLM judge)"
    assert _judge_lines([*exact, run("c", "embedding", approx)]) == (
        "Judges: `openai:gpt-4o` (`a`, `b`); `embedding` (`c`)\n"
        "NOTE: judge 'embedding' is an approximation of the paper's GPT-4o judge "
        "(--judge openai:gpt-4o): " + approx
    )
