"""The keys the person presses, read on a thread while the event loop runs the turn.

The terminal is put in cbreak mode (each key at once, no echo) with its signal keys
off: Ctrl-C arrives as a key like Esc, and what it does is the key router's
(:func:`treadle.domain.rules.keys.route`), which the terminal applies on the event
loop; leaving at once can then put the terminal back before it exits. Reading
happens on a thread with blessed's ``inkey``, so a busy event loop never delays a
key and the loop never blocks on the keyboard; keys are handed to the loop with
``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import termios
import threading
import time
from collections.abc import Callable
from typing import Any

from treadle.adapters.blessed_terminal.line_editor import Key
from treadle.domain.rules.keys import PASTE_GAP, LeaveNow, Mode, enter_is_pasted, route

# blessed waits 0.35 s after a bare Esc for the rest of an escape sequence; the
# bytes of a real sequence arrive together, so 50 ms tells them apart.
ESC_DELAY = 0.05
# How often the reading thread looks up to see whether it should end.
POLL = 0.05

_NAMED_KEYS = {
    "KEY_ENTER": Key.ENTER,
    "KEY_ESCAPE": Key.ESC,
    "KEY_BACKSPACE": Key.BACKSPACE,
    "KEY_DELETE": Key.DELETE,
    "KEY_LEFT": Key.LEFT,
    "KEY_RIGHT": Key.RIGHT,
    "KEY_UP": Key.UP,
    "KEY_DOWN": Key.DOWN,
    "KEY_HOME": Key.HOME,
    "KEY_END": Key.END,
    "KEY_CTRL_A": Key.HOME,
    "KEY_CTRL_E": Key.END,
    "KEY_CTRL_C": Key.CTRL_C,
    "KEY_CTRL_D": Key.CTRL_D,
    "KEY_CTRL_K": Key.CTRL_K,
    "KEY_CTRL_O": Key.CTRL_O,
    "KEY_CTRL_U": Key.CTRL_U,
    "KEY_CTRL_W": Key.CTRL_W,
    "KEY_CTRL_H": Key.BACKSPACE,
    "KEY_CTRL_J": Key.ENTER,
    "KEY_CTRL_M": Key.ENTER,
}


def key_name(keystroke: Any) -> str:
    """A blessed keystroke as a :class:`Key` name or the character typed ("" if neither)."""
    name = _NAMED_KEYS.get(keystroke.name or "")
    if name is not None:
        return name
    text = str(keystroke)
    return text if len(text) == 1 and text.isprintable() else ""


def signal_free_cbreak(mode: list[Any]) -> list[Any]:
    """A copy of a termios mode in cbreak with Ctrl-C, Ctrl-Z, Ctrl-S as plain keys."""
    iflag, oflag, cflag, lflag, ispeed, ospeed, chars = mode
    chars = list(chars)
    chars[termios.VMIN] = 1
    chars[termios.VTIME] = 0
    return [
        int(iflag) & ~termios.IXON,  # Ctrl-S would freeze our output, and the loop with it
        oflag,
        cflag,
        int(lflag) & ~(termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN),
        ispeed,
        ospeed,
        chars,
    ]


class Keyboard:
    """Reads keys while it is held; ``hold`` and ``let_go`` nest.

    ``on_key`` runs on the event loop for every key. ``leave_now`` runs on the reading
    thread when a second Ctrl-C comes while the loop has not yet taken the first one
    (it is stuck): the router's answer for a Ctrl-C in a turn, judged here because the
    loop cannot judge it. The thread keeps no memory of Ctrl-C beyond the one on its
    way to the loop; the loop's is the terminal's.
    """

    def __init__(
        self,
        term: Any,
        fd: int,
        on_key: Callable[[str], None],
        leave_now: Callable[[], None],
    ) -> None:
        self._term = term
        self._fd = fd
        self._on_key = on_key
        self._leave_now = leave_now
        self._holds = 0
        self._saved: list[Any] | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._ctrl_c_on_its_way: float | None = None  # handed to the loop, not yet taken
        self._loop: asyncio.AbstractEventLoop | None = None
        self._registered = False

    @property
    def held(self) -> bool:
        return self._holds > 0

    def hold(self) -> None:
        self._holds += 1
        if self._holds == 1:
            self._start()

    def let_go(self) -> None:
        if self._holds == 0:
            return
        self._holds -= 1
        if self._holds == 0:
            self._stop()

    def release_all(self) -> None:
        if self._holds:
            self._holds = 0
            self._stop()

    def restore_mode(self) -> None:
        """Put the terminal back as it was; safe from any thread, and more than once."""
        saved, self._saved = self._saved, None
        if saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self._fd, termios.TCSADRAIN, saved)

    def _start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._saved = termios.tcgetattr(self._fd)
        termios.tcsetattr(self._fd, termios.TCSANOW, signal_free_cbreak(self._saved))
        if not self._registered:
            atexit.register(self.restore_mode)  # an exception escaping the program
            self._registered = True
        self._stopping.clear()
        self._thread = threading.Thread(target=self._read, name="treadle-keys", daemon=True)
        self._thread.start()

    def _stop(self) -> None:
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
        self._thread = None
        self.restore_mode()

    def _read(self) -> None:
        ahead: Any = None  # the key read after an Enter, to tell a paste from a person
        while True:
            keystroke, ahead = ahead, None
            if keystroke is None:
                if self._stopping.is_set():
                    return
                try:
                    keystroke = self._term.inkey(timeout=POLL, esc_delay=ESC_DELAY)
                except (EOFError, OSError):
                    return
            if self._stopping.is_set():
                if keystroke:
                    # Read as the reading ended: leave it for whoever reads next.
                    self._term.ungetch(str(keystroke))
                return
            key = key_name(keystroke) if keystroke else ""
            if not key:
                continue
            if key == Key.ENTER:  # a person's, or a line break of a paste (the router's rule)
                try:
                    ahead = self._term.inkey(timeout=PASTE_GAP, esc_delay=ESC_DELAY) or None
                except (EOFError, OSError):
                    ahead = None
                if enter_is_pasted(key_name(ahead) if ahead is not None else None):
                    key = Key.NEWLINE
            if key == Key.CTRL_C:
                now = time.monotonic()
                _, action = route(Mode.TURN, key, self._ctrl_c_on_its_way, now)
                if isinstance(action, LeaveNow):
                    self._leave_now()
                    return
                self._ctrl_c_on_its_way = now
            loop = self._loop
            if loop is None or loop.is_closed():
                return
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._deliver, key)

    def _deliver(self, key: str) -> None:
        if key == Key.CTRL_C:
            self._ctrl_c_on_its_way = None
        self._on_key(key)
