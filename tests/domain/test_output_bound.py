"""The head-and-tail output bound: what it keeps, what it counts, what it shows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treadle.domain.rules.output_bound import OutputBound

chunks = st.lists(st.binary(max_size=300), max_size=20)
limits = st.integers(min_value=0, max_value=400)


def fed(limit: int, pieces: list[bytes]) -> OutputBound:
    bound = OutputBound(limit)
    for piece in pieces:
        bound.feed(piece)
    return bound


def test_output_within_the_limit_is_returned_whole() -> None:
    bound = OutputBound.of(b"hello\nworld\n", limit=100)

    assert bound.text() == "hello\nworld\n"
    assert not bound.truncated
    assert bound.omitted == 0
    assert bound.total == 12


def test_output_past_the_limit_keeps_head_and_tail_with_a_marker() -> None:
    data = b"".join(f"line {n}\n".encode() for n in range(1000))

    bound = OutputBound.of(data, limit=40)

    text = bound.text()
    assert text.startswith("line 0\nline 1\nline 2\n")
    assert text.endswith("line 998\nline 999\n")
    assert bound.truncated
    assert bound.omitted == len(data) - 40
    assert f"[... {len(data) - 40:,} bytes (" in text
    assert "lines) omitted ...]" in text


def test_the_marker_counts_omitted_lines() -> None:
    bound = OutputBound.of(b"ab\n" * 10, limit=4)

    # Kept: "ab" and "b\n"; omitted: 26 bytes holding 9 newlines.
    assert bound.text() == "ab\n[... 26 bytes (9 lines) omitted ...]\nb\n"
    assert bound.omitted_lines == 9


def test_a_note_goes_inside_the_marker() -> None:
    bound = OutputBound.of(b"x" * 100, limit=10)
    text = bound.text(note="full output in /tmp/out.txt")

    assert "omitted; full output in /tmp/out.txt ...]" in text


def test_invalid_utf8_is_replaced_not_raised() -> None:
    bound = OutputBound.of(b"ok \xff\xfe done", limit=100)

    assert bound.text() == "ok \ufffd\ufffd done"


def test_a_cut_inside_a_character_does_not_invent_replacement_characters() -> None:
    # "é" is two bytes; a head of 5 bytes would end half way through the third one.
    bound = OutputBound.of("éééééééééé".encode(), limit=10)

    text = bound.text()
    assert "\ufffd" not in text
    assert text.startswith("éé\n[... ")
    assert text.endswith("\néé")
    assert bound.omitted == 20 - 8


def test_memory_stays_flat_whatever_is_fed() -> None:
    bound = OutputBound(limit=1000)
    for _ in range(2000):
        bound.feed(b"y\n" * 4096)

    assert len(bound.content()) <= 1000
    assert bound.total == 2000 * 8192
    assert bound.omitted_lines == bound.total // 2 - 500


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        OutputBound(-1)


@given(limits, chunks)
def test_text_never_exceeds_the_limit_plus_the_marker(limit: int, pieces: list[bytes]) -> None:
    bound = fed(limit, pieces)

    allowance = len(bound.marker()) + 2 if bound.truncated else 0
    assert len(bound.text()) <= limit + allowance


@given(limits, chunks)
def test_untruncated_text_is_the_decoded_input(limit: int, pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    bound = fed(limit, pieces)

    decoded = data.decode("utf-8", errors="replace")
    if len(decoded.encode("utf-8")) <= limit:
        assert not bound.truncated
        assert bound.text() == decoded
    else:
        assert bound.truncated


@given(limits, chunks)
def test_what_is_shown_fits_the_limit_even_when_no_byte_is_utf8(
    limit: int, pieces: list[bytes]
) -> None:
    bound = fed(limit, [piece.replace(b"a", b"\xff") for piece in pieces])
    text = bound.text()
    if bound.truncated:
        text = text.replace(bound.marker() + "\n", "", 1)
    assert len(text.encode("utf-8")) <= limit + 1  # the line break before the marker
    head, tail = bound.shown()
    assert len(head) + len(tail) == bound.kept


@given(limits, chunks)
def test_omitted_is_total_minus_kept(limit: int, pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    bound = fed(limit, pieces)

    assert bound.total == len(data)
    assert bound.omitted == bound.total - bound.kept
    assert bound.kept <= limit


@given(limits, chunks)
def test_feeding_in_pieces_equals_feeding_at_once(limit: int, pieces: list[bytes]) -> None:
    data = b"".join(pieces)

    assert fed(limit, pieces).text() == OutputBound.of(data, limit).text()


@given(st.integers(min_value=2, max_value=400), chunks)
def test_kept_bytes_are_the_start_and_the_end_of_the_input(limit: int, pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    bound = fed(limit, pieces)

    head, tail = bound.shown()
    assert data.startswith(head)
    assert data.endswith(tail)
    omitted_newlines = data[len(head) : len(data) - len(tail)].count(b"\n")
    assert bound.omitted_lines == omitted_newlines


def test_output_that_is_not_utf8_is_bounded_by_what_is_sent_not_what_is_read():
    bound = OutputBound.of(b"\xff" * 30_000, 30_000)
    head, tail = bound.shown()
    assert bound.truncated and bound.omitted == 30_000 - len(head) - len(tail)
    text = bound.text()
    marker = bound.marker()
    assert marker in text
    assert len(text.replace(marker, "").encode("utf-8")) <= 30_000
