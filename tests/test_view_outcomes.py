"""Issue 26's viewer items: the environment columns (summary and per interaction), "not scored"
instead of 0/N for unscored runs, and one colour-blind-safe palette where colour is never alone.

Runs on the demo benchmark (tests/helpers/foundation_fixtures.DEMO), values worked out by hand
in interactscope/data/demo/README.md and tests/test_demo_environment.py for t1-home-chores
(q = 0; k1 τ 2 s window [0, 4], k2 τ 5 s window [3, 7], each expecting one
add_to_household_action_list call with four arguments):

* oracle: both targets answered in their window with the expected call -> time-tool 2/2,
  time-call 2/2, the final state equals the expected one (1/1), both writes matched (2/2);
* blind-fire: one bare add_to_household_action_list at q + 3 s = 3 s, which k1 consumes ->
  time-tool 1/2 (k1 yes, k2 no), time-call 0/2 (no arguments), state incorrect (0/1), the call
  fails validation so nothing is written (action precision 0/0, undefined);
* silent, collected and never scored: no outcome at all (not 0/14).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.collect import run_collect
from interactscope.streaming.scoring.run import score_run
from interactscope.view import ViewSettings, build_view, write_view
from interactscope.view.model import EnvInteraction, EnvTarget
from interactscope.view.palette import OKABE_ITO, OUTCOME_STATES, STATES
from tests.helpers.browser import _open
from tests.helpers.foundation_fixtures import DEMO

FAST = ViewSettings(resamples=200, max_thumbnails=0)
ENV_ID = "t1-home-chores"


def _collect(root: Path, model: str) -> Path:
    run = root / model
    run_collect(model=model, bench=DEMO, out=run, progress=False)
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outcomes")
    oracle, blind, silent = (_collect(root, m) for m in ("oracle", "blind-fire", "silent"))
    # oracle through the CLI (writes scores/environment_scores.json), blind-fire through the
    # Python API (no such file: the viewer computes the columns), silent never scored
    res = CliRunner().invoke(app, ["score", str(oracle), "--judge", "lexical"])
    assert res.exit_code == 0, res.output
    score_run(blind, judge="lexical")
    return {"oracle": oracle, "blind-fire": blind, "silent": silent}


def _cells(summary) -> list[tuple[str, float | None, str]]:
    return [(c.metric, c.estimate, c.counts) for c in summary.environment]


def _env(data, run: int) -> EnvInteraction | None:
    return next(i for i in data.interactions if i.id == ENV_ID).runs[run].environment


# --- the palette ---------------------------------------------------------------------------


def _luminance(hex_colour: str) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_palette_is_okabe_ito_and_never_colour_alone():
    # Okabe & Ito (2008), Fig. 16: the eight colours of the colour-universal-design set
    assert set(OKABE_ITO.values()) == {
        "#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
    }  # fmt: skip
    scored = [k for k in OUTCOME_STATES if k != "unscored"]
    assert {STATES[k].fill for k in scored} == set(OKABE_ITO.values())  # one colour per state
    assert STATES["unscored"].fill is None and "dashed" in STATES["unscored"].outline
    assert STATES["unscored"].label == "not scored"
    glyphs = [s.glyph for s in STATES.values()]
    labels = [s.label for s in STATES.values()]
    assert len(set(glyphs)) == len(glyphs) == len(STATES)  # a glyph and a word tell them apart
    assert len(set(labels)) == len(labels)
    # hand check of the formula: black on white is 21:1
    assert _contrast("#000000", "#FFFFFF") == pytest.approx(21.0)
    for k, s in STATES.items():  # small text (11 px badges) needs 4.5:1 (WCAG 2, 1.4.3)
        assert _contrast(s.ink, s.fill or "#FFFFFF") >= 4.5, k


def test_docs_table_lists_every_state():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "viewer.md").read_text()
    for k, st in STATES.items():
        assert f"| `{k}` | {st.glyph} | {st.label} |" in doc, k


# --- environment columns ---------------------------------------------------------------------


def test_environment_columns_from_the_score_file(runs):
    assert (runs["oracle"] / "scores" / "environment_scores.json").is_file()
    data = build_view([runs["oracle"]], FAST)
    assert _cells(data.runs[0]) == [
        ("T1 time-tool", 100.0, "2/2"),
        ("T1 time-call", 100.0, "2/2"),
        ("state correct", 100.0, "1/1"),
        ("action precision", 100.0, "2/2"),
    ]
    assert "scores/environment_scores.json" in data.runs[0].environment[0].note
    assert _env(data, 0) == EnvInteraction(
        environment="home", time_tool=(2, 2), time_call=(2, 2), state_correct=True,
        action_precision=(2, 2),
        targets=[EnvTarget(target_id="k1", outcome="hit", time_tool=True, time_call=True),
                 EnvTarget(target_id="k2", outcome="hit", time_tool=True, time_call=True)],
    )  # fmt: skip
    others = [i for i in data.interactions if i.id != ENV_ID]
    assert len(others) == 10 and all(i.runs[0].environment is None for i in others)


def test_environment_columns_computed_without_the_file(runs):
    scores = runs["blind-fire"] / "scores"
    assert not (scores / "environment_scores.json").exists()
    data = build_view([runs["blind-fire"]], FAST)
    assert _cells(data.runs[0]) == [
        ("T1 time-tool", 50.0, "1/2"),
        ("T1 time-call", 0.0, "0/2"),
        ("state correct", 0.0, "0/1"),
        ("action precision", None, "0/0"),
    ]
    assert "computed by the viewer" in data.runs[0].environment[0].note
    env = _env(data, 0)
    assert (env.time_tool, env.time_call, env.state_correct, env.action_precision) == (
        (1, 2), (0, 2), False, (0, 0),
    )  # fmt: skip
    assert [(t.target_id, t.time_tool, t.time_call) for t in env.targets] == [
        ("k1", True, False),
        ("k2", False, False),
    ]
    assert not (scores / "environment_scores.json").exists()  # the run folder is not written


def test_broken_environment_file_is_a_warning(runs, tmp_path):
    import shutil

    run = tmp_path / "oracle"
    shutil.copytree(runs["oracle"], run)
    (run / "scores" / "environment_scores.json").write_text('{"totals": 1}')
    data = build_view([run], FAST)  # the paper's columns still show
    assert data.runs[0].scores and data.runs[0].environment == []
    (warning,) = [w for w in data.runs[0].warnings if w.startswith("environment columns")]
    assert "environment_scores.json: not an environment scores file" in warning
    assert "re-run `interactscope score`" in warning


# --- unscored runs ---------------------------------------------------------------------------


def test_unscored_run_has_no_outcomes_and_loses_nothing(runs):
    data = build_view([runs["oracle"], runs["silent"]], FAST)
    silent = data.runs[1]
    assert (silent.scored, silent.scores, silent.environment) == (False, [], [])
    # nothing is gained or lost against a run without scores (it used to lose all 14 targets)
    assert (data.gained, data.lost) == ([], [])
    taxi = next(i for i in data.interactions if i.id == "t1-taxi")
    assert (taxi.runs[0].scored, taxi.runs[0].responses) == (True, 1)  # oracle: one answer
    assert (taxi.runs[1].scored, taxi.runs[1].responses) == (False, 0)
    assert _env(data, 1) is None


# --- in a real browser -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    from tests.helpers.browser import headless_chromium

    with headless_chromium() as b:
        yield b


@pytest.fixture(scope="module")
def pages(runs, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outcome-pages")
    return {
        "unscored": write_view([runs["oracle"], runs["silent"]], root / "unscored.html", FAST),
        "blind": write_view([runs["oracle"], runs["blind-fire"]], root / "blind.html", FAST),
    }


@contextlib.contextmanager
def _opened(browser, path: Path):
    """The page, ready; on leaving, no console or page errors."""
    page, problems = _open(browser, path)
    yield page
    assert problems == []
    page.close()


STYLE = """e => { const s = getComputedStyle(e);
  return [s.backgroundColor, s.color, s.borderTopStyle, s.borderTopColor, s.borderTopWidth].join(" | "); }"""


def _legend_styles(page) -> None:
    styles, glyphs = {}, {}
    for k, st in STATES.items():
        badge = page.locator(f"#legend .badge.st-{k}")
        assert badge.count() == 1, k
        styles[k] = badge.evaluate(STYLE)
        glyphs[k] = badge.inner_text().split(" ")[0]
        assert badge.inner_text() == f"{st.glyph} {st.label}" and glyphs[k] == st.glyph
    assert len(set(styles.values())) == len(STATES), styles  # pairwise different
    assert len(set(glyphs.values())) == len(STATES)
    assert styles["unscored"].startswith("rgba(0, 0, 0, 0) | ")  # neutral: no fill...
    assert "dashed" in styles["unscored"]  # ...a dashed outline


def _not_scored(page) -> None:
    head = page.locator('section.interaction[data-id="t1-taxi"] h3')
    oracle, silent = (
        head.locator('.runbadges[data-run="0"]'),
        head.locator('.runbadges[data-run="1"]'),
    )
    assert "1 hit" in oracle.inner_text()
    assert "not scored" in silent.inner_text()
    assert not re.search(r"\d+\s*/\s*\d+", silent.inner_text())  # no 0/1 badge
    assert silent.locator(".badge.st-unscored").count() == 1
    assert silent.locator(".badge.st-missed, .badge.st-wrong").count() == 0
    # the score table: every cell of the unscored run says so, the scored run keeps numbers
    rows = page.locator("#score-table tr").all()[1:]
    cells = [r.locator("td").all_inner_texts() for r in rows if r.locator("td").count() == 3]
    assert cells and all("not scored" in c[2] for c in cells)
    assert all("not scored" not in c[1] for c in cells)
    assert "need both runs scored" in page.locator("#diff").inner_text()
    page.select_option("#filter-outcome", "unscored")
    assert page.locator("section.interaction:visible").count() == 11


def _environment_rows(page) -> None:
    env = page.locator("#score-table tr.env-metric")
    got = [r.locator("td").all_inner_texts() for r in env.all()]
    assert got == [
        ["T1 time-tool", "100.0 (2/2)", "50.0 (1/2)"],
        ["T1 time-call", "100.0 (2/2)", "0.0 (0/2)"],
        ["state correct", "100.0 (1/1)", "0.0 (0/1)"],
        ["action precision", "100.0 (2/2)", "— (0/0)"],
    ]
    sec = page.locator(f'section.interaction[data-id="{ENV_ID}"]')
    row_a, row_b = (sec.locator(f'.runrow[data-run="{i}"] .envrow') for i in (0, 1))
    assert "time-tool 2/2" in row_a.inner_text() and "state correct" in row_a.inner_text()
    assert "time-tool 1/2" in row_b.inner_text() and "state incorrect" in row_b.inner_text()
    assert row_b.locator(".badge.st-wrong").count() == 4  # k1 time-call, k2 both, the state
    # t7-walkers, blind-fire (its one sentence at 4 s): k1 late, k2 missed
    walkers = page.locator('section.interaction[data-id="t7-walkers"] .runbadges[data-run="1"]')
    assert walkers.locator(".badge.st-late").inner_text().endswith("1 late")
    assert walkers.locator(".badge.st-missed").inner_text().endswith("1 missed")


CHECKS = {
    "badge styles differ pairwise and carry a glyph": ("unscored", _legend_styles),
    "an unscored run reads not scored": ("unscored", _not_scored),
    "environment rows and outcome chips": ("blind", _environment_rows),
}


@pytest.mark.slow
@pytest.mark.parametrize("check", list(CHECKS))
def test_page_in_browser(browser, pages, check):
    key, run_check = CHECKS[check]
    with _opened(browser, pages[key]) as page:
        run_check(page)
