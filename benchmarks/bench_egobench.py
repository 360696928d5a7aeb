"""Speed of the EgoBench scorer: GT replays of every shipped task, repeated to 1,590 tasks
(the benchmark's size). Run by hand: ``python benchmarks/bench_egobench.py``; prints tasks/s
and the ratio of the wall time to the one-minute budget."""

from __future__ import annotations

import time

from interactscope.egobench import list_variants, load_variant, package_data_dir, score_log
from interactscope.egobench.scorer import gt_log

TARGET = 1590


def main() -> None:
    variants = [load_variant(package_data_dir(), n) for n in list_variants(package_data_dir())]
    per_round = sum(len(v.tasks) for v in variants)
    done, t0 = 0, time.perf_counter()
    while done < TARGET:
        for v in variants:
            r = score_log(gt_log(v), v)
            assert r.summary.joint_succ == 1.0
            done += len(v.tasks)
    dt = time.perf_counter() - t0
    print(
        f"{done} tasks ({per_round} shipped, repeated) in {dt:.2f} s: {done / dt:.0f} tasks/s; "
        f"{dt / 60:.3f} of the one-minute budget"
    )


if __name__ == "__main__":
    main()
