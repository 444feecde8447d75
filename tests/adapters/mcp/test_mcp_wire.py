"""A server's messages made readable to the SDK, as plain values: lines with lone
surrogates or bad bytes, answers that are not JSON-RPC, and tool lists with a tool
the SDK would refuse."""

from __future__ import annotations

import json

import mcp_types as mcp
from hypothesis import given
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from treadle.adapters.mcp.wire import NO_ARGUMENTS, ToolListRepair, message_of
from treadle.domain.values.text import well_formed


def line(**message: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


def answer(raw: bytes) -> mcp.JSONRPCMessage:
    read = message_of(raw)
    assert isinstance(read, SessionMessage)
    return read.message


@given(st.text())
def test_any_text_in_a_result_reaches_the_sdk_well_formed(text: str) -> None:
    message = answer(line(id=1, result={"content": [{"type": "text", "text": text}]}))
    assert isinstance(message, mcp.JSONRPCResponse)
    assert message.result["content"][0]["text"] == well_formed(text)


def test_lone_surrogates_and_bad_bytes_anywhere_become_replacement_characters() -> None:
    notified = answer(line(method="notifications/message", params={"\udc80": "\ud800 x"}))
    assert isinstance(notified, mcp.JSONRPCNotification)
    assert notified.params == {"\ufffd": "\ufffd x"}
    raw = line(id="a", result={"text": "BYTE"}).replace(b"BYTE", b"\xff\xfe")
    message = answer(raw)
    assert isinstance(message, mcp.JSONRPCResponse) and message.result == {"text": "\ufffd\ufffd"}


def test_an_answer_that_is_not_json_rpc_becomes_an_error_answer_to_its_request() -> None:
    for request_id in (7, "seven"):
        message = answer(line(id=request_id, result=[1, 2]))
        assert isinstance(message, mcp.JSONRPCError) and message.id == request_id
        assert message.error.code == mcp.PARSE_ERROR
        assert message.error.message == "not JSON-RPC: result: Input should be a valid dictionary"
    message = answer(line(id=3, error={"code": "bad"}))
    assert isinstance(message, mcp.JSONRPCError)
    assert message.error.message.startswith("not JSON-RPC: error.")


def test_what_names_no_request_it_answers_goes_to_the_session_as_an_error() -> None:
    assert isinstance(message_of(b"hello, this is not json"), ValueError)
    assert isinstance(message_of(b'{"jsonrpc": "2.0", "id": true, "result": []}'), ValueError)
    assert isinstance(message_of(line(id=1, method=5)), ValueError)  # a request, not an answer
    deep = b'{"jsonrpc": "2.0", "id": 1, "result": {"x": ' + b"[" * 300 + b"]" * 300 + b"}}"
    assert "nested deeper than 200" in str(message_of(deep))


def test_only_answers_to_tools_list_are_mended() -> None:
    repair = ToolListRepair()
    listing = {"tools": [{"name": "n", "inputSchema": None}]}
    other = mcp.JSONRPCResponse(jsonrpc="2.0", id=1, result=dict(listing))
    repair.answered(other)
    assert other.result == listing and repair.notes == []
    repair.asked(mcp.JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/list"))
    mended = mcp.JSONRPCResponse(jsonrpc="2.0", id="2", result=dict(listing))
    repair.answered(mended)
    assert mended.result == {"tools": [{"name": "n", "inputSchema": NO_ARGUMENTS}]}
    assert repair.notes == ['tool "n": its inputSchema is null; it is offered taking no arguments']


def test_a_tool_list_keeps_every_tool_it_can_and_says_what_it_changed() -> None:
    repair = ToolListRepair()
    tools = [
        {"name": "fine", "inputSchema": {"type": "object", "properties": {}}},
        {"name": "typeless", "inputSchema": {}},
        {"name": "text", "inputSchema": "x"},
        {"name": "missing"},
        "not a tool",
        {"name": "bad properties", "inputSchema": {"type": "object", "properties": []}},
    ]
    mended = repair.mended({"tools": tools, "nextCursor": "c"})
    assert mended["nextCursor"] == "c"
    assert [(tool["name"], tool["inputSchema"]) for tool in mended["tools"]] == [
        ("fine", {"type": "object", "properties": {}}),
        ("typeless", {"type": "object"}),
        ("text", NO_ARGUMENTS),
        ("missing", NO_ARGUMENTS),
    ]
    assert repair.notes == [
        'tool "text": its inputSchema is a string; it is offered taking no arguments',
        'tool "missing": its inputSchema is missing; it is offered taking no arguments',
        "tool 5 of its list is not an object; it is left out",
        'tool "bad properties" cannot be read (inputSchema.properties: Input should be a '
        "valid dictionary); it is left out",
    ]
    assert repair.mended({"tools": "none"}) == {"tools": "none"}  # the SDK says why
