"""Viewer bidi spoofing (issue 27, item 9): a user string ending in U+202E (RIGHT-TO-LEFT
OVERRIDE) must not reverse the page's own text after it. Every text node of the rendered page
that holds U+202E must sit in a ``<bdi>`` holding only that string, or between FSI and PDI
(U+2068 … U+2069) in the same text node (attributes, SVG text, the heading); an ``<option>`` is a bidi paragraph of its own."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.collect import run_collect
from tests.helpers.foundation_fixtures import DEMO

RLO = "\u202e"
UNISOLATED = """() => {
  const bad = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const t = n.nodeValue;
    if (!t.includes("\\u202e") || n.parentElement.closest("script, style, option")) continue;
    if (!t.replace(/\\u2068[^\\u2068\\u2069]*\\u2069/g, "").includes("\\u202e")) continue;
    const b = n.parentElement && n.parentElement.closest("bdi");
    if (b && b.textContent === t) continue;
    bad.push((n.parentElement ? n.parentElement.tagName + ": " : "") + t.slice(0, 60));
  }
  return bad;
}"""


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def browser():
    from tests.helpers.browser import headless_chromium

    with headless_chromium() as b:
        yield b


def _hostile_bench(root):
    bench = root / "bench"
    shutil.copytree(DEMO, bench)
    meta = json.loads((bench / "benchmark.json").read_text())
    meta["name"] += RLO
    (bench / "benchmark.json").write_text(json.dumps(meta))
    rows = [json.loads(x) for x in (bench / "interactions.jsonl").read_text().splitlines() if x]
    for r in rows:
        r["id"] += RLO
        r["query"]["text"] += RLO
        for t in r["targets"]:
            t["id"] += RLO
            if t.get("reference"):
                t["reference"] += RLO
    (bench / "interactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return bench


def _check(browser, page_file, open_all: str):
    from tests.helpers.browser import _open

    page, problems = _open(browser, page_file)
    page.evaluate(open_all)
    assert page.evaluate(UNISOLATED) == []
    heading = page.locator("header h1").inner_text()
    assert RLO in heading
    assert problems == []
    page.close()


@pytest.mark.slow
def test_streaming_page_isolates_every_user_string(browser, tmp_path):
    run = tmp_path / "run"
    run_collect(model="oracle", bench=_hostile_bench(tmp_path), out=run, progress=False)
    assert invoke("score", run, "--judge", "lexical").exit_code == 0
    out = tmp_path / "page.html"
    assert invoke("view", run, "-o", out, "--resamples", 100).exit_code == 0
    _check(
        browser,
        out,
        "() => document.querySelectorAll('.mark').forEach(m => m.dispatchEvent(new MouseEvent('click', {bubbles: true})))",
    )


@pytest.mark.slow
def test_ego_page_isolates_every_user_string(browser, tmp_path):
    run = tmp_path / "ego"
    res = invoke("ego", "run", "-a", "oracle", "-v", "retail1", "--tasks", "1-2", "-o", run)
    assert res.exit_code == 0, res.output
    man = json.loads((run / "run.json").read_text())
    man["agent_id"] += RLO
    (run / "run.json").write_text(json.dumps(man))
    recs = [json.loads(x) for x in (run / "episodes.jsonl").read_text().splitlines()]
    for r in recs:
        for d in r["dialogue"]:
            d["text"] += RLO
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "ego.html"
    res = invoke("view", run, "-o", out)
    assert res.exit_code == 0, res.output
    _check(browser, out, "() => document.querySelectorAll('.task-head').forEach(h => h.click())")
