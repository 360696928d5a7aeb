"""How fast a paper-scale run (1,479 interactions) opens in the viewer. Run by hand:

    python benchmarks/bench_view.py [--n 1479] [--keep DIR]

Builds a synthetic benchmark over the demo's bikes.mp4 (10 s; 37 video records sharing it, one
cluster each), collects the weight-free ``oracle`` and ``blind-fire`` baselines on it, scores
both with the offline lexical judge, writes the one-run and the two-run page, and opens each in
headless Debian chromium (playwright). Prints the page size, the build time and the time to the
first screen (navigation start -> the page's ``data-ready`` flag and the first timeline drawn: summary,
filters, every interaction section and the visible timelines in place), each against the 5 s budget as a ratio.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interactscope.streaming.bench import load_benchmark  # noqa: E402
from interactscope.streaming.collect import run_collect  # noqa: E402
from interactscope.streaming.scoring.run import score_run  # noqa: E402
from interactscope.view import ViewSettings, write_view  # noqa: E402

BUDGET_S = 5.0
ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip
TASKS = ("T1", "T2", "T3", "T7", "T8-A", "T8-B")


def _interaction(i: int, videos: int) -> dict:
    task = TASKS[i % len(TASKS)]
    q = float(i % 3)
    tau = q + 2.0 + (i % 5)
    target: dict = {"id": "k1", "reference": f"event {i} is happening now", "evidence": "visual"}
    if task == "T8-A":
        target["interval_s"] = [tau, tau + 1.0]
    else:
        target["time_s"] = tau
    if task == "T1":
        target["tools"] = ["take_photo"]
    return {
        "id": f"s{i:05d}",
        "video_id": f"v{i % videos}",
        "task": task,
        "query": {"time_s": q, "text": f"Tell me when event {i} happens."},
        "targets": [target],
    }


def make_bench(root: Path, n: int, videos: int = 37) -> Path:
    """A benchmark folder with ``n`` interactions over copies of one real clip."""
    demo = load_benchmark(REPO / "annotations" / "demo")  # the packaged clip, read in place
    src = demo.media_path(demo.videos["bikes"])
    (root / "media").mkdir(parents=True)
    shutil.copyfile(src, root / "media" / "bikes.mp4")
    bench = {
        "name": "synthetic-paper-scale",
        "version": "1",
        "tools": [{"name": "take_photo", "description": "Take a photo."}],
        "videos": [{"id": f"v{k}", "path": "media/bikes.mp4"} for k in range(videos)],
    }
    (root / "benchmark.json").write_text(json.dumps(bench))
    lines = (json.dumps(_interaction(i, videos)) + "\n" for i in range(n))
    (root / "interactions.jsonl").write_text("".join(lines))
    return root


def first_screen_s(page_path: Path) -> tuple[float, list[str]]:
    """Seconds from navigation start to ``body[data-ready]`` and the first drawn timeline."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        t0 = time.perf_counter()
        page.goto(page_path.as_uri(), timeout=120_000)
        page.wait_for_selector("body[data-ready]", timeout=120_000)
        page.wait_for_selector("section.interaction svg.timeline", timeout=120_000)
        wall = time.perf_counter() - t0
        browser.close()
    return wall, errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1479)
    ap.add_argument("--keep", type=Path, default=None, help="keep the files in this folder")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench_view_"))
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    bench = make_bench(root / "bench", args.n)
    runs = []
    for model in ("oracle", "blind-fire"):
        run_collect(model=model, bench=bench, out=root / model, progress=False)
        score_run(root / model, judge="lexical")
        runs.append(root / model)
    print(f"setup (bench + 2 runs collected and scored): {time.perf_counter() - t0:.1f} s")
    for name, sel in (("one run", runs[:1]), ("two runs", runs)):
        t0 = time.perf_counter()
        page = write_view(sel, root / f"{name.replace(' ', '-')}.html", ViewSettings())
        build = time.perf_counter() - t0
        wall, errors = first_screen_s(page)
        size = page.stat().st_size / 1e6
        print(
            f"{name}: {args.n} interactions, {size:.1f} MB, build {build:.1f} s; first screen "
            f"{wall:.2f} s = {wall / BUDGET_S:.2f} x the {BUDGET_S:.0f} s budget; "
            f"{len(errors)} console/page errors"
        )
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
