"""Scoring at the paper's scale: 1,479 interactions, 1,790 targets, a per-second decision grid over
clips of about 2 minutes, ~8 % non-silent responses, judged by the ``file:`` judge.

    python benchmarks/bench_scoring.py [--seed 0] [--nonsilent 0.08]

Prints the wall time of each stage and the peak memory (Python allocations via tracemalloc, and
the process's maximum resident set size).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from interactscope.streaming.judges.file import FileJudge
from interactscope.streaming.schema import Interaction, ResponseRecord, ToolCall
from interactscope.streaming.scoring.run import score_collection, write_scores

# Task counts of Omni-InteractScope (docs/protocol.md#task-groups): interactions, targets.
PAPER = {
    "T1": (200, 200),
    "T2": (207, 207),
    "T3": (208, 208),
    "T4": (206, 206),
    "T5": (115, 115),
    "T6": (37, 37),
    "T7": (207, 457),
    "T8-A": (122, 122),
    "T8-B": (151, 151),
    "T8-C": (26, 87),
}
TOOLS = ["take_photo", "search_web", "set_timer", "send_message", "start_voice_memo"]


def _split(total: int, n: int, rng: random.Random) -> list[int]:
    """n positive parts summing to total."""
    parts = [1] * n
    for _ in range(total - n):
        parts[rng.randrange(n)] += 1
    return parts


def synthesize(seed: int, nonsilent: float):
    rng = random.Random(seed)
    interactions: list[Interaction] = []
    records: list[ResponseRecord] = []
    clusters: dict[str, str] = {}
    n = 0
    for task, (n_inter, n_targets) in PAPER.items():
        for k_count in _split(n_targets, n_inter, rng):
            n += 1
            iid, vid = f"{task}-{n:04d}", f"v{n:04d}"
            clusters[vid] = f"c{n % 1112:04d}"
            duration = rng.uniform(100.0, 160.0)
            q = float(rng.randint(0, 20))
            taus = sorted(rng.uniform(q + 3, duration - 3) for _ in range(k_count))
            targets = []
            for k, tau in enumerate(taus):
                tg = {"id": f"k{k + 1}", "reference": f"event {k + 1} of {iid}"}
                if task == "T8-A":
                    tg["interval_s"] = (round(tau - 1.5, 3), round(tau + 1.5, 3))
                else:
                    tg["time_s"] = round(tau, 3)
                if task == "T1":
                    tg["tools"] = [rng.choice(TOOLS)]
                targets.append(tg)
            interactions.append(
                Interaction(
                    id=iid,
                    video_id=vid,
                    task=task,
                    query={"time_s": q, "text": f"request of {iid}"},
                    targets=targets,
                )
            )
            grid = sorted({q, round(duration, 3), *range(int(q), int(duration) + 1)})
            for t in (x for x in grid if q <= x <= duration):
                if rng.random() < nonsilent:
                    calls = [ToolCall(name=rng.choice(TOOLS))] if task == "T1" else []
                    text = f"event {rng.randint(1, 3)} of {iid}"
                    records.append(
                        ResponseRecord(
                            interaction_id=iid, t=t, silent=False, text=text, tool_calls=calls
                        )
                    )
                else:
                    records.append(ResponseRecord(interaction_id=iid, t=t, text="<SILENT>"))
    return interactions, records, clusters


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nonsilent", type=float, default=0.08)
    args = ap.parse_args()

    tracemalloc.start()
    t0 = time.perf_counter()
    interactions, records, clusters = synthesize(args.seed, args.nonsilent)
    t_synth = time.perf_counter() - t0
    n_targets = sum(len(i.targets) for i in interactions)
    spoken = [r for r in records if not r.silent]

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        # Verdicts for every (non-silent response, target) pair: yes iff the text names the target.
        t0 = time.perf_counter()
        by_id = {i.id: i for i in interactions}
        with open(tmp_path / "verdicts.jsonl", "w", encoding="utf-8") as fh:
            for r in spoken:
                for tg in by_id[r.interaction_id].targets:
                    ok = r.text.startswith(f"event {tg.id[1:]} ")
                    fh.write(
                        json.dumps(
                            {
                                "interaction_id": r.interaction_id,
                                "target_id": tg.id,
                                "t": r.t,
                                "verdict": "yes" if ok else "no",
                            }
                        )
                        + "\n"
                    )
        judge = FileJudge(tmp_path / "verdicts.jsonl")
        t_judge_file = time.perf_counter() - t0

        t0 = time.perf_counter()
        result = score_collection(interactions, records, clusters, judge)
        t_score = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_scores(result, tmp_path / "scores")
        t_write = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    m = result.metrics
    print(
        f"synthetic run: {len(interactions)} interactions, {n_targets} targets, "
        f"{len(records)} decision records, {len(spoken)} non-silent "
        f"({len(spoken) / len(records):.1%}), {len(judge)} file verdicts"
    )
    print(f"judged pairs: {result.judge_report.pairs}")
    print(
        f"time: synthesize {t_synth:.2f} s, verdict file {t_judge_file:.2f} s, "
        f"score {t_score:.2f} s, write {t_write:.2f} s"
    )
    print(
        f"peak memory: {peak / 2**20:.1f} MiB Python allocations, max RSS {maxrss_kb / 1024:.0f} MiB"
    )
    print(
        f"overall score {m['overall']['score']:.4f}, six-task mean {m['six_task_mean']:.4f}, "
        f"{m['output_volume']['per_min']:.2f} responses/min"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
