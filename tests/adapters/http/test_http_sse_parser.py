"""The event-stream parser on its own: line endings, chunk boundaries, comments, and
the chosen end-of-body rule — a pending event is dispatched when the body ends, unless
``flush_at_eof`` is off, as WHATWG SSE says."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.adapters.http.support import STREAMS, stream_file
from treadle.adapters.http_model.sse import SseEvent, SseParser

BODY = (
    b"event: a\ndata: one\n\n: keep-alive\n\nevent: b\ndata: two\ndata: lines\n\ndata: [DONE]\n\n"
)
EVENTS = [SseEvent("a", "one"), SseEvent("b", "two\nlines"), SseEvent("", "[DONE]")]


def parse(*chunks: bytes, flush_at_eof: bool = True) -> list[SseEvent]:
    parser = SseParser(flush_at_eof=flush_at_eof)
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    return events + parser.finish()


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_kind_of_line_ending_reads_the_same(newline: bytes) -> None:
    assert parse(BODY.replace(b"\n", newline)) == EVENTS


@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=12))
def test_how_the_bytes_are_cut_into_chunks_changes_nothing(cuts: list[int]) -> None:
    for newline in (b"\n", b"\r\n", b"\r"):
        body = BODY.replace(b"\n", newline)
        points = sorted({min(cut, len(body)) for cut in cuts} | {0, len(body)})
        chunks = [body[a:b] for a, b in itertools.pairwise(points)]
        assert parse(*chunks) == EVENTS


def test_a_character_split_between_chunks_is_decoded_whole() -> None:
    body = "data: caf\u00e9 \u2603\n\n".encode()
    assert parse(body[:9], body[9:11], body[11:]) == [SseEvent("", "caf\u00e9 \u2603")]


def test_a_long_line_in_many_chunks_is_one_line() -> None:
    data = b"x" * 100_000
    body = b"data: " + data + b"\n\n"
    assert parse(*(body[i : i + 1000] for i in range(0, len(body), 1000))) == [
        SseEvent("", data.decode())
    ]


def test_fields_follow_the_rules_of_the_format() -> None:
    body = (
        b"\xef\xbb\xbfdata:no space\n\n"  # a byte order mark, and no space after the colon
        b"data\n\n"  # a field with no colon: an empty value
        b"id: 7\nretry: 100\nevent: only-a-name\n\n"  # no data: nothing is dispatched
        b"data:  two spaces\nunknown: field\n\n"  # only the first space goes
    )
    assert parse(body) == [
        SseEvent("", "no space"),
        SseEvent("", ""),
        SseEvent("", " two spaces"),
    ]


def test_a_pending_event_is_dispatched_when_the_body_ends() -> None:
    assert parse(b"event: message_stop\ndata: {}") == [SseEvent("message_stop", "{}")]
    assert parse(b"event: message_stop\ndata: {}\n") == [SseEvent("message_stop", "{}")]


def test_without_flushing_a_pending_event_is_dropped_as_whatwg_says() -> None:
    assert parse(b"event: message_stop\ndata: {}", flush_at_eof=False) == []
    assert parse(b"event: message_stop\ndata: {}\n", flush_at_eof=False) == []
    assert parse(b"data: {}\n\n", flush_at_eof=False) == [SseEvent("", "{}")]


# The recordings whose last event has no blank line after it (see SOURCES.md), and
# that event.
UNTERMINATED = {
    "anthropic/basic_response.sse": "message_stop",
    "anthropic/tool_use_response.sse": "message_stop",
    "anthropic/tool_use_invalid_json_response.sse": "message_stop",
    "anthropic/incomplete_partial_json_response.sse": "message_stop",
    "anthropic/out_of_order_response.sse": "message_stop",
    "anthropic/refusal_response.sse": "message_stop",
    "anthropic/extra_fields_response.sse": "message_stop",
    "anthropic/more/compaction_response.sse": "message_stop",
    "anthropic/more/fallback_response.sse": "message_stop",
    "anthropic/more/fallback_credit_response.sse": "message_stop",
    "responses/codex-cli_responses_fixture.sse": "response.completed",
}
ALL_FILES = sorted(str(path.relative_to(STREAMS)) for path in STREAMS.rglob("*.sse"))


@pytest.mark.parametrize("name", ALL_FILES)
def test_the_end_of_body_rule_matters_exactly_for_the_unterminated_files(name: str) -> None:
    body = stream_file(name)
    flushed, strict = parse(body), parse(body, flush_at_eof=False)
    if name in UNTERMINATED:
        assert flushed[:-1] == strict
        assert flushed[-1].name == UNTERMINATED[name]
    else:
        assert flushed == strict
