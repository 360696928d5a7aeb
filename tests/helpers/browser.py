"""Opening a page of the HTML viewer in a headless browser (playwright page)."""

from __future__ import annotations

from pathlib import Path


def _open(browser, path: Path, height: int = 1000):
    page = browser.new_page(viewport={"width": 1200, "height": height})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready]", timeout=20_000)
    return page, problems
