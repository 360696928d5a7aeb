"""Issue 26's EgoBench items: the scripted user's opening (never the hidden Instruction), the
scene text apart from the user's words in EgoInteract, the ``ego run`` progress bar, run
summaries per invocation and over the whole run (ego run and collect), ``ego score`` on a run
without episodes, the unknown ``--set`` message's docs section, plurals in ego output."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.egobench import package_data_dir
from interactscope.egobench import runner as runner_mod
from interactscope.egobench.agents import Visual
from interactscope.egobench.data import load_variant
from interactscope.egobench.egointeract import EgoInteractAgent, parse_spec
from interactscope.egobench.episode_settings import SETTINGS_DOCS, build_settings
from interactscope.egobench.episodes import run_episode
from interactscope.egobench.run_folder import differences, load_run, read_manifest
from interactscope.egobench.runner import RunRequest, execute, prepare
from interactscope.egobench.user_sim import ScriptedUser, default_script
from interactscope.engines import ChatResult

ROOT = Path(__file__).resolve().parents[1]
DATA = package_data_dir()


def _req(out: Path, **kw: Any) -> RunRequest:
    return RunRequest(**{"agent": "oracle", "data": DATA, "variants": ["retail1"], "out": out,
                         **kw})  # fmt: skip


# --------------------------------------------------------------- scripted user's opening
def test_scripted_opening_says_date_and_id_never_the_instruction() -> None:
    retail = load_variant(DATA, "retail1").task(1)  # "(User ID: alice_wong_456)", no date
    (msg,) = default_script(retail)
    assert msg == "Hello. My user ID is alice_wong_456. Please help me with what I am showing you."
    kitchen = load_variant(DATA, "kitchen1").task(1)  # "Your user ID is cook_009, and today is
    (msg,) = default_script(kitchen)  # May 6, 2026. First, ask ..."
    assert msg == (
        "Hello. Today is May 6, 2026. My user ID is cook_009. "
        "Please help me with what I am showing you."
    )
    assert "ask the AI" not in msg  # no step of the hidden goal
    # the former behaviour, kept as a named setting
    assert default_script(retail, "instruction") == [f"Hello. {retail.instruction}"]


def test_every_shipped_task_gets_its_user_id() -> None:
    from interactscope.egobench import list_variants

    for name in list_variants(DATA):
        for t in load_variant(DATA, name).tasks:
            (msg,) = default_script(t)
            uid = re.search(r"My user ID is (\S+)\.", msg)
            assert uid and uid[1] in t.instruction, (name, t.task_id, msg)


def test_setting_reaches_the_run_and_an_old_run_resumes_only_with_instruction(tmp_path) -> None:
    out = tmp_path / "run"
    execute(prepare(_req(out, tasks="1", sets={"user.scripted_opening": "instruction"})))
    _, (rec,) = load_run(out)
    assert rec.dialogue[0].text.startswith("Hello. You are a budget-conscious shopper")
    old = read_manifest(out)
    del old.settings["user"]["scripted_opening"]  # a run from before the setting existed
    new = prepare(_req(tmp_path / "new", tasks="1")).manifest
    assert differences(old, new) == ["settings.user.scripted_opening: 'instruction' != 'request'"]
    same = prepare(_req(tmp_path / "n2", tasks="1", sets={"user.scripted_opening": "instruction"}))
    assert differences(old, same.manifest) == []


# --------------------------------------------------------------- EgoInteract: no glued text
class _Eng:
    def __init__(self, replies: list[str]):
        self.replies, self.requests = list(replies), []

    def chat(self, messages, tools=None, **gen):
        self.requests.append(list(messages))
        return ChatResult(text=self.replies.pop(0))


def test_egointeract_scene_text_and_user_words_are_two_paragraphs() -> None:
    v = load_variant(DATA, "retail1")
    task = v.task(1)  # its description ends "...three bottles of wine in succession."
    service = _Eng(["Which bottle?"])
    auditor = _Eng(['{"verdict": "approve", "reason": "ok"}'])
    agent = EgoInteractAgent(parse_spec("fake,frames=first_turn"), service, auditor,
                             sees_pixels=False)  # fmt: skip
    visual = Visual(sees_pixels=False, description=task.image_description)
    run_episode(v, task, agent, ScriptedUser(["Hello."]), build_settings("easy"), visual)
    first = next(m for m in service.requests[0] if m.role == "user").text()
    assert first.endswith("in succession.\n\nHello.")


# --------------------------------------------------------------- progress
def test_on_step_reports_turns_steps_and_calls() -> None:
    from interactscope.egobench.agents import build_agent

    v = load_variant(DATA, "retail1")
    task = v.task(1)
    n = len(task.ground_truth)  # the oracle issues them in one batch, then says "Done."
    seen: list[str] = []
    agent, _ = build_agent("oracle")
    run_episode(v, task, agent, ScriptedUser(["Hello."]), build_settings("easy"),
                Visual(sees_pixels=False), on_step=seen.append)  # fmt: skip
    assert seen == [
        "retail1:1 turn 1 step 0, 0 calls",  # the user's first message
        f"retail1:1 turn 1 step 1, {n} calls",  # the oracle's batch ran
        f"retail1:1 turn 2 step 2, {n} calls",  # "Done." answered with STOP
    ]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_only(tmp_path) -> None:
    tty, pipe = _Tty(), io.StringIO()
    execute(prepare(_req(tmp_path / "a", tasks="1-2")), bar=tty)
    assert "ego run" in tty.getvalue() and "2/2" in tty.getvalue()
    execute(prepare(_req(tmp_path / "b", tasks="1-2")), bar=pipe)
    assert pipe.getvalue() == ""  # not a terminal: no bar
    res = CliRunner().invoke(app, ["ego", "run", "--agent", "oracle", "--variant", "retail1",
                                   "--tasks", "1", "--out", str(tmp_path / "c"), "--quiet"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "retail1:1 user_stop" not in res.output  # --quiet: no line per episode


# --------------------------------------------------------------- summaries over invocations
def _calls(tasks: list[int]) -> int:
    v = load_variant(DATA, "retail1")
    return sum(len(v.task(t).ground_truth) for t in tasks)


class _Killed(BaseException):
    """Stands in for SIGKILL: no handler of ours sees it (unlike Ctrl-C / SIGTERM)."""


def test_killed_run_resumed_summary_is_the_sum_of_both_invocations(tmp_path, monkeypatch):
    out = tmp_path / "run"
    real = runner_mod._play
    played = []

    def dies_on_the_second(*a, **kw):
        if len(played) == 1:
            raise _Killed  # killed while playing task 2
        played.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(runner_mod, "_play", dies_on_the_second)
    with pytest.raises(_Killed):
        execute(prepare(_req(out, tasks="1-3")))
    monkeypatch.setattr(runner_mod, "_play", real)
    again = execute(prepare(_req(out, tasks="1-3")))
    m = read_manifest(out)
    first, second = (i.summary for i in m.invocations)
    # invocation 1 wrote task 1 and was killed (its wall time unknown); 2 wrote tasks 2 and 3
    assert (first["episodes"], first["tool_calls"], first["wall_s"]) == (1, _calls([1]), None)
    assert (second["episodes"], second["tool_calls"]) == (2, _calls([2, 3]))
    assert m.summary["episodes"] == 3 and m.summary["expected"] == 3
    assert m.summary["tool_calls"] == _calls([1]) + _calls([2, 3])
    assert (m.summary["invocations"], m.summary["untimed"]) == (2, 1)
    assert m.summary["wall_s"] == second["wall_s"]
    line = again.line()
    assert line.startswith("this invocation: 2 episodes played, 1 already done, 0 with errors")
    assert "whole run (2 invocations, 1 of them untimed (killed)): 3/3 episodes" in line


def test_two_finished_invocations_sum(tmp_path) -> None:
    out = tmp_path / "run"
    execute(prepare(_req(out, tasks="1-2")))
    execute(prepare(_req(out, tasks="1-2", trials=2)))  # plays trial 2 of both tasks
    m = read_manifest(out)
    a, b = (i.summary for i in m.invocations)
    assert (a["episodes"], b["episodes"], m.summary["episodes"]) == (2, 2, 4)
    assert m.summary["tool_calls"] == 2 * _calls([1, 2]) == a["tool_calls"] + b["tool_calls"]
    assert m.summary["wall_s"] == round(a["wall_s"] + b["wall_s"], 3)
    assert m.summary["untimed"] == 0


def test_collect_prints_this_invocation_and_the_whole_run(tmp_path) -> None:
    out, bench = tmp_path / "r", str(ROOT / "annotations" / "demo")
    args = ["collect", "--model", "oracle", "--bench", bench, "--out", str(out), "--no-progress"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "whole run" not in first.output  # one invocation: its line is the run's
    # as a kill -9 after 40 records leaves it: 40 lines, the invocation never finished
    lines = (out / "responses.jsonl").read_text().splitlines(keepends=True)
    (out / "responses.jsonl").write_text("".join(lines[:40]))
    m = json.loads((out / "run.json").read_text())
    m["invocations"][0].update(summary=None, ended_at=None)
    (out / "run.json").write_text(json.dumps(m))
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    m = json.loads((out / "run.json").read_text())
    assert m["invocations"][1]["summary"]["written"] == 49  # 89 - 40
    assert m["summary"]["decision_points"] == 89  # the demo's 89 decision points: 40 + 49
    assert "this invocation: 11 interactions, 89 decision points: 49 written, 40" in second.output
    assert "whole run (2 invocations, 1 untimed (killed)): 89 decision points" in second.output
    assert "s wall, stages summed over requests: decode" in second.output


def test_stage_line_says_wall_vs_summed() -> None:
    from interactscope.core.records import StageTimings

    # 4 requests of 1 s model time each, in flight together during a 2 s loop
    t = StageTimings(collect_s=2.0, model_s=4.0).derived()
    assert "loop 2.0 s wall, stages summed over requests" in t.line()
    assert t.line().endswith("; summed 2.0x the wall (concurrent requests)")
    assert "x the wall" not in StageTimings(collect_s=2.0, model_s=1.0).derived().line()


# --------------------------------------------------------------- ego score, --set, plurals
def test_ego_score_on_a_run_without_episodes_says_so(tmp_path) -> None:
    out = tmp_path / "run"
    execute(prepare(_req(out, tasks="1-2")))
    (out / "episodes.jsonl").write_text("")  # every episode lost
    res = CliRunner().invoke(app, ["ego", "score", str(out)])
    assert res.exit_code == 0, res.output  # as `score` on a run without records
    assert "no episodes scored: none of its 2 planned episodes" in res.output
    strict = CliRunner().invoke(app, ["ego", "score", str(out), "--strict"])
    assert strict.exit_code == 4
    full = tmp_path / "full"
    execute(prepare(_req(full, tasks="1")))
    ok = CliRunner().invoke(app, ["ego", "score", str(full), "--strict"])
    assert ok.exit_code == 0 and "warning" not in ok.output
    assert "retail1: 1 task |" in ok.output and "1 tasks" not in ok.output


def test_unknown_set_names_a_docs_section_that_exists(tmp_path) -> None:
    res = CliRunner().invoke(app, ["ego", "run", "--agent", "oracle", "--variant", "retail1",
                                   "--out", str(tmp_path / "r"), "--set", "limits.max_turns=1"])  # fmt: skip
    assert res.exit_code == 1
    assert SETTINGS_DOCS in res.output
    page, _, section = SETTINGS_DOCS.partition(', section "')
    text = (ROOT / page).read_text(encoding="utf-8")
    assert f"### {section.rstrip(chr(34))}\n" in text
    assert "`user.scripted_opening`" in text  # the new setting is in that table


def test_plurals_and_no_double_colon(tmp_path) -> None:
    res = CliRunner().invoke(app, ["ego", "run", "--agent", "egointeract:", "--variant",
                                   "retail1", "--out", str(tmp_path / "r")])  # fmt: skip
    assert res.exit_code == 1 and "egointeract::" not in res.output
    assert "--agent egointeract: name one or two models" in res.output
    out = tmp_path / "one"
    execute(prepare(_req(out, tasks="1")))
    res = CliRunner().invoke(app, ["ego", "score", str(out)])
    assert "(1 task, 1 trial)" in res.output and "1 trials" not in res.output


# ------------------------------------------------------------ GT calls that fail (trial finding)
def test_kitchen_gt_calls_that_fail_under_ours_are_counted_and_warned(tmp_path: Path) -> None:
    """kitchen1 task 1's GT: 7 `add_to_shopping_list` calls with the quantity as a string ("5",
    "0.5", ...; read off the task file) and one `compute_total_nutritions` with numbers. The
    official KitchenDB converts the strings to floats and so does ours now: none fails. Under
    ours' old rule (kitchen_numeric_strings=reject, what a run from before the rule reads as)
    the 7 writes fail validation, the GT state lacks them, and `ego score` warns; retail1's GT
    has no such call."""
    from interactscope.egobench.scorer import gt_call_failures
    from interactscope.egobench.settings import ScoreSettings

    kitchen = load_variant(package_data_dir(), "kitchen1")
    one = kitchen.model_copy(update={"tasks": [kitchen.task(1)]})
    assert gt_call_failures(one) == {}
    assert gt_call_failures(one, ScoreSettings(kitchen_numeric_strings="reject")) == {1: 7}
    retail = load_variant(package_data_dir(), "retail1")
    assert gt_call_failures(retail.model_copy(update={"tasks": retail.tasks[:3]})) == {}
    runner = CliRunner()
    for rule, warned in (("float", False), ("reject", True)):
        out = tmp_path / rule
        res = runner.invoke(app, ["ego", "run", "-a", "oracle", "-v", "kitchen1", "--tasks", "1",
                                  "-o", str(out), "--quiet",
                                  "--set", f"kitchen_numeric_strings={rule}"])  # fmt: skip
        assert res.exit_code == 0, res.output
        res = runner.invoke(app, ["ego", "score", str(out)])
        assert res.exit_code == 0, res.output
        warning = "warning: kitchen1: 7 ground-truth calls fail under these tool rules"
        assert (warning in res.output) is warned, res.output


def test_a_broken_run_json_names_the_file_not_a_placeholder(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    (run / "run.json").write_text("{not json", encoding="utf-8")
    res = CliRunner().invoke(app, ["score", str(run)])
    assert res.exit_code == 1
    assert f"{run / 'run.json'}: not a valid run manifest (Invalid JSON" in res.output
    assert "<file>" not in res.output


# ------------------------------------------------- a caught Ctrl-C / SIGTERM is timed (trial 3)
def _interrupt_on_the_second(monkeypatch, exc: type[BaseException]) -> None:
    real, played = runner_mod._play, []

    def stops(*a, **kw):
        if len(played) == 1:
            raise exc  # Ctrl-C (or SIGTERM, cli.common.Terminated) while playing task 2
        played.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(runner_mod, "_play", stops)


@pytest.mark.parametrize("signal_name", ["ctrl-c", "sigterm"])
def test_interrupted_ego_run_records_its_wall_time(tmp_path, monkeypatch, signal_name) -> None:
    from interactscope.cli.common import Terminated

    out = tmp_path / "run"
    _interrupt_on_the_second(
        monkeypatch, KeyboardInterrupt if signal_name == "ctrl-c" else Terminated
    )
    with pytest.raises(KeyboardInterrupt):
        execute(prepare(_req(out, tasks="1-3")))
    m = read_manifest(out)
    (inv,) = m.invocations
    assert m.ended_at is None  # the run is unfinished
    assert inv.interrupted and inv.ended_at is not None
    assert (inv.written, inv.summary["episodes"], inv.summary["tool_calls"]) == (1, 1, _calls([1]))
    assert inv.summary["wall_s"] is not None and inv.summary["wall_s"] >= 0
    monkeypatch.undo()
    again = execute(prepare(_req(out, tasks="1-3")))
    m = read_manifest(out)
    assert (m.summary["invocations"], m.summary["untimed"], m.summary["episodes"]) == (2, 0, 3)
    first, second = (i.summary for i in m.invocations)
    assert m.summary["wall_s"] == round(first["wall_s"] + second["wall_s"], 3)
    assert "whole run (2 invocations): 3/3 episodes" in again.line()
    assert "untimed" not in again.line()


def test_interrupted_collect_records_its_wall_time(tmp_path, monkeypatch) -> None:
    from interactscope.streaming.runlog import RunWriter

    out, bench = tmp_path / "r", str(ROOT / "annotations" / "demo")
    args = ["collect", "--model", "oracle", "--bench", bench, "--out", str(out), "--no-progress"]
    real = RunWriter.append

    def ctrl_c_after_40(self, record):
        if len(self.done) == 40:
            raise KeyboardInterrupt
        real(self, record)

    monkeypatch.setattr(RunWriter, "append", ctrl_c_after_40)
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 130, first.output  # the CLI's "interrupted" exit
    assert "interrupted: the records written to" in first.output
    m = json.loads((out / "run.json").read_text())
    (inv,) = m["invocations"]
    assert m["ended_at"] is None and inv["interrupted"] is True
    # the driver's own summary, shaped as a finished invocation's: 89 points asked, 40 written
    assert inv["summary"]["written"] == 40 and inv["summary"]["decision_points"] == 89
    assert inv["summary"]["wall_s"] > 0 and inv["summary"]["timings"]["collect_s"] > 0
    monkeypatch.undo()
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    m = json.loads((out / "run.json").read_text())
    assert m["invocations"][1]["summary"]["written"] == 49  # 89 - 40
    assert "whole run (2 invocations): 89 decision points" in second.output
    assert "untimed" not in second.output


# --------------------------------------------------- --set typos name the valid keys (trial 3)
def test_ego_run_set_typo_lists_the_group_and_the_close_match(tmp_path) -> None:
    res = CliRunner().invoke(app, ["ego", "run", "--agent", "oracle", "--variant", "retail1",
                                   "--out", str(tmp_path / "r"), "--set", "limits.max_user_turn=5"])  # fmt: skip
    assert res.exit_code == 1
    # LimitSettings has exactly these two fields (episode_settings.py)
    assert "unknown episode setting 'limits.max_user_turn'; valid here: limits.max_user_turns, " \
           "limits.max_tool_calls; did you mean limits.max_user_turns?" in res.output  # fmt: skip
    assert SETTINGS_DOCS in res.output
    with pytest.raises(
        ValueError, match=r"'limit'; valid here: mode, runner, limits, .*did you mean limits\?"
    ):
        build_settings("easy", {"limit.max_user_turns": 5})


def test_ego_score_set_typo_says_unknown_and_the_close_match(tmp_path) -> None:
    out = tmp_path / "r"
    execute(prepare(_req(out, tasks="1")))
    for extra in ([], ["--reference", "paper"]):
        res = CliRunner().invoke(app, ["ego", "score", str(out), *extra, "--set", "float_tolerence=0.1"])  # fmt: skip
        assert res.exit_code == 1, res.output
        assert "--set float_tolerence: unknown scorer setting; valid here: " in res.output
        assert res.output.rstrip().endswith("did you mean float_tolerance?")
        assert "Extra inputs are not permitted" not in res.output


def test_collect_set_typo_also_offers_the_close_match() -> None:
    from interactscope.streaming.collect import CollectError, resolve_settings

    with pytest.raises(
        CollectError,
        match=r"grid\.stepp: unknown setting; valid here: grid\.step_s.*did you mean grid\.step_s\?",
    ):
        resolve_settings({}, {"grid.stepp": 1})


# ------------------------------------------------ --agent typo: what --agent accepts (trial 3)
def test_unknown_agent_lists_what_agent_accepts_and_the_close_match(tmp_path) -> None:
    res = CliRunner().invoke(app, ["ego", "run", "--agent", "orcale", "--variant", "retail1",
                                   "--out", str(tmp_path / "r")])  # fmt: skip
    assert res.exit_code == 1
    line = res.output.strip().splitlines()[-1]
    assert line.startswith("--agent 'orcale': unknown; expected one of ")
    # the registered agents (other test modules may register more, e.g. test_egobench_trials)
    agents = line.split("expected one of ", 1)[1].split(" or a chat model", 1)[0].split(", ")
    assert {"egointeract", "none", "oracle"} <= set(agents) and agents == sorted(agents)
    assert line.endswith("did you mean oracle?")
    # shipped configs: gpt-4o (backend openai) can chat; silent, blind-fire, change-detector
    # and mmduet2 (streaming-only backends) cannot, so --agent does not offer them
    assert "gpt-4o" in line
    for streaming_only in ("silent", "blind-fire", "change-detector", "mmduet2"):
        assert streaming_only not in line
    assert not (tmp_path / "r").exists()
