"""The bell (issue 23): its bytes, its text without secrets, a terminal gone away."""

from __future__ import annotations

from treadle.adapters.terminal.notify import TerminalBell


def test_the_bell_s_text_has_no_secrets() -> None:
    written: list[bytes] = []
    bell = TerminalBell(
        written.append, {"TERM_PROGRAM": "WezTerm"}, lambda text: text.replace("sk-123", "***")
    )
    bell.notify("turn_ended", "Turn failed: HttpError: key sk-123 refused")
    assert written == [b"\x1b]9;treadle: Turn failed: HttpError: key *** refused\x07"]


def test_a_terminal_gone_away_is_not_worth_a_turn() -> None:
    def gone(data: bytes) -> None:
        raise OSError(5, "Input/output error")

    TerminalBell(gone, {}).notify("question", "Which branch?")  # no exception
