"""EgoInteract policy: the auditor gates state-changing batches and final replies, read calls
pass straight through, the correction limit, the ablations, and the ledger in the log. Engines
are scripted: each returns canned replies in order."""

from __future__ import annotations

import json

import pytest

from interactscope.egobench import package_data_dir
from interactscope.egobench.agents import AGENTS, Visual, build_agent
from interactscope.egobench.data import load_variant
from interactscope.egobench.egointeract import EgoInteractAgent, Ledger, parse_spec
from interactscope.egobench.env import Environment
from interactscope.egobench.episode_settings import build_settings
from interactscope.egobench.episodes import run_episode
from interactscope.egobench.records import EpisodeRecord
from interactscope.egobench.user_sim import ScriptedUser
from interactscope.engines import ChatResult

USER = "alice_wong_456"
CART = {"qty": 1, "category": "wine", "price": 115, "tax_rate": 0.07, "discount": 0.9}
GUESS = {
    "name": "add_to_cart",
    "arguments": {"user_id": USER, "product_name": "Bordeaux wine", **CART},
}
READ = {"name": "get_price", "arguments": {"product_name": "CRYSTAL VISTEUX Bordeaux"}}
GROUNDED = {
    "name": "add_to_cart",
    "arguments": {"user_id": USER, "product_name": "CRYSTAL VISTEUX Bordeaux", **CART},
}
DONE = "I added CRYSTAL VISTEUX Bordeaux to your cart."
REJECT = '{"verdict": "reject", "reason": "Bordeaux wine was never returned by a look-up."}'
APPROVE = '{"verdict": "approve", "reason": "grounded by get_price"}'


class Scripted:
    """A chat engine that answers ``replies`` in order and records every request."""

    def __init__(self, replies: list[str]):
        self.replies, self.requests = list(replies), []

    def chat(self, messages, tools=None, **gen):
        self.requests.append((list(messages), gen))
        if not self.replies:
            raise AssertionError("the scripted engine ran out of replies")
        return ChatResult(text=self.replies.pop(0), prompt_tokens=7, completion_tokens=3)


def calls(*items) -> str:
    return json.dumps(list(items))


def text_of(message) -> str:
    if isinstance(message.content, str):
        return message.content
    return " ".join(getattr(p, "text", "") for p in message.content)


def play(service: list[str], auditor: list[str], spec: str = "fake", user=None):
    v = load_variant(package_data_dir(), "retail1")
    task = v.task(1)
    s_eng, a_eng = Scripted(service), Scripted(auditor)
    agent = EgoInteractAgent(parse_spec(spec), s_eng, a_eng, sees_pixels=False)
    visual = Visual(sees_pixels=False, description=task.image_description)
    rec = run_episode(
        v,
        task,
        agent,
        ScriptedUser(user or ["Please add the third bottle I pointed at to my cart."]),
        build_settings("easy"),
        visual,
    )
    return rec, s_eng, a_eng, v, task


def state_after(v, task, *tool_calls):
    with Environment.from_variant(v, task) as env:
        for c in tool_calls:
            assert env.call(c["name"], c["arguments"]).ok
        return env.state_hash(), env.state()["user_carts"].get(USER, [])


def test_auditor_blocks_ungrounded_write_then_executes_the_grounded_one():
    rec, s_eng, a_eng, v, task = play(
        [calls(GUESS), calls(READ), calls(GROUNDED), DONE], [REJECT, APPROVE, APPROVE]
    )
    assert rec.stop_reason == "user_stop", rec.errors
    assert [c.call.name for c in rec.calls] == ["get_price", "add_to_cart"]
    assert rec.calls[1].call.arguments["product_name"] == "CRYSTAL VISTEUX Bordeaux"
    expected_hash, cart = state_after(v, task, GROUNDED)
    assert rec.final_state_hash == expected_hash
    names = [row["product_name"] for row in cart]
    assert "crystal visteux bordeaux" in names and "bordeaux wine" not in names
    # the rejected proposal was never shown: the user saw only the final reply
    assert [d.text for d in rec.dialogue if d.role == "agent"] == [DONE]
    # the auditor's reason went back to the service agent in place of its proposal
    second_request = s_eng.requests[1][0]
    assert "Bordeaux wine was never returned by a look-up." in text_of(second_request[-1])
    assert all(m.role != "assistant" or "Bordeaux wine" not in text_of(m) for m in second_request)


def test_read_calls_skip_the_auditor_final_reply_does_not():
    rec, _, a_eng, _, _ = play(
        [calls(GUESS), calls(READ), calls(GROUNDED), DONE], [REJECT, APPROVE, APPROVE]
    )
    assert len(a_eng.requests) == 3
    ledger = Ledger.model_validate(rec.ledger)
    assert [v.proposal.kind for v in ledger.verdicts] == ["calls", "calls", "reply"]
    audited = [c.name for v in ledger.verdicts for c in v.proposal.calls]
    assert "get_price" not in audited
    assert all(msg.role != "assistant" for msgs, _ in a_eng.requests for msg in msgs)
    assert all(gen["temperature"] == 0.0 for _, gen in a_eng.requests)
    assert [c.audited for c in ledger.calls] == [False, True]


def test_ledger_in_the_log_lists_calls_results_and_verdicts_in_order():
    rec, *_ = play([calls(GUESS), calls(READ), calls(GROUNDED), DONE], [REJECT, APPROVE, APPROVE])
    back = EpisodeRecord.model_validate_json(rec.model_dump_json())
    ledger = Ledger.model_validate(back.ledger)
    assert [e.kind for e in ledger.entries] == [
        "user", "verdict", "call", "verdict", "call", "verdict", "reply",
    ]  # fmt: skip
    assert [e.seq for e in ledger.entries] == list(range(7))
    v1, v2, v3 = ledger.verdicts
    assert (v1.verdict, v1.reason) == ("reject", "Bordeaux wine was never returned by a look-up.")
    assert v1.proposal.calls[0].arguments["product_name"] == "Bordeaux wine"
    assert (v2.verdict, v3.verdict) == ("approve", "approve")
    read, write = ledger.calls
    assert (read.tool_class, read.result.output["products"][0]["price"]) == ("read", 115)
    assert (write.tool_class, write.result.ok, write.result.changed) == ("write", True, True)
    assert [c.call.name for c in ledger.state_changes] == ["add_to_cart"]
    assert ledger.service_model == "fake" and ledger.settings["max_corrections"] == 5


def test_without_auditor_the_same_service_agent_executes_the_ungrounded_write():
    rec, _, a_eng, v, task = play([calls(GUESS), DONE], [], spec="fake,auditor=false")
    assert a_eng.requests == []
    assert [c.call.arguments["product_name"] for c in rec.calls] == ["Bordeaux wine"]
    expected_hash, cart = state_after(v, task, GUESS)
    assert rec.final_state_hash == expected_hash
    assert "bordeaux wine" in [row["product_name"] for row in cart]
    assert Ledger.model_validate(rec.ledger).verdicts == []


def test_without_auditor_a_mixed_batch_runs_whole():
    rec, _, a_eng, *_ = play([calls(READ, GUESS), DONE], [], spec="fake,auditor=false")
    assert [c.call.name for c in rec.calls] == ["get_price", "add_to_cart"]
    assert Ledger.model_validate(rec.ledger).of("deferred") == []


def test_five_rejections_then_stop_executes_nothing():
    rec, s_eng, a_eng, v, task = play([calls(GUESS)] * 5, [REJECT] * 5)
    assert len(s_eng.requests) == 5 and len(a_eng.requests) == 5
    assert rec.calls == []
    assert rec.final_state_hash == state_after(v, task)[0]
    ledger = Ledger.model_validate(rec.ledger)
    limit = ledger.of("limit")
    assert len(limit) == 1 and limit[0].action == "stop"
    assert [v.attempt for v in ledger.verdicts] == [1, 2, 3, 4, 5]
    shown = [d.text for d in rec.dialogue if d.role == "agent"]
    assert len(shown) == 1 and "could not confirm" in shown[0]


def test_five_rejections_then_execute_runs_the_last_proposal():
    rec, s_eng, _, v, task = play(
        [calls(GUESS)] * 5 + [DONE],
        [REJECT] * 5 + [APPROVE],
        spec="fake,on_max_corrections=execute",
    )
    assert [c.call.arguments["product_name"] for c in rec.calls] == ["Bordeaux wine"]
    assert rec.final_state_hash == state_after(v, task, GUESS)[0]
    assert Ledger.model_validate(rec.ledger).of("limit")[0].action == "execute"


def test_four_rejections_then_approval_is_not_the_limit():
    rec, *_ = play([calls(GUESS)] * 4 + [calls(GROUNDED), DONE], [REJECT] * 4 + [APPROVE] * 2)
    assert [c.call.arguments["product_name"] for c in rec.calls] == ["CRYSTAL VISTEUX Bordeaux"]
    assert Ledger.model_validate(rec.ledger).of("limit") == []


@pytest.mark.parametrize(
    "answer",
    ["Looks fine to me!", '{"verdict": "approved"}', '{"verdict": "revise", "reply": "x"}', "{"],
)
def test_malformed_auditor_answer_counts_as_reject(answer):
    rec, *_ = play([calls(GUESS), calls(READ), calls(GROUNDED), DONE], [answer, APPROVE, APPROVE])
    assert [c.call.name for c in rec.calls] == ["get_price", "add_to_cart"]
    assert rec.calls[1].call.arguments["product_name"] == "CRYSTAL VISTEUX Bordeaux"
    first = Ledger.model_validate(rec.ledger).verdicts[0]
    assert (first.verdict, first.unparseable) == ("reject", True)
    assert first.reason.startswith("unparseable auditor answer")


def test_revise_replaces_the_final_reply_and_need_more_evidence_rejects():
    revised = '{"verdict": "revise", "reason": "price unsupported", "reply": "It costs 115."}'
    need = '{"verdict": "need more evidence", "reason": "look the price up first"}'
    rec, s_eng, *_ = play(
        ["It costs 100.", calls(READ), "It costs 115 dollars.", "Anything else?"],
        [need, revised, APPROVE],
        user=["How much is this wine?", "Thanks."],
    )
    assert [d.text for d in rec.dialogue if d.role == "agent"] == [
        "It costs 115.",
        "Anything else?",
    ]
    v = Ledger.model_validate(rec.ledger).verdicts
    assert [x.verdict for x in v] == ["need_more_evidence", "revise", "approve"]
    assert "look the price up first" in text_of(s_eng.requests[1][0][-1])


def test_auditor_engine_failure_ends_the_episode_in_one_line():
    rec, *_ = play([calls(GUESS)], [])
    assert rec.stop_reason == "error" and rec.calls == []
    assert rec.errors[0].startswith("auditor engine: AssertionError")


def test_a_batch_starting_with_reads_runs_the_reads_and_defers_the_write():
    rec, s_eng, a_eng, *_ = play([calls(READ, GROUNDED), calls(GROUNDED), DONE], [APPROVE, APPROVE])
    assert [c.call.name for c in rec.calls] == ["get_price", "add_to_cart"]
    assert len(a_eng.requests) == 2
    ledger = Ledger.model_validate(rec.ledger)
    assert ledger.of("deferred")[0].calls[0].name == "add_to_cart"
    assert "Not carried out yet" in text_of(s_eng.requests[1][0][-1])


def test_frames_on_demand_and_first_turn():
    rec, s_eng, *_ = play([calls({"name": "view_frames", "arguments": {}}), "Done."], [APPROVE])
    first_user = s_eng.requests[0][0][1]
    assert "What it shows" not in text_of(first_user)
    assert "What it shows, in words" in text_of(s_eng.requests[1][0][-1])
    assert rec.calls == []  # view_frames is the policy's, never the environment's
    assert Ledger.model_validate(rec.ledger).of("frames")[0].sees_pixels is False
    _, s_eng, *_ = play(["Done."], [APPROVE], spec="fake,frames=first_turn")
    assert "What it shows, in words" in text_of(s_eng.requests[0][0][1])
    assert "view_frames" not in text_of(s_eng.requests[0][0][0])


def test_scene_rules_reach_both_prompts_only_when_on():
    _, s_eng, a_eng, *_ = play(["Done."], [APPROVE])
    assert "Grounding:" in text_of(s_eng.requests[0][0][0])
    assert "Grounding:" in text_of(a_eng.requests[0][0][0])
    _, s_eng, a_eng, *_ = play(["Done."], [APPROVE], spec="fake,scene_rules=false")
    assert "Grounding:" not in text_of(s_eng.requests[0][0][0])
    assert "Grounding:" not in text_of(a_eng.requests[0][0][0])


def test_notes_go_to_the_ledger_not_to_the_user():
    rec, *_ = play(
        ["BRANCH: price check\nHYPOTHESIS: third bottle is a Bordeaux\nIt costs 115."], [APPROVE]
    )
    assert [d.text for d in rec.dialogue if d.role == "agent"] == ["It costs 115."]
    ledger = Ledger.model_validate(rec.ledger)
    assert ledger.branch == "price check"
    assert [e.text for e in ledger.of("hypothesis")] == ["third bottle is a Bordeaux"]


def test_spec_grammar():
    s = parse_spec("cascade")
    assert (s.service_model, s.auditor_name, s.label) == ("cascade", "cascade", "full")
    s = parse_spec("a, b ,auditor=false,scene_rules=no")
    assert (s.service_model, s.auditor_name, s.label) == ("a", "b", "neither")
    with pytest.raises(ValueError, match="colour: unknown setting"):
        parse_spec("a,colour=red")
    with pytest.raises(ValueError, match="name one or two models"):
        parse_spec("")
    with pytest.raises(ValueError, match="max_corrections"):
        parse_spec("a,max_corrections=-1")
    assert "egointeract" in AGENTS
    with pytest.raises(ValueError, match="name one or two models"):
        build_agent("egointeract")


def test_cli_options_compose_the_spec():
    import typer

    from interactscope.cli.ego_run import _policy_spec

    assert _policy_spec("egointeract", "m", None) == "egointeract:m"
    assert _policy_spec("egointeract:auditor=false", "m", "a") == "egointeract:m,a,auditor=false"
    assert _policy_spec("gpt-4o", None, None) == "gpt-4o"
    with pytest.raises(typer.Exit):
        _policy_spec("gpt-4o", "m", None)
    with pytest.raises(typer.Exit):
        _policy_spec("egointeract", None, "a")


def test_describe_records_both_models_and_the_ablation():
    agent = EgoInteractAgent(
        parse_spec("svc,aud,scene_rules=false"), Scripted([]), Scripted([]), info={"sha256": "x"}
    )
    d = agent.describe()
    assert (d["kind"], d["label"], d["sha256"]) == ("egointeract", "no_rules", "x")
    assert (d["egointeract"]["service_model"], d["egointeract"]["auditor_model"]) == ("svc", "aud")


class Native(Scripted):
    """A scripted engine with native tool calling: a reply is a ChatResult."""

    native_tools = True

    def chat(self, messages, tools=None, **gen):
        self.requests.append((list(messages), gen))
        return self.replies.pop(0)


def test_native_history_stays_valid_after_deferral_and_rejection():
    from interactscope.streaming.schema import ToolCall as EngineCall

    ids = iter(range(100))

    def native(*items):
        return ChatResult(
            tool_calls=[EngineCall(name=i["name"], arguments=i["arguments"]) for i in items],
            tool_call_ids=[f"id{next(ids)}" for _ in items],
        )

    v = load_variant(package_data_dir(), "retail1")
    task = v.task(1)
    service = Native([native(READ, GUESS), native(GUESS), native(GROUNDED), ChatResult(text=DONE)])
    agent = EgoInteractAgent(
        parse_spec("fake"), service, Scripted([REJECT, APPROVE, APPROVE]), sees_pixels=False
    )
    rec = run_episode(
        v, task, agent, ScriptedUser(["Add it."]), build_settings("easy"),
        Visual(sees_pixels=False, description="shelf"),
    )  # fmt: skip
    assert [c.call.arguments.get("product_name") for c in rec.calls] == [
        "CRYSTAL VISTEUX Bordeaux", "CRYSTAL VISTEUX Bordeaux",
    ]  # fmt: skip
    for messages, _ in service.requests:
        answered = [m.tool_call_id for m in messages if m.role == "tool"]
        asked = [i for m in messages if m.role == "assistant" for i in m.tool_call_ids]
        assert asked == answered  # every native call in the history has its tool message
    assert [len(m.tool_calls) for m in service.requests[1][0] if m.role == "assistant"] == [1]
