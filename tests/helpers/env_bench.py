"""Environment benchmarks on the household scenario and a kill-and-resume helper."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.foundation_fixtures import REPO, interaction, write_bench

EGO = REPO / "interactscope" / "egobench" / "data"


U1 = "household_user_01"


ADD = "add_to_household_action_list"


GET = "get_household_action_list"


WASH = {"user_id": U1, "name": "Cup", "required_action": "wash", "due_date": "2026-08-20"}


ENV = {"id": "home", "scenario": "household", "tools": "env/tools.json", "db": "env/db.json"}


def env_bench(root: Path, targets: list[dict], env: dict = ENV, extra: list | None = None) -> Path:
    it = interaction("env1", task="T1", environment=env["id"])
    it["targets"] = targets
    write_bench(root, [it, *(extra or [])])
    (root / "env").mkdir(exist_ok=True)
    shutil.copyfile(EGO / "tools" / "household_tools.json", root / "env" / "tools.json")
    shutil.copyfile(EGO / "db" / "household1.json", root / "env" / "db.json")
    b = json.loads((root / "benchmark.json").read_text())
    b["environments"] = [env]
    (root / "benchmark.json").write_text(json.dumps(b, indent=2))
    return root


TARGET = {
    "id": "k1",
    "time_s": 3.0,
    "tools": [GET, ADD],
    "calls": [{"name": GET, "arguments": {"user_id": U1}}, {"name": ADD, "arguments": WASH}],
}


def kill_and_resume(script: str, cfg: str, root: Path, run: Path) -> None:
    """Run ``script`` (argv: cfg, bench, run) in a subprocess, SIGKILL it once 4 records are
    written (inside the first interaction of 9 points), then run it again to completion."""
    cmd = [sys.executable, "-c", script, cfg, str(root), str(run)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stderr=subprocess.DEVNULL)
    resp = run / "responses.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if resp.exists() and resp.read_bytes().count(b"\n") >= 4:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    n = resp.read_bytes().count(b"\n")
    assert 4 <= n < 9, "the kill should land inside the first interaction, after a write"
    res = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
