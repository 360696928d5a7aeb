"""``interactscope demo``: the panel leaderboard, its report and viewer page; single-model mode."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.demo import DemoSettings, leaderboard, run_panel
from interactscope.streaming.environments.scores import EnvTotals
from tests.helpers.foundation_fixtures import DEMO


def _rows(table: str) -> dict[str, list[str]]:
    lines = [ln for ln in table.splitlines() if ln.startswith("|")][2:]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    return {c[0]: c[1:] for c in cells}


@pytest.mark.slow
def test_panel_discriminates(tmp_path):
    # Weight-free panel: the capped slot is blind-fire on the first 3 interactions.
    settings = DemoSettings(
        models=["oracle", "silent"], cpu_model="blind-fire", cpu_limit=3, judge="lexical",
        resamples=200,
    )  # fmt: skip
    lines: list[str] = []
    res = run_panel(DEMO, tmp_path / "demo", settings, echo=lines.append)
    rows = _rows(res.leaderboard)
    assert list(rows) == ["oracle", "silent", "blind-fire"]
    assert rows["oracle"][0] == "11 of 11" and rows["blind-fire"][0] == "3 of 11"
    assert rows["oracle"][1] == "100.0 [100.0, 100.0]"  # Overall %
    assert rows["silent"][1] == "0.0 [0.0, 0.0]"
    assert rows["silent"][-1] == "0.0"  # responses/min
    # environment columns (t1-home-chores): T1 time-call, state correct, action precision
    assert rows["oracle"][6:9] == ["100.0 (2/2)", "100.0 (1/1)", "100.0 (2/2)"]
    # silent: no call, so the state stays the seed's (incorrect) and nothing is written
    assert rows["silent"][6:9] == ["0.0 (0/2)", "0.0 (0/1)", "— (0/0)"]
    assert rows["blind-fire"][6:9] == ["—", "—", "—"]  # its 3 interactions have no environment
    assert res.environment["blind-fire"] is None
    assert res.environment["oracle"].state_correct.correct == 1
    assert (tmp_path / "demo" / "oracle" / "scores" / "environment_scores.json").is_file()
    manifest = json.loads((tmp_path / "demo" / "blind-fire" / "run.json").read_text())
    assert manifest["interaction_ids"] == sorted(["t1-taxi", "t1-cyclist", "t1-speech"])
    assert res.report.is_file() and res.view.is_file()
    html = res.view.read_text()
    assert len(re.findall(r'"id":"t[0-9][^"]*","task"', html)) == 11  # every interaction
    assert any("first 3 interactions" in ln for ln in lines)


def test_leaderboard_formats_intervals():
    metrics = pd.DataFrame(
        [
            ("a", "Overall", 50.0, 25.0, 75.0),
            ("a", "Output volume", 3.25, 1.0, 5.0),
            ("b", "Overall", float("nan"), float("nan"), float("nan")),
        ],
        columns=["run", "metric", "estimate", "low", "high"],
    )
    rows = _rows(leaderboard(metrics, ["2 of 4", "4 of 4"]))
    assert rows["a"][:2] == ["2 of 4", "50.0 [25.0, 75.0]"]
    assert rows["a"][-1] == "3.2"  # one decimal (banker's rounding of 3.25 is 3.2)
    assert rows["b"][1] == "—" and rows["b"][-1] == "—"
    assert "T1 time-call" not in leaderboard(metrics, ["2 of 4", "4 of 4"])  # no environments


def test_leaderboard_environment_columns_before_volume():
    metrics = pd.DataFrame(
        [("a", "Overall", 50.0, 25.0, 75.0), ("a", "Output volume", 3.0, 1.0, 5.0),
         ("b", "Overall", 0.0, 0.0, 0.0)],
        columns=["run", "metric", "estimate", "low", "high"],
    )  # fmt: skip
    tot = EnvTotals.model_validate(
        {
            "joint_time_call": {"hits": 1, "targets": 4},
            "state_correct": {"correct": 0, "interactions": 2},
            "action_precision": {"matched": 2, "state_changing": 3},
        }
    )
    table = leaderboard(metrics, ["4 of 4", "2 of 4"], [tot, None])
    head = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    assert head[-4:] == ["T1 time-call", "state correct", "action precision", "responses/min"]
    rows = _rows(table)
    # 1/4 = 25.0 %, 0/2 = 0.0 %, 2/3 = 66.7 %; run b covers no environment interaction
    assert rows["a"][-4:] == ["25.0 (1/4)", "0.0 (0/2)", "66.7 (2/3)", "3.0"]
    assert rows["b"][-4:] == ["—", "—", "—", "—"]


def test_single_model_demo_still_works(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["demo", "--model", "oracle", "--judge", "lexical"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "runs" / "demo-oracle" / "scores" / "summary.json").is_file()
    assert "100.00" in res.output


@pytest.mark.slow
def test_cpu_model_step_shows_progress(tmp_path, monkeypatch):
    """The capped CPU model (the longest step) collects with a progress bar, the baselines
    without one."""
    from interactscope.streaming import demo

    seen: list[tuple[str, bool]] = []
    real = demo.run_collect

    def spy(**kw):
        seen.append((kw["model"], kw["progress"]))
        return real(**kw)

    monkeypatch.setattr(demo, "run_collect", spy)
    s = DemoSettings(models=["silent"], cpu_model="oracle", cpu_limit=1, judge="lexical",
                     resamples=100)  # fmt: skip
    run_panel(DEMO, tmp_path / "demo", s, echo=lambda _: None)
    assert seen == [("silent", False), ("oracle", True)]


def test_demo_leaderboard_and_report_name_the_approximate_judge(tmp_path, monkeypatch):
    """`score` prints a NOTE for an approximate judge; the demo leaderboard and report.md give
    the same line."""
    from interactscope.cli import streaming as cli_streaming

    real = cli_streaming.run_panel

    def small(bench, out, settings, **kw):  # one instant baseline instead of the CPU model
        s = settings.model_copy(update={"models": ["silent"], "cpu_model": None})
        return real(bench, out, s, **kw)

    monkeypatch.setattr(cli_streaming, "run_panel", small)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["demo", "--judge", "lexical", "--resamples", "100"])
    assert res.exit_code == 0, res.output
    note = (
        "NOTE: judge 'lexical' is an approximation of the paper's GPT-4o judge "
        "(--judge openai:gpt-4o): lexical token-F1 >= 0.5 (offline approximation of an LLM judge)"
    )
    out = res.stdout.splitlines()
    head = out.index("Leaderboard (demo benchmark, judge lexical; % of targets [95% CI]):")
    assert out[head + 5 : head + 7] == ["", note]  # after the table's three lines
    report = (tmp_path / "runs" / "demo" / "report" / "report.md").read_text().splitlines()
    assert report[:6] == ["# interactscope report", "", "Runs: `silent` (main)", "",
                          "Judge: `lexical`.", note]  # fmt: skip
