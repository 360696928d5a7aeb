"""Regenerate docs/img/viewer.png, the README's viewer screenshot, from real demo runs.

    python docs/viewer_screenshot.py [--out docs/img/viewer.png] [--keep DIR]

What it runs in a temporary folder DIR (the commands a user types; nothing is downloaded, about
20 s on 2 CPU cores):

    interactscope demo --model oracle --judge lexical --out runs/oracle
    interactscope demo --model blind-fire --judge lexical --out runs/blind-fire
    interactscope view runs/oracle runs/blind-fire --thumbs-per-point 3 --out view.html

then opens the page in headless Debian chromium (playwright, ``/usr/bin/chromium`` or
``$INTERACTSCOPE_CHROMIUM``), folds the "targets lost" list, clicks blind-fire's response on
``t1-cyclist`` (its text, verdict and the frames it saw open below the timeline) and saves the
top of the page (summary, score table with the environment rows, legend, first interactions) as
a PNG. The two runs are the demo's perfect model and its timing-prior control, so the picture
shows hit, wrong, late and missed targets side by side (docs/viewer.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("INTERACTSCOPE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
RUNS = ("oracle", "blind-fire")
LAST = "t1-cyclist"
"""The screenshot ends below this interaction's section."""


def _cli(root: Path, *args: str) -> None:
    # Run in ``root`` with relative paths, so the page shows runs/oracle, not a temp folder;
    # this checkout's package first, as with PYTHONPATH=$PWD.
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    print("$ interactscope " + " ".join(args), flush=True)
    cmd = [sys.executable, "-m", "interactscope", *args]
    subprocess.run(cmd, check=True, cwd=root, env=env, stdout=subprocess.DEVNULL)


def make_page(root: Path) -> Path:
    """The two demo runs (``root/runs/MODEL``) and their viewer page; returns the page's path."""
    for model in RUNS:
        _cli(root, "demo", "--model", model, "--judge", "lexical", "--out", f"runs/{model}")
    _cli(
        root, "view", *(f"runs/{m}" for m in RUNS), "--thumbs-per-point", "3", "--out", "view.html"
    )
    return root / "view.html"


def screenshot(page_path: Path, out: Path) -> None:
    """Open ``page_path`` headless, show one response's details and save the page's top."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        page.wait_for_selector("body[data-ready]")
        page.locator("#lost summary").click()  # fold the list: the interactions come up
        cyclist = page.locator('section.interaction[data-id="t1-cyclist"]')
        cyclist.locator('.runrow[data-run="1"] .mark').first.click()
        bottom = page.locator(f'section.interaction[data-id="{LAST}"]').evaluate(
            "e => e.getBoundingClientRect().bottom + window.scrollY"
        )  # page coordinates: the click scrolled the page
        out.parent.mkdir(parents=True, exist_ok=True)
        clip = {"x": 0, "y": 0, "width": 1100, "height": bottom + 8}
        page.screenshot(path=str(out), full_page=True, clip=clip)
        browser.close()
    if errors:
        raise SystemExit(f"the page raised JavaScript errors: {errors}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "img" / "viewer.png")
    ap.add_argument("--keep", type=Path, help="copy DIR (runs/ and view.html) to this folder")
    args = ap.parse_args()
    if not Path(CHROMIUM).is_file():
        raise SystemExit(f"no chromium at {CHROMIUM}: apt-get install chromium")
    root = Path(tempfile.mkdtemp(prefix="viewer-shot-"))
    try:
        screenshot(make_page(root), args.out)
        print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB)")
        if args.keep:
            shutil.copytree(root, args.keep, dirs_exist_ok=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
