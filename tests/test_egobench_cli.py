"""`interactscope ego score RUN` scores a run folder of `ego run` (the oracle agent replays the
ground truth, so every ratio is 1)."""

from __future__ import annotations

from typer.testing import CliRunner

from interactscope.cli import app


def test_ego_score_takes_a_run_folder(tmp_path) -> None:
    runner = CliRunner()
    run = tmp_path / "run"
    r = runner.invoke(
        app,
        [
            "ego",
            "run",
            "--agent",
            "oracle",
            "--user",
            "scripted",
            "--variant",
            "retail1",
            "--tasks",
            "1-2",
            "--out",
            str(run),
        ],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["ego", "score", str(run)])
    assert r.exit_code == 0, r.output
    assert "retail1: 2 tasks | JointSucc 1.000" in r.output
    assert (run / "scores").is_dir()


def test_ego_score_without_run_or_log_is_one_line() -> None:
    r = CliRunner().invoke(app, ["ego", "score"])
    assert r.exit_code == 1
    assert "give a run folder" in r.output and "Traceback" not in r.output


def test_ego_score_run_applies_set_and_reference(tmp_path) -> None:
    """``ego score RUN --set`` / ``--reference`` reach the scorer (recorded in summary.json);
    a typo is refused in one line, never ignored."""
    import json

    runner = CliRunner()
    run = tmp_path / "r"
    args = ["ego", "run", "--agent", "oracle", "--user", "scripted", "--variant", "retail1"]
    assert runner.invoke(app, [*args, "--tasks", "1-2", "--out", str(run)]).exit_code == 0
    assert not (run / ".lock").exists()  # removed when the run ended

    def settings():
        return json.loads((run / "scores" / "retail1" / "summary.json").read_text())["settings"]

    assert runner.invoke(app, ["ego", "score", str(run)]).exit_code == 0
    assert settings()["missing_log"] == "fail" and settings()["bool_is_number"] is False
    assert (
        runner.invoke(app, ["ego", "score", str(run), "--set", "missing_log=skip"]).exit_code == 0
    )
    assert settings()["missing_log"] == "skip"
    assert runner.invoke(app, ["ego", "score", str(run), "--reference", "paper"]).exit_code == 0
    assert settings()["bool_is_number"] is True  # the paper profile's tools take bools as numbers
    bad = runner.invoke(app, ["ego", "score", str(run), "--set", "missing_lg=skip"])
    assert bad.exit_code == 1 and "missing_lg" in bad.output
