"""The keyboard: blessed keystrokes as key names, read on a thread in signal-free cbreak."""

from __future__ import annotations

import asyncio
import io
import os
import termios
import threading
from collections.abc import Iterator

import pytest
from blessed import Terminal

from treadle.adapters.blessed_terminal.keyboard import Keyboard, key_name, signal_free_cbreak
from treadle.adapters.blessed_terminal.line_editor import Key


@pytest.mark.parametrize(
    ("typed", "name"),
    [
        ("\x1b", Key.ESC),
        ("\x03", Key.CTRL_C),
        ("\x04", Key.CTRL_D),
        ("\r", Key.ENTER),
        ("\x7f", Key.BACKSPACE),
        ("\x1b[A", Key.UP),
        ("\x1b[3~", Key.DELETE),
        ("\x01", Key.HOME),
        ("q", "q"),
        ("\x07", ""),
    ],
)
def test_keystrokes_get_the_names_the_line_editor_knows(typed: str, name: str) -> None:
    term = Terminal(kind="xterm-256color", stream=io.StringIO(), force_styling=True)
    term.ungetch(typed)
    assert key_name(term.inkey(timeout=0, esc_delay=0)) == name


def test_the_reading_mode_passes_signal_keys_through_and_keeps_output_processing() -> None:
    lflag = termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN
    mode = [termios.IXON | termios.ICRNL, termios.OPOST, 0, lflag, 38400, 38400, [0] * 32]
    iflag, oflag, _, new_lflag, _, _, chars = signal_free_cbreak(mode)
    assert new_lflag & lflag == 0 and iflag == termios.ICRNL and oflag == termios.OPOST
    assert chars[termios.VMIN] == 1 and chars[termios.VTIME] == 0
    assert mode[3] == lflag  # the saved mode is left alone


class Pressed:
    """A keystroke as blessed returns it: a name for special keys, else the text."""

    def __init__(self, text: str, name: str | None = None) -> None:
        self.text, self.name = text, name

    def __str__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        return bool(self.text)


class ScriptedKeys:
    """Stands in for blessed's ``inkey``: hands out keys, then nothing."""

    def __init__(self, *keys: Pressed) -> None:
        self.keys = list(keys)

    def inkey(self, timeout: float, esc_delay: float) -> Pressed:
        assert esc_delay <= 0.05
        return self.keys.pop(0) if self.keys else Pressed("")

    def ungetch(self, text: str) -> None:
        self.keys.insert(0, Pressed(text))


@pytest.fixture
def pty_fd() -> Iterator[int]:
    leader, follower = os.openpty()
    yield follower
    os.close(leader)
    os.close(follower)


async def test_keys_reach_the_event_loop_and_the_mode_is_put_back(pty_fd: int) -> None:
    before = termios.tcgetattr(pty_fd)
    got: asyncio.Queue[str] = asyncio.Queue()
    term = ScriptedKeys(Pressed("\x1b", "KEY_ESCAPE"), Pressed("y"))
    keyboard = Keyboard(term, pty_fd, got.put_nowait, lambda: None)
    keyboard.hold()
    during = termios.tcgetattr(pty_fd)
    assert [await asyncio.wait_for(got.get(), 5) for _ in range(2)] == [Key.ESC, "y"]
    keyboard.hold()
    keyboard.let_go()
    assert keyboard.held  # holds nest
    keyboard.let_go()
    assert not during[3] & termios.ISIG
    assert termios.tcgetattr(pty_fd) == before


async def test_two_ctrl_c_that_a_stuck_loop_never_takes_exit_from_the_thread(pty_fd: int) -> None:
    exited = threading.Event()
    term = ScriptedKeys(Pressed("\x03", "KEY_CTRL_C"), Pressed("\x03", "KEY_CTRL_C"))
    keyboard = Keyboard(term, pty_fd, lambda key: None, exited.set)
    keyboard.hold()
    # The loop is blocked right here, as a wedged turn would block it.
    assert exited.wait(timeout=5)
    keyboard.release_all()
