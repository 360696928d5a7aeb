"""Opening a page of the HTML viewer in a headless browser (playwright page)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest


def _open(browser, path: Path, height: int = 1000):
    page = browser.new_page(viewport={"width": 1200, "height": height})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready]", timeout=20_000)
    return page, problems


CHROMIUM = os.environ.get("INTERACTSCOPE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip


@contextlib.contextmanager
def headless_chromium():
    """Debian's chromium driven by playwright (never a downloaded browser); skips the calling
    test where playwright or chromium is missing."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
    )
    if not Path(CHROMIUM).is_file():
        pytest.skip(
            f"no chromium at {CHROMIUM} (apt-get install chromium, or set INTERACTSCOPE_CHROMIUM)"
        )
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()
