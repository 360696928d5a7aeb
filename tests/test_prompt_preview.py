"""`interactscope prompt` / `collect --dry-run`: the messages a model would receive, without
calling it. t1-taxi streams bikes.mp4 (640x272, no audio) from q = 0: at t = 4 the causal prefix
holds the 1 fps frames at 0, 1, 2, 3, 4 s."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from interactscope.cli import app

DEMO = "annotations/demo"


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_prompt_describes_the_causal_frames_and_tools() -> None:
    r = _run(
        "prompt", "--model", "gpt-4o", "--bench", DEMO, "--id", "t1-taxi", "--at", "4", "--json"
    )
    assert r.exit_code == 0, r.output
    (pv,) = json.loads(r.output)
    user = next(m for m in pv["messages"] if m["role"] == "user")
    images = [p for p in user["parts"] if p["kind"] == "image"]
    assert [p["pts_s"] for p in images] == [[0.0], [1.0], [2.0], [3.0], [4.0]]
    assert all(p["shape"] == [272, 640] for p in images)
    assert not [p for p in user["parts"] if p["kind"] == "audio"]
    assert "search_web" in pv["tools"] and pv["prompt_version"] == "v2"
    assert "t = 4.0 s" in user["parts"][-1]["text"]


def test_text_only_model_gets_no_pixels() -> None:
    r = _run("prompt", "--model", "cascade", "--bench", DEMO, "--id", "t1-taxi", "--at", "4")
    assert r.exit_code == 0, r.output
    assert "text-only rendering" in r.output
    assert "image part" not in r.output


def test_two_step_decision_previews_both_calls() -> None:
    # adapter.decision=two_step (docs/protocol.md, "Two-step decision"): step 1 is the text
    # prompt plus the yes/no question of speak-v1; step 2, the answer prompt, is sent only
    # when p(yes) >= adapter.speak_threshold
    r = _run("prompt", "--model", "cascade", "--bench", DEMO, "--id", "t1-taxi", "--at", "4",
             "--set", "adapter.decision=two_step", "--set", "adapter.speak_threshold=0.7",
             "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    step1, step2 = json.loads(r.output)
    assert (step1["step"], step2["step"]) == (1, 2)
    assert step2["speak_threshold"] == 0.7
    question = step1["messages"][-1]
    assert question["role"] == "user"
    assert question["parts"][0]["text"] == "Should the assistant speak now? Answer yes or no."
    # step 1 is step 2's messages plus that one turn: the answer prompt shares its prefix
    assert step1["messages"][:-1] == step2["messages"]
    assert "t = 4.0 s" in step2["messages"][-1]["parts"][-1]["text"]
    text = _run("prompt", "--model", "cascade", "--bench", DEMO, "--id", "t1-taxi", "--at", "4",
                "--set", "adapter.decision=two_step").output  # fmt: skip
    assert "step 2: the answer, only when p(yes) >= 0.5" in text


@pytest.mark.slow
def test_dry_run_prints_each_interaction_and_makes_no_folder(tmp_path, demo_bench) -> None:
    from interactscope.streaming.bench import load_benchmark

    out = tmp_path / "run"
    r = _run("collect", "--model", "oracle", "--bench", DEMO, "--out", str(out), "--dry-run")
    assert r.exit_code == 0, r.output
    n = len(load_benchmark(demo_bench).interactions)
    assert r.output.count("\n# ") + r.output.startswith("# ") == n
    assert not out.exists()


def test_unknown_interaction_is_one_line() -> None:
    r = _run("prompt", "--model", "oracle", "--bench", DEMO, "--id", "nope")
    assert r.exit_code == 1
    assert "no interaction 'nope'" in r.output and "Traceback" not in r.output


def test_dry_run_honours_only_and_task(tmp_path) -> None:
    """The demo has two T2 interactions (t2-cut, t2-bunny): --task T2 previews exactly those,
    --only one id previews that one, an unknown id is refused in one line."""
    base = [
        "collect",
        "--model",
        "oracle",
        "--bench",
        DEMO,
        "--out",
        str(tmp_path / "r"),
        "--dry-run",
    ]

    def heads(r):
        assert r.exit_code == 0, r.output
        return [line.split()[1] for line in r.output.splitlines() if line.startswith("# ")]

    assert sorted(heads(_run(*base, "--task", "T2"))) == ["t2-bunny", "t2-cut"]
    assert heads(_run(*base, "--only", "t1-taxi")) == ["t1-taxi"]
    bad = _run(*base, "--only", "nope")
    assert bad.exit_code == 1 and "nope" in bad.output and "Traceback" not in bad.output
    assert not (tmp_path / "r").exists()


def test_dry_run_of_a_model_sent_no_prompt_prints_the_heading_and_one_line(tmp_path) -> None:
    """`silent` is sent no prompt: t1-taxi (q = 0, so its first decision point is t = 0) gets
    its heading and the line `prompt` prints for it, no messages."""
    out = tmp_path / "r"
    r = _run("collect", "--model", "silent", "--bench", DEMO, "--out", str(out), "--dry-run",
             "--only", "t1-taxi")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.output == (
        "# t1-taxi at t = 0 s\n"
        "model 'silent' (backend silent) is sent no prompt, so there is nothing to preview: "
        "it always answers with the silence token\n"
    )
    assert not out.exists()


@pytest.mark.parametrize("at", ["1", "10.5"])
def test_at_outside_request_time_and_clip_end_is_refused(at) -> None:
    """t1-cyclist asks at q = 2 s over bikes.mp4 (10 s): t = 1 is before the request, t = 10.5
    past the stream; both refused in one line naming [2, 10]."""
    r = _run("prompt", "--model", "oracle", "--bench", DEMO, "--id", "t1-cyclist", "--at", at)
    assert r.exit_code == 1, r.output
    assert "pick t in [2, 10] s" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_at_on_the_range_ends_is_accepted() -> None:
    for at in ("2", "10"):
        r = _run("prompt", "--model", "gpt-4o", "--bench", DEMO, "--id", "t1-cyclist", "--at", at)
        assert r.exit_code == 0, r.output
        assert f"t1-cyclist at t = {at} s" in r.output


@pytest.mark.parametrize(
    ("iid", "at", "step", "nearest"),
    [
        ("t1-cyclist", "4.5", "1", "4 s and 5 s"),  # grid 2, 3, ..., 10
        ("t1-speech", "7.3", "1", "7 s and 7.6 s"),  # grid 0, 1, ..., 7, D = 7.6
        ("t1-cyclist", "5", "2", "4 s and 6 s"),  # grid.step_s = 2: 2, 4, 6, 8, 10
        ("t1-cyclist", "2.5", "2", "2 s and 4 s"),  # q = 2 is on the grid whatever the step
    ],
)
def test_at_off_the_decision_grid_is_previewed_with_a_note(iid, at, step, nearest) -> None:
    r = _run("prompt", "--model", "gpt-4o", "--bench", DEMO, "--id", iid, "--at", at,
             "--set", f"grid.step_s={step}")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"# {iid} at t = {at} s")  # the preview is still printed
    (note,) = r.stderr.strip().splitlines()
    assert note == (
        f"note: t = {at} s is not a decision point of interaction {iid!r} (collect never asks "
        f"there; grid.step_s = {step}); the nearest are {nearest}"
    )


@pytest.mark.parametrize(("at", "step"), [("4", "1"), ("4.0001", "1"), ("6", "2"), ("7.6", "2")])
def test_at_on_the_decision_grid_has_no_note(at, step) -> None:
    # t1-speech: q = 0, D = 7.6; grid times are compared at millisecond precision
    r = _run("prompt", "--model", "gpt-4o", "--bench", DEMO, "--id", "t1-speech", "--at", at,
             "--set", f"grid.step_s={step}")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.stderr == ""


@pytest.mark.parametrize(
    ("model", "does"),
    [
        ("oracle", "it answers each target's reference (T1: its tool calls) at the decision point "
                   "nearest the target time, inside target time +- tolerance_s"),
        ("silent", "it always answers with the silence token"),
        ("blind-fire", "it answers each interaction once, at the first decision point >= q + "
                       "delay_s, with the benchmark's most frequent T1 tool offered (T1) or a "
                       "fixed sentence"),
        ("change-detector", "it answers (as blind-fire) at each decision point whose frames or "
                            "audio up to t bring a new visual change point or audio onset; it "
                            "reads those signals, not a prompt"),
    ],
)  # fmt: skip
def test_a_model_sent_no_prompt_says_so_in_one_line(model, does) -> None:
    line = (
        f"model {model!r} (backend {model}) is sent no prompt, so there is nothing to preview: "
        + does
    )
    r = _run("prompt", "--model", model, "--bench", DEMO, "--id", "t1-taxi", "--at", "4")
    assert r.exit_code == 0, r.output
    assert r.stdout == line + "\n" and r.stderr == ""
    j = _run("prompt", "--model", model, "--bench", DEMO, "--id", "t1-taxi", "--json")
    assert j.exit_code == 0 and json.loads(j.stdout) == [] and j.stderr == line + "\n"


def test_a_user_config_of_a_baseline_backend_is_sent_no_prompt_either(tmp_path) -> None:
    cfg = tmp_path / "slow-oracle.yaml"
    cfg.write_text("backend: oracle\noptions:\n  simulate_latency_s: 0.1\n")
    r = _run("prompt", "--model", str(cfg), "--bench", DEMO, "--id", "t1-taxi")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("model 'slow-oracle' (backend oracle) is sent no prompt")
    assert len(r.stdout.splitlines()) == 1 and "--- system ---" not in r.output
