"""`interactscope ego score` and `ego report`: files, labelled MicroAcc figures, intervals."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.egobench import load_variant, package_data_dir

DATA = package_data_dir()


def _gt_entries(variant):
    return [
        {
            "scenario_id": t.task_id,
            "tool_calls": [
                {
                    "turn": 0,
                    "calls": [
                        {"tool_name": c.name, "parameters": c.arguments} for c in t.ground_truth
                    ],
                }
            ],
        }
        for t in variant.tasks
    ]


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ego")
    r1, r6 = load_variant(DATA, "retail1"), load_variant(DATA, "retail6")
    (tmp / "retail1_easy.json").write_text(json.dumps(_gt_entries(r1)))
    (tmp / "retail6_easy.json").write_text(
        json.dumps([{"scenario_id": t.task_id, "tool_calls": []} for t in r6.tasks])
    )
    (tmp / "retail1_hard.json").write_text(json.dumps(_gt_entries(r1)))
    runner = CliRunner()
    outs = []
    for name, variant in (
        ("retail1_easy", "retail1"),
        ("retail6_easy", "retail6"),
        ("retail1_hard", "retail1"),
    ):
        res = runner.invoke(
            app,
            [
                "ego",
                "score",
                "--log",
                str(tmp / f"{name}.json"),
                "--variant",
                variant,
                "--out",
                str(tmp / name),
            ],
        )
        assert res.exit_code == 0, res.output
        outs.append(tmp / name)
    return tmp, outs, runner


def test_score_writes_tasks_and_summary(scored):
    tmp, outs, _ = scored
    frame = pd.read_csv(outs[1] / "tasks.csv", keep_default_na=False)
    assert len(frame) == 49 and set(frame.error_class) == {"syntax"}
    summary = json.loads((outs[0] / "summary.json").read_text())
    assert (summary["mode"], summary["joint_succ"], summary["micro_acc"]) == ("easy", 1.0, 1.0)


def test_report_pooled_and_per_file_microacc(scored):
    tmp, outs, runner = scored
    res = runner.invoke(
        app, ["ego", "report", *map(str, outs), "--out", str(tmp / "rep"), "--resamples", "2000"]
    )
    assert res.exit_code == 0, res.output
    table = pd.read_csv(tmp / "rep" / "report.csv")
    easy = table[(table.scenario == "retail") & (table["mode"] == "easy")].iloc[0]
    # retail1 GT replay (32 tasks, 79/79 calls) + retail6 empty log (49 tasks, 0/165)
    assert easy.JointSucc == pytest.approx(32 / 81)
    assert easy.MicroAcc_pooled == pytest.approx(79 / 244)
    assert easy.MicroAcc_reference_per_file_weighted == pytest.approx((1.0 * 32 + 0.0 * 49) / 81)
    # two clusters with ratios 1 and 0: a quarter of resamples draw each one twice
    assert (easy.JointSucc_low, easy.JointSucc_high) == (0.0, 1.0)
    assert easy.err_syntax == 49 and easy.n_variants == 2
    mean = table[(table.scenario == "retail") & (table["mode"] == "mean of modes")].iloc[0]
    assert mean.JointSucc == pytest.approx((32 / 81 + 1.0) / 2)
    for ext in ("md", "tex", "csv"):
        assert (tmp / "rep" / f"report.{ext}").stat().st_size > 0


def test_score_bad_setting_one_line(scored):
    tmp, _, runner = scored
    res = runner.invoke(
        app,
        [
            "ego",
            "score",
            "--log",
            str(tmp / "retail1_easy.json"),
            "--variant",
            "retail1",
            "--out",
            str(tmp / "x"),
            "--set",
            "matching=best",
        ],
    )
    assert res.exit_code == 1 and "--set matching" in res.output and "Traceback" not in res.output


def test_report_of_unscored_folder_one_line(tmp_path):
    res = CliRunner().invoke(app, ["ego", "report", str(tmp_path), "--out", str(tmp_path / "r")])
    assert res.exit_code == 1 and "summary.json" in res.output and "Traceback" not in res.output
