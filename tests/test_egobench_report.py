"""`interactscope ego score` and `ego report`: files, labelled MicroAcc figures, intervals."""

from __future__ import annotations

import json
import math

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
    retail = table[(table.scenario == "retail") & (table.agent == "unknown")]
    easy = retail[(retail["mode"] == "easy") & (retail.variant == "all")].iloc[0]
    assert easy.cluster == "variant"
    # per variant (cluster = task): the GT replay solves all 32, the empty log none of 49
    r1 = retail[(retail["mode"] == "easy") & (retail.variant == "retail1")].iloc[0]
    r6 = retail[(retail["mode"] == "easy") & (retail.variant == "retail6")].iloc[0]
    assert (r1.cluster, r1.n_tasks, r1.JointSucc, r1.JointSucc_low, r1.JointSucc_high) == (
        "task",
        32,
        1.0,
        1.0,
        1.0,
    )
    assert (r6.n_tasks, r6.JointSucc, r6.MicroAcc) == (49, 0.0, 0.0)
    # retail1 GT replay (32 tasks, 79/79 calls) + retail6 empty log (49 tasks, 0/165)
    assert easy.JointSucc == pytest.approx(32 / 81)
    assert easy.MicroAcc_pooled == pytest.approx(79 / 244)
    assert easy.MicroAcc_reference_per_file_weighted == pytest.approx((1.0 * 32 + 0.0 * 49) / 81)
    # two clusters with ratios 1 and 0: a quarter of resamples draw each one twice
    assert (easy.JointSucc_low, easy.JointSucc_high) == (0.0, 1.0)
    assert easy.err_syntax == 49 and easy.n_variants == 2
    mean = retail[retail["mode"] == "mean of modes"].iloc[0]
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


# --- run folders of two agents (hand-made runs: replays of the first N tasks' ground truth) ---


@pytest.fixture(scope="module")
def two_agents(tmp_path_factory):
    from tests.helpers.ego_runs import make_run

    base = tmp_path_factory.mktemp("agents")
    return base, make_run(base / "a", "full", 7), make_run(base / "b", "no_rules", 4)


def _report(*args):
    return CliRunner().invoke(app, ["ego", "report", *map(str, args), "--resamples", "500"])


def test_report_of_run_folders_one_row_per_agent(two_agents):
    base, a, b = two_agents
    res = _report(a, b, "--out", base / "rep")
    assert res.exit_code == 0, res.output
    assert "scored into" in res.output  # the runs had no score yet
    table = pd.read_csv(base / "rep" / "report.csv")
    assert list(table.agent) == ["egointeract:fake,full", "egointeract:fake,no_rules [no_rules]"]
    assert list(table.JointSucc) == [7 / 8, 4 / 8]  # not pooled into 11/16
    assert set(table.variant) == {"retail1"} and set(table.cluster) == {"task"}
    d = pd.read_csv(base / "rep" / "differences.csv").set_index("agent")
    # paired on the 8 shared tasks: tasks 5-7 solved by a only -> -3/8 = -37.5 points; every
    # task-level difference is <= 0, so no resample can be above 0
    b_row = d.loc["egointeract:fake,no_rules [no_rules]"]
    assert b_row.d_Joint == pytest.approx(-37.5) and b_row.d_Joint_high <= 0 < -b_row.d_Joint_low
    assert b_row.n_tasks == 8 and math.isnan(d.loc["egointeract:fake,full"].d_Joint)
    # one unit in the file: the levels in percent too (a 7/8, b 4/8 of the 8 shared tasks)
    assert (d.loc["egointeract:fake,full"].Joint, b_row.Joint) == (87.5, 50.0)
    assert b_row.Joint - d.loc["egointeract:fake,full"].Joint == pytest.approx(b_row.d_Joint)
    assert (
        "Paired differences against `egointeract:fake,full`"
        in (base / "rep" / "report.md").read_text()
    )


def test_report_pools_agents_only_when_asked(two_agents):
    base, a, b = two_agents
    res = _report(a, b, "--out", base / "pooled", "--pool")
    assert res.exit_code == 0, res.output
    table = pd.read_csv(base / "pooled" / "report.csv")
    assert len(table) == 1 and table.JointSucc[0] == 11 / 16 and table.n_tasks[0] == 16
    assert table.agent[0].startswith("pooled (")


def test_report_refuses_one_score_given_twice(two_agents):
    base, a, _ = two_agents
    _report(a, "--out", base / "x")  # scores a
    res = _report(a, a / "scores" / "retail1", "--out", base / "dup")
    assert res.exit_code == 1 and "already given by" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_a_plugin_egobench_metric_is_a_report_column(scored, monkeypatch):
    """The EgoBench metric table is the registry kind ``metrics`` (names ``egobench.*``): a
    plug-in column after the paper's four, the paper's numbers unchanged (issue 23)."""
    from interactscope.core import registry
    from interactscope.egobench.metrics import ego_metrics

    tmp, outs, runner = scored
    monkeypatch.setitem(
        registry.table("metrics"), "egobench.CallsPerTask", {"numerator": "matched"}
    )
    assert [m.name for m in ego_metrics()] == [
        "JointSucc", "MicroAcc", "ToolSucc", "ResultSucc", "CallsPerTask"
    ]  # fmt: skip
    res = runner.invoke(app, ["ego", "report", *map(str, outs[:2]), "--out", str(tmp / "plug"),
                              "--resamples", "200"])  # fmt: skip
    assert res.exit_code == 0, res.output
    table = pd.read_csv(tmp / "plug" / "report.csv")
    r1 = table[(table["mode"] == "easy") & (table.variant == "retail1")].iloc[0]
    r6 = table[(table["mode"] == "easy") & (table.variant == "retail6")].iloc[0]
    # the GT replay of retail1 matches 79 calls over its 32 tasks; the empty log none of 49
    assert r1.CallsPerTask == pytest.approx(79 / 32) and r6.CallsPerTask == 0.0
    assert (r1.JointSucc, r1.MicroAcc, r6.JointSucc) == (1.0, 1.0, 0.0)
    assert (
        "| ResultSucc | CallsPerTask | MicroAcc ref. per-file |"
        in (tmp / "plug" / "report.md").read_text()
    )
    monkeypatch.setitem(registry.table("metrics"), "egobench.Bad", {"numerator": "calls"})
    registry.refresh()  # a broken plug-in is left out with one warning; the others stay
    with pytest.warns(registry.PluginWarning, match="calls is not a tasks.csv column.*; skipped"):
        assert [m.name for m in ego_metrics()][-1] == "CallsPerTask"
