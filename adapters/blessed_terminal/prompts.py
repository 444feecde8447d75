"""Reading the person's keys at the terminal: approvals, questions, the task prompt.

:class:`Prompts` is the half of :class:`~.terminal.BlessedTerminal` that waits for
the person; keys come in through :meth:`Prompts.press` (from the keyboard thread,
on the event loop) and go to the prompt being read, or wait for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Final, Literal

from treadle.adapters.blessed_terminal.display import Styles, TurnView, diff_lines
from treadle.adapters.blessed_terminal.line_editor import Ending, Key, LineEditor
from treadle.adapters.blessed_terminal.screen import (
    HIDE_CURSOR,
    SHOW_CURSOR,
    Screen,
    cell_width,
    fit,
)
from treadle.domain.rules.diffs import bounded_diff
from treadle.domain.rules.interrupts import CtrlC
from treadle.domain.values.text import one_line, printable
from treadle.domain.values.tools import ApprovalAnswer, ApprovalRequest, Declined

QUIT = "<quit>"
APPROVAL_KEYS: dict[str, ApprovalAnswer] = {"y": "yes", "n": "no", "a": "always"}
VIEW_ALL: Final = "v"
# What an approval shows at once; a longer subject is folded, saying so, and the
# whole of it is one key away: nothing being approved is ever cut unseen.
SHOWN_LINES = 40
SHOWN_CHARACTERS = 4_000
SHOWN_LINE_WIDTH = 400
"""Characters shown at once of one line of a diff being approved (its head and tail)."""
VIEW_HINT = "press v to see all of it"


def folded(subject: str) -> tuple[list[str], bool]:
    """The lines of ``subject`` to show, and whether some were folded away (the marker
    line then says how much, and that ``v`` shows it all). Its head and its tail are
    both shown: the end of a command is where a danger hides.

    Example: ``folded("ls")`` is ``(["ls"], False)``.
    """
    lines = [printable(line) for line in subject.split("\n")]
    if len(lines) <= SHOWN_LINES and len(subject) <= SHOWN_CHARACTERS:
        return lines, False
    text = "\n".join(lines)
    head = text[: SHOWN_CHARACTERS // 2].split("\n")[: SHOWN_LINES // 2]
    tail = text[-SHOWN_CHARACTERS // 4 :].split("\n")[-(SHOWN_LINES // 4) :]
    hidden = len(text) - sum(map(len, head)) - sum(map(len, tail))
    marker = f"[… {hidden:,} more characters: {VIEW_HINT} …]"
    return [*head, marker, *tail], True


class Prompts:
    """Approvals, questions and the task prompt, read key by key.

    A mix-in: the terminal supplies the screen, the turn's state and the few
    methods declared at the end of this class.
    """

    term: Any
    screen: Screen
    styles: Styles
    view: TurnView
    can_answer: bool
    _now: Callable[[], float]
    _in_turn: bool
    _cursor_hidden: bool
    _prompt: tuple[str, int] | None
    ctrl_c: CtrlC

    def _init_prompts(self) -> None:
        # Keys typed at a prompt, or ahead of the next one while a turn runs.
        self._keys: asyncio.Queue[str] = asyncio.Queue()
        self._keys_loop: asyncio.AbstractEventLoop | None = None
        self._reading = False
        self._asking: asyncio.Lock | None = None
        self._submitted = ""
        self._task_editor = LineEditor()
        self._questions = 0  # questions waiting for the person now
        self._expand_after_question = False

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        if not self.can_answer:
            return None
        async with self._lock(), self._question():
            s = self.styles
            lines, folded_away = folded(request.summary)
            # The change a write would make is part of what is asked, whole: folded
            # like the subject when long (lines and long lines), never cut, and all of
            # it one key away.
            whole = diff_lines(request.diff, s)
            change = diff_lines(request.diff, s, SHOWN_LINES, VIEW_HINT, SHOWN_LINE_WIDTH)
            folded_away = folded_away or change != whole
            self.screen.write_lines(
                [
                    s.yellow("? ")
                    + (s.magenta(f"[{request.agent}] ") if request.agent else "")
                    + s.bold(f"Allow {request.tool}: ")
                    + lines[0],
                    *("  " + line for line in lines[1:]),
                    *("  " + line for line in change),
                ]
            )
            view = "[v]iew all · " if folded_away else ""
            choices = (
                f"[y]es · [n]o · {view}[a]lways allow “{one_line(request.prefix, 60)}” › "
                if request.prefix
                else f"[y]es · [n]o · {view}› ".replace(" · ›", " ›")
            )
            row = s.yellow(fit(choices, self.screen.width - 2))
            choice = await self._read_choice(row, always=bool(request.prefix), view=folded_away)
            while choice == VIEW_ALL:
                self.screen.write_lines(
                    [
                        *("  " + printable(line) for line in request.summary.split("\n")),
                        *("  " + line for line in whole),
                    ]
                )
                choice = await self._read_choice(row, always=bool(request.prefix), view=True)
            if choice is None:
                return None
            answer: ApprovalAnswer = choice
            if answer == "no":
                reason = await self._read_reason()
                if reason is None:
                    return None
                answer = Declined(reason) if reason else "no"
            if request.diff and answer in ("yes", "always"):
                # The call's result keeps the diff bounded: that is what it will carry.
                self.view.approved_diffs.add(bounded_diff(request.diff))
            said = f"no: {one_line(answer.reason, 400)}" if isinstance(answer, Declined) else answer
            self.screen.write_lines([s.dim(f"  → {said}")])
            self._draw(self._now())
            self.screen.flush()
            return answer

    async def ask_question(self, question: str) -> str | None:
        if not self.can_answer:
            return None
        async with self._lock(), self._question():
            s = self.styles
            self.screen.write_lines([s.yellow("? ") + s.bold(one_line(question, 4_000))])
            self._forget_typed_keys()  # typed for something else: not an answer
            ending, text = await self._read_line(s.yellow("answer › "), LineEditor())
            return text if ending == "submit" else None

    async def read_task(self, prompt: str = "› ") -> str | None:
        """The next task typed at the prompt; None when the person leaves.

        Ctrl-D on an empty line leaves; Ctrl-C clears the line, and a second Ctrl-C
        on an empty line leaves at once, as everywhere.
        """
        while True:
            label = self.styles.bold(self.styles.cyan(prompt))
            ending, text = await self._read_line(label, self._task_editor)
            if ending == "submit":
                self._submitted = text.strip()
                return text
            if ending == "eof":
                return None
            if text:
                self.ctrl_c.forget()  # it cleared the line: that was its whole job
                continue
            if self.ctrl_c.press(self._now()):
                self.leave_now()
                return None
            self.note(["(Ctrl-C again or Ctrl-D to leave)"])

    def stop_prompt(self) -> None:
        """End the prompt being read as if the person left (a signal asked to quit)."""
        if self._reading:
            self._keys.put_nowait(QUIT)

    def press(self, key: str) -> None:
        """A key the person pressed (called on the event loop by the keyboard)."""
        if key == Key.CTRL_O:  # at any moment, but never inside a question
            if self._questions:
                self._expand_after_question = True
            else:
                self.expand_reasoning()
        elif self._reading:
            self._keys.put_nowait(key)
        elif key in (Key.ESC, Key.CTRL_C):
            self._stop_pressed(key)
        elif self._keys.qsize() < 4_096:
            self._keys.put_nowait(key)  # typed ahead: the next prompt starts with it

    async def _read_choice(
        self, row: str, *, always: bool = True, view: bool = False
    ) -> ApprovalAnswer | Literal["v"] | None:
        """One of y, n (a and v, when offered) at a prompt row; Esc and Ctrl-C stop the
        turn as usual."""
        self._forget_typed_keys()  # a key typed before the question is no answer to it
        async with self._reading_keys():
            self._prompt = (row, cell_width(self.term.strip_seqs(row)))
            while True:
                self._draw(self._now())
                self.screen.flush()
                key = await self._keys.get()
                if key == QUIT:
                    return None
                if key in (Key.ESC, Key.CTRL_C):
                    self._stop_pressed(key)  # the turn then cancels this prompt
                elif key.lower() in APPROVAL_KEYS and (always or key.lower() != "a"):
                    return APPROVAL_KEYS[key.lower()]
                elif view and key.lower() == VIEW_ALL:
                    return VIEW_ALL

    async def _read_reason(self) -> str | None:
        """After a no, the person's words for the model: what to do instead. Enter
        alone and Esc give none (a plain no); Ctrl-C stops the turn as at the choice."""
        wide = self.screen.width >= 60
        label = "tell it what to do instead (Enter: just no) › " if wide else "instead › "
        ending, text = await self._read_line(self.styles.yellow(label), LineEditor(), aside=True)
        if ending == "eof":  # the prompt was ended (a signal, Ctrl-D): no answer
            return None
        return text.strip() if ending == "submit" else ""

    async def _read_line(
        self, label: str, editor: LineEditor, *, aside: bool = False
    ) -> tuple[Ending, str]:
        """A line typed after ``label``; in a turn, Esc and Ctrl-C stop the turn. An
        ``aside`` (a line inside a question) is cancelled by Esc and not echoed: the
        question's answer line says what it was."""
        label_width = cell_width(self.term.strip_seqs(label))
        async with self._reading_keys():
            while True:
                shown, column = editor.view(max(4, self.screen.width - label_width))
                self._prompt = (label + shown, label_width + column)
                self._draw(self._now())
                self.screen.flush()
                key = await self._keys.get()
                if key == QUIT:
                    return "eof", ""
                if aside and key == Key.ESC:
                    self._prompt = None
                    return "cancel", ""
                if self._in_turn and key in (Key.ESC, Key.CTRL_C):
                    self._stop_pressed(key)
                    continue
                ending = editor.press(key)
                if ending is None:
                    continue
                text = editor.take() if ending == "submit" else editor.text
                if ending == "cancel":
                    editor.press(Key.ESC)
                self._prompt = None
                if ending == "submit" and not aside:
                    self.screen.write_lines([label + printable(text)])
                return ending, text

    def _forget_typed_keys(self) -> None:
        while not self._keys.empty():
            self._keys.get_nowait()

    @contextlib.asynccontextmanager
    async def _reading_keys(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        if self._keys_loop not in (None, loop):  # a queue serves one event loop only
            self._keys = asyncio.Queue()
        self._keys_loop = loop
        self._reading = True
        self._hold()
        self.screen.write_raw(SHOW_CURSOR)
        try:
            yield
        finally:
            self._reading = False
            self._prompt = None
            if self._cursor_hidden:
                self.screen.write_raw(HIDE_CURSOR)
            self._let_go()
            self._draw(self._now())
            self.screen.flush()

    @contextlib.asynccontextmanager
    async def _question(self) -> AsyncIterator[None]:
        """While a question waits for the person, the status line says so, and the
        expand key waits for the answer: it never prints between a question and it."""
        self._questions += 1
        before, self.view.activity = self.view.activity, "waiting for your answer"
        self._draw(self._now())
        try:
            yield
        finally:
            self._questions -= 1
            if not self._questions:
                if self.view.activity == "waiting for your answer":
                    self.view.activity = before
                if self._expand_after_question:
                    self._expand_after_question = False
                    self.expand_reasoning()

    def _lock(self) -> asyncio.Lock:
        # Sub-agents may ask while the main agent asks: one prompt at a time.
        if self._asking is None:
            self._asking = asyncio.Lock()
        return self._asking

    # Supplied by the terminal ------------------------------------------------------

    def note(self, lines: list[str]) -> None:
        raise NotImplementedError

    def leave_now(self) -> None:
        raise NotImplementedError

    def expand_reasoning(self) -> None:
        raise NotImplementedError

    def _stop_pressed(self, key: str) -> None:
        raise NotImplementedError

    def _hold(self) -> None:
        raise NotImplementedError

    def _let_go(self) -> None:
        raise NotImplementedError

    def _draw(self, now: float) -> None:
        raise NotImplementedError
