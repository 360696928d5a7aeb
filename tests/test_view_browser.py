"""The viewer page in a real headless browser: Debian's chromium driven by playwright.

Skipped (with the reason) where chromium or playwright is missing; CI installs both. The
README's screenshot comes from real demo runs, not from these fixtures: docs/viewer_screenshot.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from interactscope.view import ViewSettings, write_view
from tests.helpers.browser import _open
from tests.helpers.view_fixtures import MARK_TEXT, make_pair

CHROMIUM = os.environ.get("INTERACTSCOPE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
)
if not Path(CHROMIUM).is_file():
    pytest.skip(
        f"no chromium at {CHROMIUM} (apt-get install chromium, or set INTERACTSCOPE_CHROMIUM)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("viewpages")
    a, b = make_pair(root)
    fast = ViewSettings(resamples=200)
    return {
        "one": write_view([a], root / "one.html", fast),
        "two": write_view([a, b], root / "two.html", fast),
        "lazy": write_view([a], root / "lazy.html", fast.model_copy(update={"lazy_threshold": 0})),
    }


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.mark.slow
def test_single_run_page(browser, pages, tmp_path):
    page, problems = _open(browser, pages["one"])
    assert page.locator("section.interaction").count() == 11  # the demo's 11 interactions
    assert page.locator("section.interaction svg.timeline").count() == 11  # all drawn
    sec = page.locator('section.interaction[data-id="t1-taxi"]')
    assert sec.locator(".detail").first.inner_text() == ""
    sec.locator(".mark").first.click()
    detail = sec.locator(".detail").first.inner_text()
    assert MARK_TEXT in detail and "hit" in detail
    # the frames seen at that decision point (t = 2 s): seconds 0, 1, 2 of bikes.mp4
    assert sec.locator(".seen img.thumb").count() == 3
    page.screenshot(path=str(tmp_path / "viewer-one.png"))
    assert (tmp_path / "viewer-one.png").stat().st_size > 10_000
    assert problems == []
    page.close()


@pytest.mark.slow
def test_filters(browser, pages):
    page, problems = _open(browser, pages["one"])
    page.select_option("#filter-task", "T1")
    # taxi, cyclist, speech, home-chores
    assert page.locator("section.interaction:visible").count() == 4
    page.select_option("#filter-task", "")
    page.select_option("#filter-outcome", "missed")  # run A misses t2-bunny/k1 only
    visible = page.locator("section.interaction:visible")
    assert visible.count() == 1 and visible.first.get_attribute("data-id") == "t2-bunny"
    assert problems == []
    page.close()


@pytest.mark.slow
def test_two_run_diff(browser, pages, tmp_path):
    page, problems = _open(browser, pages["two"], height=1400)
    assert page.locator("#gained li").all_inner_texts() == ["t2-bunny/k1"]
    assert page.locator("#lost li").all_inner_texts() == ["t1-taxi/k1"]
    sec = page.locator('section.interaction[data-id="t1-taxi"]')
    assert sec.locator(".runrow").count() == 2  # side by side: one timeline per run
    sec.locator('.runrow[data-run="1"] .mark').first.click()
    assert "premature" in sec.locator('.runrow[data-run="1"] .detail').inner_text()
    page.select_option("#filter-outcome", "lost")
    assert page.locator("section.interaction:visible").count() == 1
    page.select_option("#filter-outcome", "")
    assert problems == []
    page.close()


@pytest.mark.slow
def test_lazy_rendering(browser, pages):
    page, problems = _open(browser, pages["lazy"], height=600)
    last = page.locator("section.interaction").last
    assert page.locator("section.interaction").count() == 11
    assert last.locator("svg.timeline").count() == 0  # not drawn until scrolled to
    last.scroll_into_view_if_needed()
    last.locator("svg.timeline").wait_for(timeout=5_000)
    assert problems == []
    page.close()
