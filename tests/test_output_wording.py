"""Output wording: counts with their noun in the right number ("1 decision point"), a corrupt
JSONL line's column without pydantic's "line 1" of the line itself, and `--help` pages whose
flags show no `<bool>` type (typer 0.29's rich help prints one; `cli/app.py` hides it)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.core.text import plural
from interactscope.streaming.protocol.driver import CollectSummary

runner = CliRunner()


def test_plural_picks_the_number_by_the_count() -> None:
    assert plural(1, "decision point") == "1 decision point"
    assert plural(0, "error") == "0 errors"
    assert plural(11, "interaction") == "11 interactions"
    assert plural(2, "analysis", "analyses") == "2 analyses"


def test_collect_summary_line_says_one_interaction_one_point() -> None:
    s = CollectSummary(interactions=1, decision_points=1, written=1, errors=1,
                       failed_interactions={"a": "boom"})  # fmt: skip
    line = s.line()
    assert line.startswith("this invocation: 1 interaction, 1 decision point: 1 written,")
    assert "1 error (1 interaction with errors)" in line
    many = CollectSummary(interactions=2, decision_points=20).line()
    assert many.startswith("this invocation: 2 interactions, 20 decision points:")
    assert "0 errors (0 interactions with errors)" in many


@pytest.mark.slow
def test_a_corrupt_record_line_names_its_column_not_line_one(tmp_path) -> None:
    """Line 2 of responses.jsonl is `{"a" 1}`: the ':' is missing at column 6 of that line."""
    out = tmp_path / "run"
    res = runner.invoke(app, ["collect", "-m", "silent", "-b", "annotations/demo", "-o",
                              str(out), "--limit", "1", "--no-progress"])  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = (out / "responses.jsonl").read_text().splitlines()
    lines[1] = '{"a" 1}'
    (out / "responses.jsonl").write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["collect", "-m", "silent", "-b", "annotations/demo", "-o",
                              str(out), "--limit", "1", "--no-progress"])  # fmt: skip
    assert res.exit_code == 1
    assert f"{out / 'responses.jsonl'}:2: corrupt record" in res.output
    assert "at column 6;" in res.output and "line 1 column" not in res.output


@pytest.mark.parametrize(
    "args", [[], ["collect"], ["ego", "run"], ["control", "policy"], ["score"], ["models"]]
)
def test_help_shows_no_bool_type_for_flags(args) -> None:
    res = runner.invoke(app, [*args, "--help"], terminal_width=120)
    assert res.exit_code == 0, res.output
    assert "<bool>" not in res.output and "--help" in res.output
    if args == ["collect"]:
        assert "--no-progress" in res.output and "--dry-run" in res.output
        # options that take a value keep their type
        assert "<int>" in res.output and "<path>" in res.output
