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
