"""The EgoBench page of ``interactscope view``: an oracle run of retail1 tasks 1-2 plus a
hand-made episode (task 3) whose agent made one wrong write, and the page in headless chromium.

Hand-worked diff (retail1 task 3, user emma_clark_654): the GT calls are get_nutrition, then
add_to_cart "Kim Crawford Sauvignon Blanc" qty 1, then compute_total_nutrition. The hand-made
episode makes the same calls with qty 2 in the add_to_cart (its one wrong write). Her seed cart
(cabernet sauvignon reserve, fifteen year old brandy, glitz sauvignon blanc, riumi moscato,
silver bay pinot noir) holds no Kim Crawford, so the two final states differ in one table,
``user_carts``, one row, ``emma_clark_654``, one field, ``[kim crawford sauvignon blanc].quantity``:
1 after the GT calls, 2 after the episode's. No row is in one state only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.egobench import Environment, load_variant, package_data_dir
from interactscope.egobench.records import CallRecord, DialogueTurn, EpisodeRecord, ToolCall
from interactscope.view import ViewError, build_view, render_page
from interactscope.view.ego import diff_states

WRONG_TASK = 3


def _wrong_call(task) -> tuple[int, ToolCall]:
    for i, c in enumerate(task.ground_truth):
        if c.name == "add_to_cart":
            args = dict(c.arguments, qty=c.arguments["qty"] + 1)
            return i, ToolCall(name=c.name, arguments=args)
    raise AssertionError("task has no add_to_cart")


def _wrong_episode(variant) -> EpisodeRecord:
    task = variant.task(WRONG_TASK)
    i, wrong = _wrong_call(task)
    calls = list(task.ground_truth)
    calls[i] = wrong
    env = Environment.from_variant(variant, task)
    recs = [CallRecord(turn=1, call=c, result=env.call(c.name, c.arguments)) for c in calls]
    ledger = {
        "format": "interactscope.egointeract.ledger/1",
        "entries": [
            {"seq": 0, "turn": 1, "kind": "verdict", "attempt": 1, "verdict": "reject",
             "reason": "quantity not confirmed by the user", "unparseable": False, "raw": "",
             "proposal": {"kind": "calls", "calls": [wrong.model_dump()], "text": ""}},
            {"seq": 1, "turn": 1, "kind": "verdict", "attempt": 2, "verdict": "approve",
             "reason": "evidence is sufficient", "unparseable": False, "raw": "",
             "proposal": {"kind": "calls", "calls": [wrong.model_dump()], "text": ""}},
        ],
    }  # fmt: skip
    return EpisodeRecord(
        variant="retail1", task_id=WRONG_TASK, mode="easy", agent="oracle", user="scripted",
        sees_pixels=False,
        dialogue=[DialogueTurn(role="user", text="Please add the wine, and HANDMADE-USER-LINE."),
                  DialogueTurn(role="agent", text="HANDMADE-AGENT-LINE"),
                  DialogueTurn(role="user", text="STOP")],
        calls=recs, final_state_hash=env.state_hash(), stop_reason="user_stop", ledger=ledger,
    )  # fmt: skip


@pytest.fixture(scope="module")
def ego_run(tmp_path_factory) -> Path:
    """An ``ego run`` folder: oracle episodes of tasks 1-2, then task 3 hand-made (wrong)."""
    root = tmp_path_factory.mktemp("egoview")
    out = root / "run"
    args = ["ego", "run", "--agent", "oracle", "--user", "scripted", "--variant", "retail1",
            "--tasks", "1-2", "--out", str(out)]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    variant = load_variant(package_data_dir(), "retail1")
    manifest = json.loads((out / "run.json").read_text())
    manifest["tasks"]["retail1"] = [1, 2, WRONG_TASK]  # the hand-made episode joins the run
    (out / "run.json").write_text(json.dumps(manifest))
    with (out / "episodes.jsonl").open("a") as f:
        f.write(_wrong_episode(variant).model_dump_json() + "\n")
    return out


EXPECTED = ("emma_clark_654", "[kim crawford sauvignon blanc].quantity", 1, 2)
"""(row, field, GT value, episode value) of the one changed field, worked out above."""


def test_page_lists_tasks_with_scores_and_diffs(ego_run):
    data = build_view([ego_run])
    assert data.page == "ego"
    assert [t.key for t in data.tasks] == ["retail1:1", "retail1:2", "retail1:3"]
    ok1, ok2, bad = data.tasks
    assert ok1.joint_succ and ok2.joint_succ and ok1.diff == [] and ok2.diff == []
    assert not bad.joint_succ and not bad.result_succ and bad.error_class
    assert len(bad.diff) == 1
    d = bad.diff[0]
    assert d.table == "user_carts" and d.only_gt == {} and d.only_agent == {}
    assert [(c.row, c.field, c.gt, c.agent) for c in d.changed] == [EXPECTED]
    assert [v.verdict for v in bad.verdicts] == ["reject", "approve"]
    assert bad.verdicts[0].reason == "quantity not confirmed by the user"
    assert [t["role"] for t in bad.dialogue] == ["user", "agent", "user"]
    assert data.run.agent == "oracle" and data.run.user == "scripted" and data.run.mode == "easy"
    s = data.variants[0]
    assert s.variant == "retail1" and s.n_tasks == 3 and s.joint_succ == pytest.approx(2 / 3)
    assert not (ego_run / "scores").exists()  # the viewer never writes into the run folder


def test_stored_scores_are_used(ego_run, tmp_path):
    import shutil

    run = tmp_path / "scored"
    shutil.copytree(ego_run, run)
    res = CliRunner().invoke(app, ["ego", "score", str(run)])
    assert res.exit_code == 0, res.output
    data = build_view([run])
    assert "written by `interactscope ego score`" in data.run.score_source
    assert [t.joint_succ for t in data.tasks] == [True, True, False]


def test_diff_states_rows_and_fields():
    gt = {"t": {"a": {"x": 1, "y": [1, 2]}, "b": {"x": 0}}, "u": {"k": [{"name": "p", "q": 1}]}}
    ag = {"t": {"a": {"x": 2, "y": [1, 2]}, "c": {"x": 0}}, "u": {"k": [{"name": "P", "q": 1}]}}
    d, u = diff_states(gt, ag)  # names key the items; a change of case is still a change
    assert [(c.row, c.field, c.gt, c.agent) for c in u.changed] == [("k", "[p].name", "p", "P")]
    assert d.table == "t" and d.only_gt == {"b": {"x": 0}} and d.only_agent == {"c": {"x": 0}}
    assert [(c.row, c.field, c.gt, c.agent) for c in d.changed] == [("a", "x", 1, 2)]
    (w,) = diff_states({"l": {"u": [{"a": 1}]}}, {"l": {"u": [{"a": 1}, {"a": 2}]}})
    assert [(c.field, c.missing) for c in w.changed] == [('[{"a":2}]', "gt")]


def test_cli_writes_self_contained_ego_page(ego_run, tmp_path):
    out = tmp_path / "ego.html"
    res = CliRunner().invoke(app, ["view", str(ego_run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert 'data-page="ego"' in html and "HANDMADE-AGENT-LINE" in html
    assert not re.search(r"""(src|href)=["']https?://""", html)
    assert render_page(build_view([ego_run])) == html


def test_ego_run_with_another_run_is_refused(ego_run, tmp_path):
    with pytest.raises(ViewError, match="viewed alone"):
        build_view([ego_run, tmp_path])
    with pytest.raises(ViewError, match="two side by side"):
        build_view([ego_run, ego_run, ego_run])


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory) -> Path:
    """Run B: the oracle on tasks 1-3 of retail1 (all three solved)."""
    out = tmp_path_factory.mktemp("egoview-b") / "b"
    args = ["ego", "run", "--agent", "oracle", "--variant", "retail1", "--tasks", "1-3",
            "--out", str(out)]  # fmt: skip
    assert CliRunner().invoke(app, args).exit_code == 0
    return out


def test_two_ego_runs_side_by_side(ego_run, oracle_run):
    data = build_view([ego_run, oracle_run])
    assert data.other is not None and data.other.agent == "oracle"
    assert [t.key for t in data.tasks] == ["retail1:1", "retail1:2", "retail1:3"]
    # A fails task 3 (the hand-made wrong write), the oracle B solves it: B gained it
    assert (data.gained, data.lost) == (["retail1:3"], [])
    assert all(t.other is not None and t.other.joint_succ for t in data.tasks)
    assert data.other_variants[0].joint_succ == 1.0 and data.variants[
        0
    ].joint_succ == pytest.approx(2 / 3)


# --- in a real browser -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    from tests.helpers.browser import headless_chromium

    with headless_chromium() as b:
        yield b


def test_ego_page_in_browser(browser, ego_run, tmp_path):
    from tests.helpers.browser import _open

    out = tmp_path / "ego.html"
    assert CliRunner().invoke(app, ["view", str(ego_run), "--out", str(out)]).exit_code == 0
    page, problems = _open(browser, out)
    assert page.locator("section.task").count() == 3
    sec = page.locator('section.task[data-key="retail1:3"]')
    assert not sec.locator(".body").is_visible()
    sec.locator(".task-head").click()
    body = sec.locator(".body")
    assert "HANDMADE-AGENT-LINE" in body.locator(".dialogue").inner_text()
    assert body.locator("table.diff tr.changed").count() == 1
    assert body.locator("tr.verdict").count() == 2
    page.select_option("#filter-success", "failed")
    assert page.locator("section.task:not([hidden])").count() == 1
    page.select_option("#filter-success", "")
    page.select_option("#filter-variant", "retail1")
    assert page.locator("section.task:not([hidden])").count() == 3
    page.screenshot(path=str(tmp_path / "viewer-ego.png"))
    assert problems == []
    page.close()


def test_two_ego_runs_in_browser(browser, ego_run, oracle_run, tmp_path):
    from tests.helpers.browser import _open

    out = tmp_path / "two.html"
    res = CliRunner().invoke(app, ["view", str(ego_run), str(oracle_run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    page, problems = _open(browser, out)
    assert "gained 1 (retail1:3), lost 0" in page.locator("#gained-lost").inner_text()
    sec = page.locator('section.task[data-key="retail1:3"]')
    sec.locator(".task-head").click()
    assert "HANDMADE-AGENT-LINE" in sec.locator(".side-a .dialogue").inner_text()
    assert sec.locator(".side-b .empty-diff").count() == 1  # B's state equals the GT state
    assert problems == []
    page.close()


def test_ego_page_opens_the_task_in_the_hash(browser, ego_run, tmp_path):
    out = tmp_path / "ego.html"
    assert CliRunner().invoke(app, ["view", str(ego_run), "--out", str(out)]).exit_code == 0
    page = browser.new_page(viewport={"width": 1200, "height": 700})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(out.as_uri() + "#t-0")
    page.wait_for_selector("body[data-ready]")
    assert page.locator("#t-0 .body").is_visible()
    assert "empty diff" in page.locator("#t-0 .state-diff").inner_text()
    page.evaluate("location.hash = '#t-2'")
    page.wait_for_selector("#t-2 .body:not([hidden])", timeout=5_000)
    assert page.locator("#t-2 table.diff").count() == 1
    assert problems == []
    page.close()


@pytest.mark.slow
def test_streaming_page_hash_and_infra_error_filter(browser, tmp_path):
    """Streaming page fixes: ``#i-N`` opens (draws) and scrolls to section N on load and on
    hashchange, with lazy sections too; the outcome filter offers ``infra_error``."""
    from interactscope.view import ViewSettings, write_view
    from tests.helpers.view_fixtures import make_pair

    a, _ = make_pair(tmp_path)
    lazy = ViewSettings(resamples=200, lazy_threshold=0)
    out = write_view([a], tmp_path / "lazy.html", lazy)
    page = browser.new_page(viewport={"width": 1200, "height": 500})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(out.as_uri() + "#i-9")
    page.wait_for_selector("body[data-ready]")
    assert page.locator("#i-9 svg.timeline").count() == 1
    assert page.locator("#i-9").evaluate("e => e.getBoundingClientRect().top < innerHeight")
    page.evaluate("location.hash = '#i-4'")
    page.wait_for_function("document.querySelector('#i-4').getBoundingClientRect().top < 50")
    opts = page.locator("#filter-outcome option").all_inner_texts()
    assert "infra_error" in opts
    assert "infra_error" in page.locator(".legend").inner_text()
    assert problems == []
    page.close()


@pytest.fixture(scope="module")
def ego_run_gap(ego_run, tmp_path_factory) -> Path:
    """``ego_run`` with task 4 selected and never played (no episode)."""
    import shutil

    run = tmp_path_factory.mktemp("egoview-gap") / "run"
    shutil.copytree(ego_run, run)
    manifest = json.loads((run / "run.json").read_text())
    manifest["tasks"]["retail1"] = [1, 2, WRONG_TASK, 4]
    (run / "run.json").write_text(json.dumps(manifest))
    return run


STYLE = "e => { const s = getComputedStyle(e); return [s.backgroundColor, s.color, s.borderTopStyle].join(' | '); }"


def test_ego_badges_use_the_palette_and_no_episode_is_neutral(browser, ego_run_gap, tmp_path):
    """The streaming page's badge rules on the EgoBench page: success and failure in the hit /
    wrong styles with their glyphs; a task without an episode reads "no episode" (neutral),
    not "failed" / "tools 0/N" (it still counts as failed: missing_log = fail)."""
    from interactscope.view.palette import STATES
    from tests.helpers.browser import _open

    out = tmp_path / "gap.html"
    assert CliRunner().invoke(app, ["view", str(ego_run_gap), "--out", str(out)]).exit_code == 0
    page, problems = _open(browser, out)
    ok = page.locator('section.task[data-key="retail1:1"] .task-head .badge.st-hit').first
    bad = page.locator('section.task[data-key="retail1:3"] .task-head .badge.st-wrong').first
    assert ok.inner_text() == STATES["hit"].glyph + " JointSucc"
    assert bad.inner_text() == STATES["wrong"].glyph + " failed"
    styles = {ok.evaluate(STYLE), bad.evaluate(STYLE)}
    gap = page.locator('section.task[data-key="retail1:4"] .task-head')
    none = gap.locator(".badge.st-unscored")
    assert none.inner_text() == STATES["unscored"].glyph + " no episode"
    assert "counted as failed" in none.get_attribute("title")
    styles.add(none.evaluate(STYLE))
    assert len(styles) == 3
    assert "failed" not in gap.inner_text() and not re.search(r"\d+/\d+", gap.inner_text())
    page.select_option("#filter-success", "no-episode")
    assert page.locator("section.task:not([hidden])").count() == 1
    page.select_option("#filter-success", "failed")
    assert page.locator("section.task:not([hidden])").count() == 1  # task 3 only
    assert problems == []
    page.close()


def test_comparison_title_says_an_equal_mode_once(ego_run, oracle_run):
    # both runs are easy mode (ego run's default): once, not "easy / easy"
    assert build_view([ego_run, oracle_run]).title == "oracle vs oracle — EgoBench (easy)"


def test_run_b_gets_the_same_chips_as_run_a(browser, ego_run, oracle_run, tmp_path):
    """Task 3: A (the hand-made wrong write, qty 2) fails with a final state unlike the GT; B
    (the oracle) solves it, its final state equal to the GT: B shows the state chip too."""
    from tests.helpers.browser import _open

    out = tmp_path / "two.html"
    assert CliRunner().invoke(app, ["view", str(ego_run), str(oracle_run), "--out", str(out)]).exit_code == 0  # fmt: skip
    page, problems = _open(browser, out)
    head = page.locator('section.task[data-key="retail1:3"] .task-head').inner_text()
    a, _, b = head.partition(" · B: ")
    assert "failed" in a and "state ≠ GT" in a
    assert "JointSucc" in b and "tools 3/3" in b and "state = GT" in b
    chips = page.locator('section.task[data-key="retail1:1"] .task-head .badge.st-hit')
    assert chips.count() == 6  # JointSucc, tools, state = GT for A and for B (both oracle)
    assert problems == []
    page.close()
