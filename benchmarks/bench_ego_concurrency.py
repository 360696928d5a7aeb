"""Episodes in parallel (``ego run --max-concurrency N``): a stub agent that sleeps like a remote
model (``LATENCY_S`` per step; the oracle's calls, so every episode scores 1) plays the same
episodes with N = 1 and N = 8 in one process. Run by hand:
``python benchmarks/bench_ego_concurrency.py [--latency 0.2] [--tasks 1-32]``; prints
episodes/s for each N and the ratio (target: N = 8 >= 6x N = 1)."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from interactscope.egobench import package_data_dir
from interactscope.egobench.agents import OracleAgent, register_agent
from interactscope.egobench.run_score import score_run
from interactscope.egobench.runner import RunRequest, execute, prepare


class LatencyOracle(OracleAgent):
    """The oracle, with a remote model's wait before every step (time.sleep releases the GIL,
    as a blocked HTTP call does)."""

    name = "latency-oracle"
    latency_s = 0.2

    def step(self):
        time.sleep(self.latency_s)
        return super().step()


def _run(out: Path, n: int, tasks: str) -> tuple[float, int]:
    req = RunRequest(
        agent="latency-oracle",
        data=package_data_dir(),
        variants=["retail1"],
        tasks=tasks,
        out=out,
        max_concurrency=n,
    )
    run = prepare(req)
    t0 = time.perf_counter()
    res = execute(run)
    dt = time.perf_counter() - t0
    assert score_run(out).results["retail1"].summary.joint_succ == 1.0
    return dt, res.written


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--latency", type=float, default=0.2, help="s per agent step (API models: 1-10)"
    )
    ap.add_argument("--tasks", default="1-32")
    args = ap.parse_args()
    LatencyOracle.latency_s = args.latency
    register_agent("latency-oracle", lambda spec: LatencyOracle())
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 8):
            dt, written = _run(Path(tmp) / f"n{n}", n, args.tasks)
            rates[n] = written / dt
            print(f"N = {n}: {written} episodes in {dt:.2f} s: {rates[n]:.1f} episodes/s")
    print(f"N = 8 / N = 1: {rates[8] / rates[1]:.2f}x (target >= 6x)")


if __name__ == "__main__":
    main()
