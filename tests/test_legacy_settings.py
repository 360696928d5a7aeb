"""The one legacy-settings mechanism (core/settings.fill_legacy): a table of dotted key ->
constant or rule(old manifest, new settings), and EgoBench's table through it: a run.json
written before a setting existed reads (or is compared on resume) as what that run did."""

from __future__ import annotations

from types import SimpleNamespace

from interactscope.core.settings import LegacyRule, fill_legacy
from interactscope.egobench import run_folder as ego

TABLE = {
    "reference": "ours",
    "user.opening": LegacyRule(lambda old, new: f"{old.kind}/{new['user']['opening']}"),
}


def test_a_missing_constant_is_filled_first_and_present_keys_are_kept() -> None:
    old = {"mode": "easy", "user": {"x": 1}}
    out = fill_legacy(old, TABLE)
    assert list(out.items()) == [("reference", "ours"), ("mode", "easy"), ("user", {"x": 1})]
    assert old == {"mode": "easy", "user": {"x": 1}}  # the input is not changed
    assert fill_legacy({"reference": "paper"}, TABLE) == {"reference": "paper"}


def test_a_rule_applies_only_when_compared_and_only_inside_a_recorded_group() -> None:
    settings = {"reference": "ours", "user": {"x": 1}}
    assert fill_legacy(settings, TABLE) == settings  # reading alone: no run to compare with
    new = {"user": {"opening": "request"}}
    filled = fill_legacy(settings, TABLE, old=SimpleNamespace(kind="scripted"), new=new)
    assert filled == {"reference": "ours", "user": {"opening": "scripted/request", "x": 1}}
    no_group = fill_legacy({"reference": "ours"}, TABLE, old=SimpleNamespace(kind="k"), new=new)
    assert no_group == {"reference": "ours"}
    kept = {"user": {"opening": "instruction"}}
    assert fill_legacy(kept, TABLE, old=SimpleNamespace(kind="k"), new=new)["user"] == {
        "opening": "instruction"
    }


def _old_run(user: dict, **settings) -> ego.EgoRunManifest:
    return ego.EgoRunManifest(
        agent={"name": "a"}, user=user, agent_id="a", user_id="u", mode="easy", data={},
        tasks={"v": [1]}, settings={"user": {"max_rewrites": 1}, **settings},
    )  # fmt: skip


def test_egobench_old_run_json_reads_reference_ours() -> None:
    m = ego.EgoRunManifest.model_validate_json(_old_run({"kind": "llm"}).model_dump_json())
    assert m.settings["reference"] == "ours"
    assert "scripted_opening" not in m.settings["user"]  # a rule: only when resuming


def test_egobench_scripted_opening_of_an_old_run_depends_on_its_user() -> None:
    new = _old_run({"kind": "scripted"})
    new.settings["user"]["scripted_opening"] = "request"
    # the default scripted user sent the Instruction: resuming with `request` differs
    assert ego.differences(_old_run({"kind": "scripted"}), new) == [
        "settings.user.scripted_opening: 'instruction' != 'request'"
    ]
    # a scripted user reading a script file, or an LLM user, never used the setting
    for user in ({"kind": "scripted", "script": "s.txt"}, {"kind": "llm"}):
        again = new.model_copy(update={"user": user})
        assert ego.differences(_old_run(user), again) == []
