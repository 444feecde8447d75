"""Reading the person's answers at the terminal: approvals, questions, the task prompt.

:class:`Prompts` is the part of :class:`~.terminal.BlessedTerminal` that waits for
the person. It judges no key: the terminal routes each one
(:func:`treadle.domain.rules.keys.route`) and hands it here only to be read
(:meth:`Prompts.deliver`) or kept for the next prompt (:meth:`Prompts.queue`).

What is typed while a turn runs is the next prompt's line, typed ahead: it shows under
the status line as it is edited, and Enter queues it (``queued: …`` above the prompt),
to be sent when the turn ends, one line a turn. Esc stops the turn at once, as it
always does; what was queued is then not sent but waits on the prompt, to be edited,
sent with Enter, or dropped with Esc (:meth:`Prompts.keep_queued`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from treadle.adapters.blessed_terminal.display import Styles, TurnView, diff_lines
from treadle.adapters.blessed_terminal.line_editor import Ending, Key, LineEditor
from treadle.adapters.blessed_terminal.screen import Screen, cell_width, fit
from treadle.adapters.terminal.log_wrap import wrap_rows
from treadle.domain.rules.diffs import bounded_diff
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
MAX_QUEUED = 20
"""Lines that can wait to be sent after the turn; Enter on one more does nothing."""
QUEUED = "queued › "


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


@dataclass
class _Line:
    """A line being read: after its label (and the label's width), on its editor,
    until it ends with how and what (see :meth:`Prompts._read_line`)."""

    label: str
    label_width: int
    editor: LineEditor
    clear_on_cancel: bool
    ended: asyncio.Future[tuple[Ending, str]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Live(Protocol):
    """What the prompts need of the terminal around them."""

    def redraw(self) -> None:
        """Draw the live rows, the prompt's row among them, and flush."""

    def hold(self) -> None:
        """Read keys (and tick) while a prompt is read; nested."""

    def let_go(self) -> None: ...

    def expand_folded(self) -> None:
        """Show the reasoning and the last results in full (the expand key, kept until a
        question ended)."""


class Prompts:
    """Approvals, questions and the task prompt, read key by key.

    :meth:`live_rows` are the prompt's rows, for the terminal to draw under its own
    (the lines queued, then the line being read or typed ahead). ``reading`` says what
    is read: ``"task"``, ``"answer"`` (a question or an approval), ``"aside"`` (the
    words of a no) or None; ``typed`` is the line typed so far. ``queued`` holds the
    lines typed during the turn and sent, one a prompt, once it ended.
    """

    def __init__(
        self, term: Any, screen: Screen, styles: Styles, view: TurnView, live: Live
    ) -> None:
        self.term = term
        self.screen = screen
        self.styles = styles
        self.view = view
        self.live = live
        self.can_answer = False
        self.queued: list[str] = []
        self._choice: str | None = None  # the choices' row while one is read (plain)
        # Keys given to the prompt being read, or kept ahead of the next one.
        self._keys: asyncio.Queue[str] = asyncio.Queue()
        self._keys_loop: asyncio.AbstractEventLoop | None = None
        self._reading = False
        self._line: _Line | None = None  # the line being read, until it ends
        self._aside = False  # the line is the words of a no, inside an approval
        self._asking: asyncio.Lock | None = None
        self.submitted = ""
        self._task_editor = LineEditor()
        self._questions = 0  # questions waiting for the person now
        self.clock: Callable[[], float] = time.monotonic
        """The display's clock, for the sub-agents' times while the person is asked."""
        self._leave_ahead = False  # Ctrl-D typed ahead on an empty line
        self._expand_after_question = False

    @property
    def reading(self) -> Literal["task", "answer", "aside"] | None:
        if not self._reading:
            return None
        if self._aside:
            return "aside"
        return "answer" if self._questions else "task"

    @property
    def typed(self) -> str:
        return self._line.editor.text if self._line is not None else ""

    def deliver(self, key: str) -> None:
        """A key for the prompt being read: a line's editor takes it at once, a choice
        reads it from the queue."""
        if self._line is not None:
            self._press(self._line, key)
        else:
            self._keys.put_nowait(key)

    def queue(self, key: str) -> None:
        """A key typed while no prompt is read (a turn runs), or on in the flow of such a
        line as a question appeared (the router's :data:`~treadle.domain.rules.keys.TYPING_ON`):
        it edits the next prompt's line, shown as it is typed; Enter queues the line to be
        sent once the turn ended, and Up on an empty line takes the last one queued back."""
        editor = self._task_editor
        # Ctrl-D on an empty line typed ahead leaves once the turn has ended, as a
        # shell's typeahead does; a key typed after it takes that back.
        self._leave_ahead = key == Key.CTRL_D and not editor.text and not self.queued
        if key == Key.ENTER:
            if editor.text.strip() and len(self.queued) < MAX_QUEUED:
                self.queued.append(editor.take())
        elif key == Key.UP and not editor.text and self.queued:
            editor.put(self.queued.pop())
        elif key != QUIT:
            editor.press(key)  # no line ends here: Ctrl-D on an empty line does nothing
        self.live.redraw()

    def keep_queued(self) -> None:
        """The turn is stopped (Esc): what was queued is not sent after it but waits on
        the next prompt, with what was being typed, to be edited, sent or dropped."""
        if self.queued:
            editor = self._task_editor
            editor.put("\n".join([*self.queued, *([editor.text] if editor.text else [])]))
            self.queued = []

    def live_rows(self, width: int, height: int) -> tuple[list[str], int | None, int]:
        """The prompt's rows under the terminal's own, at most half the window, and where
        the cursor goes: its column and how many rows above the last (None: no cursor).
        While a question is read, the line typed ahead waits unseen (never lost)."""
        s = self.styles
        rows = [
            s.dim(QUEUED) + fit(_one_row(text), max(1, width - 1 - len(QUEUED)))
            for text in self.queued
        ]
        if self._choice is not None:  # fitted to the width of each draw (a resize)
            shown = fit(self._choice, max(1, width - 2))
            rows.append(s.yellow(shown))
            return rows, cell_width(shown), 0
        if self._line is not None:
            label, label_width, editor = self._line.label, self._line.label_width, self._line.editor
        elif not self._reading and self._task_editor.text:
            label, label_width, editor = s.dim("› "), 2, self._task_editor
        else:
            return rows, None, 0
        most = max(1, (height - 2) // 2)
        texts, row, column = editor.layout(max(4, width - 1 - label_width), most)
        indent = " " * label_width
        rows += [(label if not n else indent) + text for n, text in enumerate(texts)]
        return rows, label_width + column, len(texts) - 1 - row

    def expand_after_answer(self) -> None:
        """The expand key, pressed at a question: it shows the reasoning once answered."""
        self._expand_after_question = True

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        if not self.can_answer:
            return None
        async with self._lock(), self._question(request.agent):
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
                    # Why an allowed prefix did not cover it, or why "always" is missing.
                    *(["  " + s.dim(one_line(request.why, 200))] if request.why else []),
                ]
            )
            view = "[v]iew all · " if folded_away else ""
            choices = (
                f"[y]es · [n]o · {view}[a]lways allow “{one_line(request.prefix, 60)}” › "
                if request.prefix
                else f"[y]es · [n]o · {view}› ".replace(" · ›", " ›")
            )
            row = choices  # fitted and coloured as it is drawn
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
            self.screen.write_lines(wrap_rows([s.dim(f"  → {said}")], self.screen.width))
            self.live.redraw()
            return answer

    async def ask_question(self, question: str) -> str | None:
        if not self.can_answer:
            return None
        async with self._lock(), self._question(self.view.asking_agent()):
            s = self.styles
            asked = s.yellow("? ") + s.bold(one_line(question, 4_000))
            self.screen.write_lines(wrap_rows([asked], self.screen.width))
            self._forget_typed_keys()  # typed for something else: not an answer
            ending, text = await self._read_line(s.yellow("answer › "), LineEditor())
            return text if ending == "submit" else None

    async def read_task(self, prompt: str = "› ") -> str | None:
        """The next task typed at the prompt; None when the person leaves.

        Ctrl-D on an empty line leaves; Ctrl-C clears the line, and on an empty line
        says how to leave (a second one leaves at once: the terminal's router sees to it).
        """
        label = self.styles.bold(self.styles.cyan(prompt))
        if self._leave_ahead:  # Ctrl-D typed ahead, as the turn ended or before
            self._leave_ahead = False
            return None
        if self.queued:  # typed during the turn that just ended: sent now
            text = self.queued.pop(0)
            self.screen.write_lines(wrap_rows([label + printable(text)], self.screen.width))
            self.submitted = text.strip()
            self.live.redraw()
            return text
        ending, text = await self._read_line(label, self._task_editor, clear_on_cancel=True)
        if ending != "submit":
            return None
        self.submitted = text.strip()
        return text

    def stop_prompt(self) -> None:
        """End the prompt being read as if the person left (a signal asked to quit)."""
        if self._line is not None:
            self._press(self._line, QUIT)
        elif self._reading:
            self._keys.put_nowait(QUIT)

    async def _read_choice(
        self, row: str, *, always: bool = True, view: bool = False
    ) -> ApprovalAnswer | Literal["v"] | None:
        """One of y, n (a and v, when offered) at a prompt row (Esc and Ctrl-C never
        come here: they stop the turn, which then cancels this prompt)."""
        self._forget_typed_keys()  # a key typed before the question is no answer to it
        async with self._reading_keys():
            self._choice = row
            while True:
                self.live.redraw()
                key = await self._keys.get()
                if key == QUIT:
                    return None
                if key.lower() in APPROVAL_KEYS and (always or key.lower() != "a"):
                    return APPROVAL_KEYS[key.lower()]
                if view and key.lower() == VIEW_ALL:
                    return VIEW_ALL

    async def _read_reason(self) -> str | None:
        """After a no, the person's words for the model: what to do instead. Enter
        alone and Esc give none (a plain no); Ctrl-C stops the turn as at the choice."""
        wide = self.screen.width >= 60
        label = "tell it what to do instead (Enter: just no) › " if wide else "instead › "
        self._aside = True
        try:
            ending, text = await self._read_line(self.styles.yellow(label), LineEditor())
        finally:
            self._aside = False
        if ending == "eof":  # the prompt was ended (a signal, Ctrl-D): no answer
            return None
        return text.strip() if ending == "submit" else ""

    async def _read_line(
        self, label: str, editor: LineEditor, *, clear_on_cancel: bool = False
    ) -> tuple[Ending, str]:
        """A line typed after ``label`` (in a turn, Esc and Ctrl-C stop it instead).

        Each key is pressed on the editor the moment it is delivered, so that the router
        judges a Ctrl-C against the line as it is (clearing it, or on an empty line);
        keys typed ahead are pressed first. With ``clear_on_cancel``, Ctrl-C clears the
        line and goes on (the task prompt) instead of ending it."""
        line = _Line(label, cell_width(self.term.strip_seqs(label)), editor, clear_on_cancel)
        async with self._reading_keys():
            self._line = line
            while self._line is line and not self._keys.empty():
                self._press(line, self._keys.get_nowait())
            if self._line is line:
                self._show(line)
            ending, text = await line.ended
            if ending == "submit" and not self._aside:  # the answer's line says the words
                self.screen.write_lines(wrap_rows([label + printable(text)], self.screen.width))
            return ending, text

    def _press(self, line: _Line, key: str) -> None:
        if key == QUIT:
            ending: Ending | None = "eof"
        elif key == Key.ESC and self._aside:  # the words of a no are taken back
            ending = "cancel"
        else:
            ending = line.editor.press(key)
        if ending == "cancel" and line.clear_on_cancel:
            cleared = line.editor.text
            line.editor.press(Key.ESC)
            if not cleared:
                self.screen.write_lines([self.styles.dim("(Ctrl-C again or Ctrl-D to leave)")])
            ending = None
        if ending is None:
            self._show(line)
            return
        text = line.editor.take() if ending == "submit" else "" if key == QUIT else line.editor.text
        if ending == "cancel":
            line.editor.press(Key.ESC)
        # Ended now: the keys that follow wait for the next prompt.
        self._line = None
        self._reading = False
        if not line.ended.done():
            line.ended.set_result((ending, text))

    def _show(self, line: _Line) -> None:
        self.live.redraw()

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
        self.live.hold()
        try:
            yield
        finally:
            self._reading = False
            self._line = None
            self._choice = None
            self.live.let_go()
            self.live.redraw()

    @contextlib.asynccontextmanager
    async def _question(self, agent: str = "") -> AsyncIterator[None]:
        """While a question waits for the person, the status line says so, the expand
        key waits for the answer (it never prints between a question and it), and the
        clocks of the calls running the sub-agent ``agent`` stand."""
        self._questions += 1
        if agent:
            self.view.person_asked(agent, self.clock())
        # Shown with the question's own first draw: a status that said so before the
        # question was written would show a screen that is not there yet.
        before, self.view.activity = self.view.activity, "waiting for your answer"
        try:
            yield
        finally:
            self._questions -= 1
            if agent:
                self.view.person_answered(self.clock())
            if not self._questions:
                if self.view.activity == "waiting for your answer":
                    self.view.activity = before
                if self._expand_after_question:
                    self._expand_after_question = False
                    self.live.expand_folded()

    def _lock(self) -> asyncio.Lock:
        # Sub-agents may ask while the main agent asks: one prompt at a time.
        if self._asking is None:
            self._asking = asyncio.Lock()
        return self._asking


def _one_row(text: str) -> str:
    """A queued line on one row: its line breaks shown as ⏎."""
    return printable(text.replace("\n", "⏎"))
