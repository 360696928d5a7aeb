"""Response parsing (docs/protocol.md#silence, docs/protocol.md#tool-calls; small inputs)."""

from __future__ import annotations

import pytest

from interactscope.replies import is_silence
from interactscope.streaming.protocol import parse_response


def test_fenced_json_then_prose_is_one_call():
    text = '```json {"name":"set_timer","arguments":{"seconds":30}} ``` Done!'
    p = parse_response(text)
    assert not p.silent
    assert [c.name for c in p.tool_calls] == ["set_timer"]
    assert p.tool_calls[0].arguments == {"seconds": 30}
    assert p.parse_error is None
    assert p.reply == "Done!"
    assert p.text == text


def test_python_literal_with_apostrophe():
    text = "{'name':'search','arguments':{'q':\"what's on screen\"}}"
    p = parse_response(text)
    assert [c.name for c in p.tool_calls] == ["search"]
    assert p.tool_calls[0].arguments == {"q": "what's on screen"}
    assert p.parse_error is None


def test_json_string_with_backticks_parsed_intact():
    text = '```json\n{"name": "note", "arguments": {"text": "run ```ls -l``` then `pwd`"}}\n```'
    p = parse_response(text)
    assert len(p.tool_calls) == 1
    assert p.tool_calls[0].arguments["text"] == "run ```ls -l``` then `pwd`"
    assert p.parse_error is None


def test_plain_prose_is_text_reply():
    p = parse_response("The kettle is boiling now.")
    assert not p.silent
    assert p.tool_calls == []
    assert p.parse_error is None
    assert p.reply == "The kettle is boiling now."


@pytest.mark.parametrize(
    "text", ["", "   \n", "<SILENT>", "<silent>", " <Silent>. ", "**<SILENT>**", '"<SILENT>"']
)
def test_silence_forms(text):
    p = parse_response(text)
    assert p.silent and p.tool_calls == []


@pytest.mark.parametrize("text", ["<SILENT> nothing happened", "I will stay silent now", "no"])
def test_not_silence(text):
    assert not parse_response(text).silent


def test_custom_silence_token_and_punctuation_only_token():
    assert parse_response("[quiet]", silence_token="QUIET").silent
    assert not parse_response("<SILENT>", silence_token="QUIET").silent
    assert is_silence("...", "...")
    assert not is_silence("..!", "...")


def test_list_of_calls_and_openai_shape():
    text = (
        '[{"name": "a", "arguments": {}}, '
        '{"type": "function", "function": {"name": "b", "arguments": "{\\"x\\": 1}"}}]'
    )
    p = parse_response(text)
    assert [c.name for c in p.tool_calls] == ["a", "b"]
    assert p.tool_calls[1].arguments == {"x": 1}


def test_wrapper_and_bare_json_in_prose():
    text = 'Sure. {"tool_calls": [{"name": "take_photo"}]} and {"note": 1}'
    p = parse_response(text)
    assert [c.name for c in p.tool_calls] == ["take_photo"]
    assert p.tool_calls[0].arguments == {}


def test_non_call_json_is_text():
    p = parse_response('{"answer": "a red car", "confidence": 0.9}')
    assert p.tool_calls == [] and not p.silent and p.parse_error is None


def test_broken_call_records_error_never_raises():
    p = parse_response('```json\n{"name": "set_timer", "arguments": {"seconds": 30}\n```')
    assert p.tool_calls == []
    assert not p.silent
    assert p.parse_error is not None and "unparsable tool call at char 8" in p.parse_error


def test_bad_arguments_string_recorded():
    p = parse_response('{"function": {"name": "f", "arguments": "not json"}}')
    assert [c.name for c in p.tool_calls] == ["f"]
    assert p.tool_calls[0].arguments == {"_unparsed": "not json"}
    assert "arguments" in p.parse_error


def test_json_literals_in_python_fallback():
    p = parse_response("{'name': 'toggle', 'arguments': {'on': true, 'x': null}}")
    assert p.tool_calls[0].arguments == {"on": True, "x": None}


def test_native_tool_calls_win():
    native = [{"id": "c1", "type": "function", "function": {"name": "zoom", "arguments": "{}"}}]
    p = parse_response("", native_tool_calls=native)
    assert not p.silent
    assert [c.name for c in p.tool_calls] == ["zoom"]


@pytest.mark.parametrize(
    "text", [None, 123, "{" * 5000, "[" * 3000 + "]" * 10, "{'name': 'x', 'arguments': {'a': }"]
)
def test_never_raises(text):
    p = parse_response(text)  # type: ignore[arg-type]
    assert isinstance(p.tool_calls, list)
