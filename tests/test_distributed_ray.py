"""Collection over a real local Ray instance (2 CPUs, 2 workers, the oracle on the demo).

Runs only inside a network namespace with nothing but loopback: Ray's helper processes try to
reach a cloud-metadata address whatever the settings. ``tests/test_distributed.py`` launches
this module that way (``unshare --net`` under ``strace``); directly it is skipped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.ray_net import NETNS_ENV, _loopback_only

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "annotations" / "demo"
SLOW = ["--set", "adapter.simulate_latency_s=0.05"]


pytestmark = pytest.mark.skipif(
    os.environ.get(NETNS_ENV) != "1" or not _loopback_only(),
    reason="run through tests/test_distributed.py (loopback-only network namespace)",
)


def _records(run: Path) -> list[dict]:
    out = []
    for line in (run / "responses.jsonl").read_text().splitlines():
        d = json.loads(line)
        d.pop("latency_s")
        out.append(d)
    return out


def _by_key(run: Path) -> dict[tuple[str, float], dict]:
    recs = _records(run)
    keys = Counter((r["interaction_id"], r["t"]) for r in recs)
    assert max(keys.values()) == 1, [k for k, n in keys.items() if n > 1]
    return {(r["interaction_id"], r["t"]): r for r in recs}


@pytest.fixture(scope="module")
def serial(tmp_path_factory) -> dict[tuple[str, float], dict]:
    """The serial oracle run's records (89 decision points on the demo, DEMO_POINTS)."""
    from interactscope.streaming.collect import run_collect

    out = tmp_path_factory.mktemp("serial") / "run"
    run_collect(model="oracle", bench=DEMO, out=out, progress=False)
    recs = _by_key(out)
    assert len(recs) == 89
    return recs


def _cli(out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "interactscope.cli", "collect", "--model", "oracle",
        "--bench", str(DEMO), "--out", str(out), "--ray", "--workers", "2", "--no-progress",
        *extra,
    ]  # fmt: skip


def test_cli_ray_gives_the_serial_records(tmp_path, serial) -> None:
    out = tmp_path / "ray"
    p = subprocess.run(_cli(out), cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    assert _by_key(out) == serial
    m = json.loads((out / "run.json").read_text())
    assert m["ended_at"] and m["summary"]["decision_points"] == 89
    info = m["invocations"][-1]["distributed"]
    assert info["workers"] == 2 and info["address"] == "local"
    stats = info["worker_stats"]
    assert [s["slot"] for s in stats] == [0, 1]
    assert sum(s["decision_points"] for s in stats) == 89
    assert sum(s["interactions"] for s in stats) == 11
    assert m["adapter"] == json.loads((out / "run.json").read_text())["adapter"]


def _kill_first_worker_after_first_write(out: Path, done: list[str]) -> None:
    import ray

    deadline = time.monotonic() + 120
    resp = out / "responses.jsonl"
    while time.monotonic() < deadline:
        if resp.exists() and resp.read_text().count("\n") >= 1:
            ray.kill(ray.get_actor("interactscope-worker-0-1"))
            done.append("killed")
            return
        time.sleep(0.02)


def test_killed_worker_is_replaced_and_nothing_is_duplicated(tmp_path, serial) -> None:
    from interactscope.streaming.distributed import RayOptions, run_collect_ray

    out = tmp_path / "killed"
    done: list[str] = []
    killer = threading.Thread(target=_kill_first_worker_after_first_write, args=(out, done))
    killer.start()
    summary = run_collect_ray(
        model="oracle",
        bench=DEMO,
        out=out,
        ray_options=RayOptions(workers=2),
        overrides={"adapter.simulate_latency_s": 0.05},
        progress=False,
    )
    killer.join()
    assert done == ["killed"]
    assert _by_key(out) == serial  # complete, no duplicate, nothing lost
    assert summary.written == 89 and summary.errors == 0
    info = json.loads((out / "run.json").read_text())["invocations"][-1]["distributed"]
    assert info["worker_stats"][0]["actors"] == 2  # slot 0 got a new actor
    # its in-flight interactions (a group of short ones batched together) went back once
    assert info["requeued"] and set(info["requeued"].values()) == {1}


def test_sigkilled_driver_resumes(tmp_path, serial) -> None:
    out = tmp_path / "resumed"
    proc = subprocess.Popen(
        _cli(out, *SLOW), cwd=ROOT, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    resp = out / "responses.jsonl"
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if resp.exists() and resp.read_text().count("\n") >= 10:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "collect ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the Ray processes it started
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    first = _by_key(out)
    assert 10 <= len(first) < 89
    # whole interactions, but for the one being written when the driver died: workers return
    # an interaction's records together and the driver appends them one by one
    per = Counter(iid for iid, _ in first)
    full = Counter(iid for iid, _ in serial)
    assert sum(per[iid] != full[iid] for iid in per) <= 1
    p = subprocess.run(_cli(out, *SLOW), cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    assert _by_key(out) == serial
    m = json.loads((out / "run.json").read_text())
    assert len(m["invocations"]) == 2 and m["ended_at"]
    assert m["invocations"][-1]["summary"]["already_present"] == len(first)
