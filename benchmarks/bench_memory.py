"""Bounded host memory: observation building vs one plain decode, and one batch's host memory.

Run by hand (prints figures, asserts nothing):

    . .venv/bin/activate && python benchmarks/bench_memory.py [--seconds 60 300 600]
        [--batch 256] [--old-batch 64] [--clips DIR] [--max-pixels 200704]

1. Synthesizes (once, kept in ``--clips``) 1280x720 clips of each length with
   ``bench_media.synthesize``: H.264 veryfast 25 fps with moving content + 48 kHz stereo AAC.
2. In a fresh process each (peak resident memory, ``ru_maxrss``, is that phase's own):
   * **plain**: one plain PyAV decode of every video and audio frame, nothing kept;
   * **observe-old**: the code before this change (``git show HEAD~N:...`` is not needed: the
     old ``media/causal.py`` and ``streaming/protocol/observation.py`` are loaded from ``--old-ref``,
     default ``HEAD``) building the observation of every decision point of a q = 0
     interaction over the whole clip (1 s grid, cap 32 uniform, native audio), each dropped
     after use: frames held at the source size, audio copied at every point;
   * **observe-new**: the same with the current code and the Qwen configs' consumer
     (``processor_kwargs.max_pixels`` = ``--max-pixels``: frames held at 600 x 338);
   * **batch-old / batch-new**: the observations of the first N decision points of the
     300 s clip (or the longest one) built and **held at once**, as a plain Offline Probing
     batch holds them: peak RSS, and the distinct array bytes they reference
     (``ArrayBytes``). The old code runs at ``--old-batch`` points (its 256-point batch holds
     about 11 GB; issue 18 measured 11.3 GB).
3. Prints each phase's wall time (best of ``--repeat``), the ratio observe / plain (goal <= 1.2x), peak RSS (with
   its phases: the baseline after imports and the decode pass's peak; goal for
   a 10-minute 720p clip: well under 0.5 GB of media data) and the batch figures (goal: a
   256-point batch <= 1 GB of host memory).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))


def _interaction():
    from interactscope.streaming.schema import Interaction

    return Interaction.model_validate(
        {
            "id": "i",
            "video_id": "v",
            "task": "T2",
            "query": {"time_s": 0.0, "text": "Tell me when something happens."},
            "targets": [{"id": "k", "time_s": 5.0}],
        }  # fmt: skip
    )


def _old_modules(ref: str) -> tuple:
    """The old ``CausalMedia`` and ``Observer`` (source at git ``ref``) as private modules."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-old-"))
    mods = []
    for name, rel in (("old_causal", "interactscope/media/causal.py"),
                      ("old_observation", "interactscope/streaming/protocol/observation.py")):  # fmt: skip
        src = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{rel}"], check=True,
                             capture_output=True, text=True).stdout  # fmt: skip
        (tmp / f"{name}.py").write_text(src)
        spec = importlib.util.spec_from_file_location(name, tmp / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        mods.append(mod)
    return mods[0].CausalMedia, mods[1].Observer


def _observer(kind: str, path: str, args) -> object:
    from interactscope.streaming.settings import Settings

    if kind == "old":
        old_media, old_observer = _old_modules(args.old_ref)
        return old_observer(path, Settings(), media=old_media(path))
    from interactscope.streaming.adapters.base import pixel_budget_side
    from interactscope.streaming.protocol.observation import Observer

    def side(w: int, h: int) -> int | None:
        return pixel_budget_side(w, h, args.max_pixels, 3136, None)

    return Observer(path, Settings(), consumer_side=side)


def _phase_plain(path: str, args) -> dict:
    import av

    n = 0
    with av.open(path) as c:
        c.streams.video[0].thread_type = "AUTO"
        for _ in c.decode(c.streams.video[0], c.streams.audio[0]):
            n += 1
    return {"frames": n}


def _phase_observe(ob, path: str, args) -> dict:
    from interactscope.streaming.protocol.grid import decision_grid

    it = _interaction()
    start = _rss_mb()  # the process baseline: imports, no media yet
    grid = decision_grid(0.0, ob.media.duration_s)  # decodes the clip
    decoded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the decode pass's peak
    n = 0
    for t in grid:
        obs = ob.observe(t, it)
        n += len(obs.frames)
    m = ob.media
    return {"points": len(grid), "frames": n, "held_mb": m.held_bytes / 2**20,
            "rss_start_mb": start, "decode_peak_mb": decoded,
            "stored": getattr(m, "stored_as", "yuv420p"),
            "stored_side": getattr(m, "stored_side", None)}  # fmt: skip


def _phase_batch(ob, kind: str, args) -> dict:
    from interactscope.streaming.protocol.observation import ArrayBytes

    it = _interaction()
    n = args.old_batch if kind == "old" else args.batch
    _ = ob.media.info  # decode first: the batch figures are what the requests add
    before = _rss_mb()
    # decision points are never past the clip end: on a clip shorter than N s the batch repeats
    # the last second (as several interactions of one video would), instead of growing audio
    end = float(ob.media.duration_s)
    held = [ob.observe(min(float(t), end), it) for t in range(n)]
    counted = ArrayBytes()
    for obs in held:
        counted.add(obs)
    return {"points": n, "array_mb": counted.total / 2**20, "rss_before_mb": before,
            "rss_held_mb": _rss_mb(), "held_mb": ob.media.held_bytes / 2**20}  # fmt: skip


def _rss_mb() -> float:
    """Resident memory now (MiB), from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _child(phase: str, path: str, args) -> None:
    import av  # noqa: F401 - imports and setup (no decoding yet) are not timed

    kind = phase.split("-")[-1]
    ob = None if phase == "plain" else _observer(kind, path, args)
    _interaction()
    t0, c0 = time.perf_counter(), time.process_time()
    if phase == "plain":
        res = _phase_plain(path, args)
    elif phase.startswith("observe-"):
        res = _phase_observe(ob, path, args)
    else:
        res = _phase_batch(ob, kind, args)
    res["wall_s"] = time.perf_counter() - t0
    res["cpu_s"] = time.process_time() - c0  # all threads; less sensitive to other load
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(res))


def best(phase: str, clip: Path, args) -> dict:
    """The fastest of ``--repeat`` runs of ``phase`` (each in a fresh process); peak RSS is the
    largest seen (other processes' load only slows a run down, never speeds it up)."""
    runs = [run(phase, clip, args) for _ in range(max(1, args.repeat))]
    out = min(runs, key=lambda r: r["wall_s"])
    out["cpu_s"] = min(r["cpu_s"] for r in runs)
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    return out


def run(phase: str, clip: Path, args) -> dict:
    cmd = [sys.executable, __file__, "--child", phase, "--clip", str(clip),
           "--batch", str(args.batch), "--old-batch", str(args.old_batch),
           "--max-pixels", str(args.max_pixels), "--old-ref", args.old_ref]  # fmt: skip
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _clip(folder: Path, seconds: int) -> Path:
    from bench_media import synthesize

    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f"synth_720p_{seconds}s.mp4"
    if not p.exists():
        t0 = time.perf_counter()
        synthesize(p.with_suffix(".tmp.mp4"), seconds, 1280, 720)
        p.with_suffix(".tmp.mp4").rename(p)
        print(f"  synthesized {p.name} in {time.perf_counter() - t0:.0f} s", flush=True)
    return p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, nargs="+", default=[60, 300, 600])
    ap.add_argument("--batch", type=int, default=256, help="points of the new code's batch")
    ap.add_argument("--old-batch", type=int, default=64, help="points of the old code's batch")
    ap.add_argument("--max-pixels", type=int, default=200704, help="the consumer's budget")
    ap.add_argument("--old-ref", default="HEAD", help="git ref of the old media/observation")
    ap.add_argument("--clips", type=Path, default=Path(tempfile.gettempdir()) / "bench-memory")
    ap.add_argument("--skip-old", action="store_true", help="do not run the old code")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each timed phase (best kept)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--clip", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.clip, args)
        return
    clips = {s: _clip(args.clips, s) for s in args.seconds}
    print(f"observation building, 1280x720 25 fps, consumer max_pixels={args.max_pixels}")
    for s, clip in clips.items():
        plain = best("plain", clip, args)
        row = (f"{s:4d} s: plain {plain['wall_s']:5.1f} s (cpu {plain['cpu_s']:5.1f} s) "
               f"{plain['peak_rss_mb']:4.0f} MiB")  # fmt: skip
        for kind in ("old", "new"):
            if kind == "old" and args.skip_old:
                continue
            o = best(f"observe-{kind}", clip, args)
            row += (f"\n        {kind}: {o['wall_s']:5.1f} s = {o['wall_s'] / plain['wall_s']:.2f}x "
                    f"(cpu {o['cpu_s'] / plain['cpu_s']:.2f}x), "
                    f"peak RSS {o['peak_rss_mb']:4.0f} MiB (baseline {o['rss_start_mb']:.0f}, "
                    f"decode pass {o['decode_peak_mb']:.0f}), media data {o['held_mb']:4.0f} MiB "
                    f"({o['stored']} @ {o['stored_side'] or 'source'})")  # fmt: skip
        print(row, flush=True)
    s = 300 if 300 in clips else max(clips)
    print(f"one batch of decision points 0..N-1 of the {s} s clip, all held at once")
    for kind in ("old", "new"):
        if kind == "old" and args.skip_old:
            continue
        b = run(f"batch-{kind}", clips[s], args)
        print(f"  {kind}: {b['points']} points: RSS {b['rss_held_mb']:.0f} MiB with the batch "
              f"held ({b['rss_before_mb']:.0f} MiB after decoding: "
              f"+{b['rss_held_mb'] - b['rss_before_mb']:.0f} MiB), peak "
              f"{b['peak_rss_mb']:.0f} MiB; distinct arrays {b['array_mb']:.0f} MiB, media "
              f"{b['held_mb']:.0f} MiB", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
