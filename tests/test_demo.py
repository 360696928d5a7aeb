"""``interactscope demo``: the panel leaderboard, its report and viewer page; single-model mode."""

from __future__ import annotations

import json
import re

import pandas as pd
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.demo import DemoSettings, leaderboard, run_panel
from tests.foundation_fixtures import DEMO


def _rows(table: str) -> dict[str, list[str]]:
    lines = [ln for ln in table.splitlines() if ln.startswith("|")][2:]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    return {c[0]: c[1:] for c in cells}


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
    assert rows["oracle"][0] == "10 of 10" and rows["blind-fire"][0] == "3 of 10"
    assert rows["oracle"][1] == "100.0 [100.0, 100.0]"  # Overall %
    assert rows["silent"][1] == "0.0 [0.0, 0.0]"
    assert rows["silent"][-1] == "0.0"  # responses/min
    manifest = json.loads((tmp_path / "demo" / "blind-fire" / "run.json").read_text())
    assert manifest["interaction_ids"] == sorted(["t1-taxi", "t1-cyclist", "t1-speech"])
    assert res.report.is_file() and res.view.is_file()
    html = res.view.read_text()
    assert len(re.findall(r'"id":"t[0-9][^"]*","task"', html)) == 10  # every interaction
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


def test_single_model_demo_still_works(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["demo", "--model", "oracle", "--judge", "lexical"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "runs" / "demo-oracle" / "scores" / "summary.json").is_file()
    assert "100.00" in res.output
