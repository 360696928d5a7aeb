"""Decision points per second with 1 vs 2 Ray workers, and the time Ray adds at start.

Run by hand (prints figures, asserts nothing about time):

    . .venv/bin/activate && python benchmarks/bench_distributed.py [--latency-s 0.02] [--repeat 3]

The model is the ``oracle`` baseline on the demo benchmark (82 decision points), with
``adapter.simulate_latency_s`` standing in for a model call (a sleep per call: the 2-core
machines here cannot run two real models side by side, so the figure shows what the
distribution itself costs and gains). Each configuration collects a fresh run folder:

- serial: ``run_collect`` (no Ray), the reference, timed over the whole call (benchmark
  loading included, so it reads a little low);
- Ray with 1 and 2 workers: ``run_collect_ray`` on a private local instance.

Printed per configuration: points/s over the collection phase (wall minus the start-up), the
start-up seconds (``ray.init`` + every worker building its adapter: ``start_s`` in run.json),
and the 2-worker / 1-worker ratio.

Network hygiene: a local Ray instance's helper processes try to reach a cloud-metadata address,
so as root the script re-runs itself inside a network namespace with only loopback
(``unshare --net``); elsewhere it stops unless ``--allow-network``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEMO = REPO / "annotations" / "demo"
INSIDE = "INTERACTSCOPE_BENCH_NETNS"


def _loopback_only() -> bool:
    lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    return {ln.split(":")[0].strip() for ln in lines} <= {"lo"}


def _reexec_isolated() -> None:
    """Run this script again inside a loopback-only network namespace (root only)."""
    cmd = "ip link set lo up && exec " + " ".join(
        [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]]
    )
    env = {**os.environ, INSIDE: "1"}
    sys.exit(subprocess.call(["unshare", "--net", "bash", "-c", cmd], env=env))


def _one(out: Path, latency: float, workers: int | None) -> tuple[float, float]:
    """(points per second in the collection phase, start-up seconds) of one fresh run."""
    from interactscope.streaming.collect import run_collect
    from interactscope.streaming.distributed import RayOptions, run_collect_ray

    kw = dict(
        model="oracle",
        bench=DEMO,
        out=out,
        overrides={"adapter.simulate_latency_s": latency},
        progress=False,
    )
    t0 = time.perf_counter()
    if workers is None:
        s = run_collect(**kw)
        return s.written / (time.perf_counter() - t0), 0.0
    s = run_collect_ray(**kw, ray_options=RayOptions(workers=workers))
    info = json.loads((out / "run.json").read_text())["invocations"][-1]["distributed"]
    start = float(info["start_s"])
    return s.written / max(1e-9, s.wall_s - start), start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency-s", type=float, default=0.02, help="simulated model call (s)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (median)")
    ap.add_argument("--allow-network", action="store_true", help="run Ray without isolation")
    args = ap.parse_args()
    if not _loopback_only() and not args.allow_network:
        if os.geteuid() == 0 and shutil.which("unshare") and not os.environ.get(INSIDE):
            _reexec_isolated()
        sys.exit("run as root (it isolates itself with unshare --net) or pass --allow-network")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, workers in (("serial", None), ("ray-1", 1), ("ray-2", 2)):
            for i in range(args.repeat):
                results.setdefault(label, []).append(
                    _one(Path(tmp) / f"{label}-{i}", args.latency_s, workers)
                )

    def med(label: str, k: int) -> float:
        vals = sorted(r[k] for r in results[label])
        return vals[len(vals) // 2]

    print(f"oracle on the demo (82 points), simulated call {args.latency_s:g} s, "
          f"median of {args.repeat}")  # fmt: skip
    for label in results:
        print(f"  {label:7s} {med(label, 0):8.1f} points/s   start-up {med(label, 1):5.2f} s")
    print(f"  ratio 2 workers / 1 worker: {med('ray-2', 0) / med('ray-1', 0):.2f}x")
    print(f"  ratio 1 Ray worker / serial: {med('ray-1', 0) / med('serial', 0):.2f}x")


if __name__ == "__main__":
    main()
