"""Decode once: causal observations for every decision point of a clip vs one plain decode.

Run by hand (prints figures, asserts nothing):

    . .venv/bin/activate && python benchmarks/bench_media.py [--seconds 60] [--size 1280x720]
        [--max-side N] [--naive] [--keep PATH]

1. Synthesizes a clip with PyAV: H.264 (x264 "veryfast", B-frames on) at 25 fps with moving
   content, plus 48 kHz stereo AAC (a tone with bursts).
2. In a fresh process each (so peak memory is that phase's own):
   * **plain decode**: every video and audio frame of the file decoded once, nothing kept;
   * **observations**: ``CausalMedia(path)`` then, for every decision point of
     ``decision_grid(0, D)`` (61 points for 60 s), ``frames_until(t)`` (cap 32, uniform, RGB
     arrays materialised) and ``audio_until(t)`` (16 kHz mono);
   * optionally (``--naive``) the approach this layer avoids: reopen and decode [0, t] at every
     decision point (timed on every 10th point and extrapolated).
3. Prints wall and CPU times (best of ``--repeat``), the ratio observations / plain decode
   (expected well under 2x), and each phase's peak resident memory (``ru_maxrss``).

``--seconds 600`` checks the memory bound of a 10-minute 720p clip (synthesis takes minutes).

``--load-scale N`` instead times ``load_benchmark`` (no media probing) on a synthetic benchmark
of N videos / 2N interactions and of 4N / 8N, and prints the ratio (linear loading: about 4).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np


def synthesize(path: Path, seconds: int, width: int, height: int, fps: int = 25) -> None:
    out = av.open(str(path), "w")
    v = out.add_stream("libx264", rate=fps)
    v.width, v.height, v.pix_fmt = width, height, "yuv420p"
    v.codec_context.options = {"preset": "veryfast", "bf": "2", "g": str(2 * fps)}
    a = out.add_stream("aac", rate=48000)
    a.layout = "stereo"
    yy, xx = np.mgrid[0:height, 0:width]
    base = ((xx * 255 // max(1, width - 1)) ^ (yy * 255 // max(1, height - 1))).astype(np.uint8)
    rgb = np.stack([base, np.roll(base, height // 3, 0), np.roll(base, width // 3, 1)], -1)
    for i in range(seconds * fps):
        img = np.roll(rgb, (i * 7) % width, axis=1)
        img[: height // 8, : width // 8] = (i * 10) % 256
        fr = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")
        fr.pts = i
        fr.time_base = Fraction(1, fps)
        for p in v.encode(fr):
            out.mux(p)
    for p in v.encode():
        out.mux(p)
    sr = 48000
    for i in range(0, seconds * sr, 1024):
        t = (np.arange(i, i + 1024) / sr).astype(np.float64)
        x = 0.2 * np.sin(2 * np.pi * 440 * t) * ((t % 2) < 1)
        chunk = np.stack([x, x]).astype(np.float32)
        fr = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="stereo")
        fr.sample_rate, fr.pts, fr.time_base = sr, i, Fraction(1, sr)
        for p in a.encode(fr):
            out.mux(p)
    for p in a.encode():
        out.mux(p)
    out.close()


# ----------------------------------------------------------------------------- child phases
def _plain(path: str) -> dict:
    t0 = time.perf_counter()
    n = 0
    with av.open(path) as c:
        streams = [s for s in (c.streams.video[:1] + c.streams.audio[:1])]
        if c.streams.video:
            c.streams.video[0].thread_type = "AUTO"
        for _ in c.decode(*streams):
            n += 1
    return {"wall_s": time.perf_counter() - t0, "frames": n}


def _observe(path: str, max_side: int | None) -> dict:
    from interactscope.media import CausalMedia
    from interactscope.streaming.protocol.grid import decision_grid

    t0 = time.perf_counter()
    cm = CausalMedia(path)
    grid = decision_grid(0.0, cm.duration_s)
    n_frames = samples = 0
    checksum = 0
    for t in grid:
        frames = cm.frames_until(t, max_frames=32, policy="uniform", max_side=max_side)
        audio = cm.audio_until(t)
        n_frames += len(frames)
        samples += len(audio)
        checksum += int(frames[-1].image[0, 0, 0]) if frames else 0
    return {
        "wall_s": time.perf_counter() - t0,
        "decision_points": len(grid),
        "frames_returned": n_frames,
        "audio_samples_returned": samples,
        "decodes": cm.decode_count,
        "held_mb": cm.held_bytes / 1e6,
        "duration_s": cm.duration_s,
    }


def _naive(path: str) -> dict:
    """Reopen and decode [0, t] for every 10th decision point; extrapolate to all of them."""
    from interactscope.streaming.protocol.grid import decision_grid

    with av.open(path) as c:
        dur = float(c.duration or 0) / 1e6
    grid = decision_grid(0.0, dur)
    sub = grid[::10]
    t0 = time.perf_counter()
    for t in sub:
        with av.open(path) as c:
            c.streams.video[0].thread_type = "AUTO"
            for fr in c.decode(c.streams.video[0], c.streams.audio[0]):
                if fr.time is not None and fr.time > t:
                    break
    wall = time.perf_counter() - t0
    return {"wall_s": wall * len(grid) / len(sub), "measured_points": len(sub)}


def _child(phase: str, path: str, max_side: int | None) -> None:
    import resource

    if phase != "plain":  # imports are per process, not per clip: not timed
        import interactscope.media  # noqa: F401
        import interactscope.streaming.protocol.grid  # noqa: F401
    c0 = time.process_time()
    res = {"plain": lambda: _plain(path), "observe": lambda: _observe(path, max_side),
           "naive": lambda: _naive(path)}[phase]()  # fmt: skip
    res["cpu_s"] = time.process_time() - c0  # all threads; less sensitive to other load
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(res))


def run_phase(phase: str, path: Path, max_side: int | None) -> dict:
    cmd = [sys.executable, __file__, "--child", phase, "--clip", str(path)]
    if max_side:
        cmd += ["--max-side", str(max_side)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _write_bench(root: Path, n_videos: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "clip.mp4").write_bytes(b"\0")  # not probed: only its existence is checked
    videos = [{"id": f"v{i:06d}", "path": "clip.mp4", "cluster": f"c{i % 97}"}
              for i in range(n_videos)]  # fmt: skip
    bench = {"name": "scale", "version": "1", "tools": [{"name": "take_photo"}], "videos": videos}
    (root / "benchmark.json").write_text(json.dumps(bench, indent=2))
    with open(root / "interactions.jsonl", "w") as fh:
        for i in range(2 * n_videos):
            tg = [{"id": f"k{k}", "reference": "something happens", "time_s": 10.0 * k + 5}
                  for k in range(3)]  # fmt: skip
            it = {"id": f"i{i:07d}", "video_id": f"v{i // 2:06d}", "task": "T2",
                  "query": {"time_s": 1.0, "text": "Tell me when something happens."},
                  "targets": tg}  # fmt: skip
            fh.write(json.dumps(it) + "\n")


def bench_load(n_videos: int, repeat: int) -> None:
    """Print load_benchmark wall time at N and 4N videos (best of ``repeat``) and the ratio."""
    import logging

    from interactscope.streaming.bench import load_benchmark

    logging.disable(logging.WARNING)  # the synthetic targets warn (3 targets within merge_s)
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for scale in (1, 4):
            root = Path(tmp) / f"x{scale}"
            _write_bench(root, scale * n_videos)
            best = float("inf")
            for _ in range(repeat):
                t0 = time.perf_counter()
                b = load_benchmark(root, probe_media=False)
                best = min(best, time.perf_counter() - t0)
            times[scale] = best
            print(f"{scale}x: {len(b.videos)} videos, {len(b.interactions)} interactions: "
                  f"{best:.3f} s")  # fmt: skip
    print(f"ratio 4x / 1x: {times[4] / times[1]:.2f} (linear: 4; goal <= 4.5)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--size", default="1280x720", help="WxH of the synthesized clip")
    ap.add_argument("--max-side", type=int, default=None, help="frames_until max_side")
    ap.add_argument("--naive", action="store_true", help="also time decode-per-decision-point")
    ap.add_argument("--keep", type=Path, default=None, help="write/reuse the clip at this path")
    ap.add_argument("--repeat", type=int, default=3, help="runs per phase (the best is kept)")
    ap.add_argument("--load-scale", type=int, default=None, help="time benchmark loading")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--clip", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.load_scale:
        bench_load(args.load_scale, args.repeat)
        return
    if args.child:
        _child(args.child, args.clip, args.max_side)
        return
    w, h = (int(x) for x in args.size.lower().split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        clip = args.keep or Path(tmp) / f"bench_{args.seconds}s_{w}x{h}.mp4"
        if not clip.exists():
            t0 = time.perf_counter()
            synthesize(clip, args.seconds, w, h)
            print(f"synthesized {clip.name}: {clip.stat().st_size / 1e6:.1f} MB "
                  f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip
        print(f"clip: {args.seconds} s, {w}x{h} H.264 25 fps + AAC 48 kHz stereo; "
              f"CPUs: {os.cpu_count()}; PyAV {av.__version__}")  # fmt: skip
        phases = ["plain", "observe"] + (["naive"] if args.naive else [])
        best: dict[str, dict] = {}
        for _ in range(args.repeat):
            for ph in phases:
                r = run_phase(ph, clip, args.max_side)
                if ph not in best or r["wall_s"] < best[ph]["wall_s"]:
                    best[ph] = {**r, "cpu_s": min(r["cpu_s"], best.get(ph, r)["cpu_s"])}
                else:
                    best[ph]["cpu_s"] = min(best[ph]["cpu_s"], r["cpu_s"])
        p, o = best["plain"], best["observe"]
        print(f"plain full decode (video+audio):  {p['wall_s']:7.2f} s   "
              f"peak RSS {p['peak_rss_mb']:7.0f} MB")  # fmt: skip
        print(f"observations, {o['decision_points']} decision points: {o['wall_s']:7.2f} s   "
              f"peak RSS {o['peak_rss_mb']:7.0f} MB   (media data held {o['held_mb']:.0f} MB; "
              f"decodes: {o['decodes']}, "
              f"{o['frames_returned']} frames, {o['audio_samples_returned']} samples returned)")  # fmt: skip
        print(f"ratio observations / plain decode: {o['wall_s'] / p['wall_s']:.2f}x wall, "
              f"{o['cpu_s'] / p['cpu_s']:.2f}x CPU time "
              f"(CPU {o['cpu_s']:.2f} s vs {p['cpu_s']:.2f} s)")  # fmt: skip
        if "naive" in best:
            n = best["naive"]
            print(f"naive decode [0, t] per decision point (extrapolated): {n['wall_s']:7.2f} s "
                  f"= {n['wall_s'] / p['wall_s']:.1f}x plain")  # fmt: skip


if __name__ == "__main__":
    main()
