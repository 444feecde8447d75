"""Ringing the terminal when the person is wanted (issue 23): a turn ended, a call
waits for a yes, the model asked a question.

Terminals that show a desktop notification for OSC 9 get one with the text; others
get a bell.

>>> ring_bytes("Turn finished", {"TERM_PROGRAM": "WezTerm"})
b'\\x1b]9;treadle: Turn finished\\x07'
>>> ring_bytes("Turn finished", {"TERM": "xterm-256color"})
b'\\x07'
"""

from __future__ import annotations

from collections.abc import Mapping

from treadle.domain.values.hooks import AttentionKind

OSC9_PROGRAMS = frozenset({"iTerm.app", "WezTerm", "ghostty", "Ghostty", "kitty"})
"""``TERM_PROGRAM`` values of terminals that turn OSC 9 into a notification."""
OSC9_TERMS = frozenset({"xterm-kitty", "xterm-ghostty"})
OSC9_VARIABLES = ("WT_SESSION", "KITTY_WINDOW_ID", "WEZTERM_PANE", "GHOSTTY_RESOURCES_DIR")
"""Variables those terminals set in the programs they run (Windows Terminal's
``WT_SESSION`` is the only sign of it)."""
TEXT_MOST = 180
BEL = b"\x07"

CODEX_TYPES: Mapping[AttentionKind, str] = {
    "turn_ended": "agent-turn-complete",
    "permission_prompt": "approval-requested",
    "question": "user-input-requested",
}
"""The ``type`` a ``notify`` command is given, in Codex's words where it has them."""


def speaks_osc9(environ: Mapping[str, str]) -> bool:
    """Whether the terminal, as its variables tell, shows OSC 9 notifications. Inside
    tmux or screen the sequence would not get through: a bell is what does."""
    if environ.get("TMUX") or environ.get("STY"):
        return False
    return (
        environ.get("TERM_PROGRAM", "") in OSC9_PROGRAMS
        or environ.get("TERM", "") in OSC9_TERMS
        or any(environ.get(name) for name in OSC9_VARIABLES)
    )


def ring_bytes(text: str, environ: Mapping[str, str]) -> bytes:
    """What to write to the terminal: OSC 9 with ``text`` (printable, one line, cut),
    or a bell."""
    if not speaks_osc9(environ):
        return BEL
    printable = "".join(c if c.isprintable() else " " for c in " ".join(text.split()))
    said = f"treadle: {printable}"[:TEXT_MOST]
    return b"\x1b]9;" + said.encode("utf-8", "replace") + BEL


def notify_payload(
    kind: AttentionKind, message: str, *, cwd: str, session_id: str, last_answer: str = ""
) -> dict[str, object]:
    """The event a ``notify`` command gets as its last argument, as JSON (Codex's
    fields, and treadle's own kind beside them)."""
    payload: dict[str, object] = {
        "type": CODEX_TYPES[kind],
        "treadle-event": kind,
        "message": message,
        "cwd": cwd,
        "session-id": session_id,
    }
    if kind == "turn_ended":
        payload["last-assistant-message"] = last_answer
    return payload
