"""One message each, once: a corrupt or torn records line met by `score` and `view` (the fresh-user
trial of issue 29: the corrupt line came twice, the torn line three times, and `view` told a
folder collect made to give a folder made by collect)."""

from __future__ import annotations

import logging

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.collect import run_collect
from tests.helpers.foundation_fixtures import DEMO

runner = CliRunner()


@pytest.fixture
def run(tmp_path):
    out = tmp_path / "run"
    run_collect(model="silent", bench=DEMO, out=out, limit=2, progress=False)
    return out


def test_score_names_a_corrupt_line_once(run) -> None:
    lines = (run / "responses.jsonl").read_text().splitlines()
    assert len(lines) > 11
    lines[10] = "{garbage"  # line 11
    (run / "responses.jsonl").write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["score", str(run), "--judge", "lexical"])
    assert res.exit_code == 1
    assert res.output.count("responses.jsonl:11: corrupt record") == 1, res.output
    assert "cannot check completeness" not in res.output


def test_view_of_a_collected_folder_gives_no_made_by_collect_hint(run, tmp_path) -> None:
    lines = (run / "responses.jsonl").read_text().splitlines()
    lines[10] = "{garbage"
    (run / "responses.jsonl").write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["view", str(run), "-o", str(tmp_path / "v.html")])
    assert res.exit_code != 0
    assert "responses.jsonl:11: corrupt record" in res.output
    assert "give a folder made by" not in res.output
    (tmp_path / "empty").mkdir()  # no run.json: there the hint is what to do
    res = runner.invoke(app, ["view", str(tmp_path / "empty"), "-o", str(tmp_path / "e.html")])
    assert "give a folder made by `interactscope collect`" in res.output


def test_view_of_a_missing_folder_says_it_does_not_exist(tmp_path) -> None:
    res = runner.invoke(app, ["view", str(tmp_path / "nope"), "-o", str(tmp_path / "v.html")])
    assert res.exit_code == 1
    assert res.stderr == (
        f"{tmp_path / 'nope'}: not a run folder (no such folder); "
        "give a folder made by `interactscope collect`\n"
    )
    (tmp_path / "empty").mkdir()
    res = runner.invoke(app, ["view", str(tmp_path / "empty"), "-o", str(tmp_path / "v.html")])
    assert res.stderr.startswith(f"{tmp_path / 'empty'}: not a run folder (no run.json); give")


def test_score_warns_once_about_a_torn_last_line(run, caplog) -> None:
    with (run / "responses.jsonl").open("a") as f:
        f.write('{"half')  # a kill during the write of the next record
    with caplog.at_level(logging.WARNING, logger="interactscope.runs.folder"):
        res = runner.invoke(app, ["score", str(run), "--judge", "lexical"])
    assert res.exit_code == 0, res.output
    torn = [r for r in caplog.records if "half-written last line" in r.getMessage()]
    assert len(torn) == 1, [r.getMessage() for r in torn]
