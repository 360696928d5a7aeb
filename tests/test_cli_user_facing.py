"""User-facing defects a fresh-user trial found in ``interactscope prompt`` (and the commands
sharing its inputs): a misspelled adapter option must be refused in one line, not previewed
with a warning; the bundled demo must be reachable by name from any directory (a pip install
has no ``annotations/demo``); the two-step preview's step-1 header names its template."""

from __future__ import annotations

import importlib.util
import json

from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.core.resources import demo_benchmark_dir

DEMO = "annotations/demo"
TAXI = ["--id", "t1-taxi", "--at", "4"]


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def _lines(output: str) -> list[str]:
    return [line for line in output.strip().splitlines() if line.strip()]


def test_a_misspelled_adapter_value_is_refused_naming_key_value_and_valid_values() -> None:
    # `twostep` for `two_step` (docs/protocol.md, "Two-step decision"): exit 1, as `collect`
    # gives for the same --set, one line, nothing previewed
    for cmd in (["prompt", *TAXI], ["collect", "--out", "never-made", "--dry-run"]):
        r = _run(*cmd, "--model", "cascade", "--bench", DEMO, "--set", "adapter.decision=twostep")
        assert r.exit_code == 1, r.output
        (line,) = _lines(r.output)
        assert "option 'decision' = 'twostep'" in line
        assert "'direct' or 'two_step'" in line
        assert "warning" not in line and "Traceback" not in r.output


def test_a_real_collect_names_the_bad_value_too(tmp_path) -> None:
    out = tmp_path / "run"
    r = _run("collect", "--model", "silent", "--bench", DEMO, "--out", str(out), "--no-progress",
             "--set", "adapter.simulate_latency_s=-1")  # fmt: skip
    assert r.exit_code == 1 and "option 'simulate_latency_s' = -1" in r.output
    assert "greater than or equal to 0" in r.output and not (out / "responses.jsonl").exists()


def test_a_bad_number_names_the_value_and_an_unknown_key_the_valid_keys() -> None:
    r = _run("prompt", "--model", "cascade", "--bench", DEMO, *TAXI,
             "--set", "adapter.speak_threshold=abc")  # fmt: skip
    assert r.exit_code == 1 and "option 'speak_threshold' = 'abc'" in _lines(r.output)[0]
    r = _run("prompt", "--model", "cascade", "--bench", DEMO, *TAXI, "--set", "adapter.decsion=x")
    (line,) = _lines(r.output)
    assert r.exit_code == 1 and "unknown option 'decsion'" in line
    assert "decision" in line.split("valid options:")[1]


def test_a_model_whose_engine_cannot_be_built_here_is_still_previewed() -> None:
    """qwen3-omni runs on vLLM: on a machine without it the preview falls back to the config
    (a warning, exit 0), but its options are still checked: the cascade's `decision` is no
    vLLM option."""
    r = _run("prompt", "--model", "qwen3-omni", "--bench", DEMO, *TAXI)
    assert r.exit_code == 0, r.output
    assert "# t1-taxi at t = 4 s, prompt v3" in r.output
    if importlib.util.find_spec("vllm") is None:
        assert "warning: model qwen3-omni" in r.output
    bad = _run("prompt", "--model", "qwen3-omni", "--bench", DEMO, *TAXI,
               "--set", "adapter.decision=two_step")  # fmt: skip
    assert bad.exit_code == 1 and "unknown option 'decision'" in _lines(bad.output)[0]
    assert "# t1-taxi" not in bad.output


def test_bench_demo_is_the_bundled_demo_from_any_directory(tmp_path, monkeypatch) -> None:
    """No annotations/ here (as after `pip install`): `demo` names the package's copy in
    prompt, validate and collect --dry-run, as `interactscope demo` finds it."""
    monkeypatch.chdir(tmp_path)
    r = _run("prompt", "--model", "gpt-4o", "--bench", "demo", *TAXI)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("# t1-taxi at t = 4 s")
    v = _run("validate", "demo")
    assert v.exit_code == 0, v.output
    assert v.output.startswith("interactscope-demo v1: 11 interactions")
    d = _run("collect", "--model", "oracle", "--bench", "demo", "--out", "r", "--dry-run",
             "--only", "t1-taxi")  # fmt: skip
    assert d.exit_code == 0 and d.output.startswith("# t1-taxi") and not (tmp_path / "r").exists()
    assert "--bench demo" in _run("prompt", "--help").output


def test_demo_env_by_name_and_a_missing_folder_names_the_bundled_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    v = _run("validate", "demo-env")
    assert v.exit_code == 0 and v.output.startswith("interactscope-demo-env v1: 1 interaction")
    miss = _run("validate", "annotations/demo")
    assert miss.exit_code == 1
    assert "(the bundled ones by name: --bench demo, --bench demo-env)" in miss.output


def test_a_local_demo_folder_shadows_the_bundled_one(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo").mkdir()  # a folder of one's own named demo, still empty
    r = _run("validate", "demo")
    assert r.exit_code == 1 and "benchmark.json" in r.output
    assert (demo_benchmark_dir() / "benchmark.json").is_file()


def test_two_step_step_one_header_names_its_template() -> None:
    """Step 1 sends prompt v2's messages plus the yes/no question of template speak-v1
    (docs/protocol.md, "Two-step decision"): its header names both, as step 2's names v2."""
    args = ["prompt", "--model", "cascade", "--bench", DEMO, *TAXI,
            "--set", "adapter.decision=two_step"]  # fmt: skip
    heads = [line for line in _run(*args).output.splitlines() if line.startswith("# ")]
    assert heads[0].startswith(
        "# t1-taxi at t = 4 s, prompt v2 + speak-v1, two-step decision, step 1: the speak-now"
    )
    assert heads[1].startswith("# t1-taxi at t = 4 s, prompt v2, two-step decision, step 2")
    step1, step2 = json.loads(_run(*args, "--json").output)
    assert (step1["speak_prompt"], step2["speak_prompt"]) == ("speak-v1", None)


def _help_screens(group=None, path=()):
    """Every command path of the CLI: (), ("collect",), ("ego", "run"), ..."""
    import typer

    group = group or typer.main.get_command(app)
    yield path
    for name, sub in getattr(group, "commands", {}).items():
        yield from _help_screens(sub, (*path, name))


def test_ego_run_help_lists_every_agent_in_full_at_80_columns() -> None:
    from interactscope.core import registry

    r = CliRunner().invoke(app, ["ego", "run", "--help"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    words = {w.strip(",.;()") for w in r.output.replace("│", " ").split()}
    builtin = {"oracle", "none", "egointeract"}  # interactscope's own agents (plugins may add)
    assert builtin <= set(registry.names("agents")) and builtin <= words
    assert "egointeract:MODEL[,AUDITOR]" in words and "docs/egointeract.md" in words
    assert "…" not in r.output


def test_no_help_screen_cuts_a_word_at_80_columns() -> None:
    cut = {}
    for path in _help_screens():
        r = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        assert r.exit_code == 0, (path, r.output)
        assert max(len(line) for line in r.output.splitlines()) <= 80
        cut.update({" ".join(path): line for line in r.output.splitlines() if "…" in line})
    assert cut == {}
