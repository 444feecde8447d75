"""The Terminal port on a real terminal, with blessed: the full display and the keys.

Example::

    terminal = BlessedTerminal()          # stdout and stdin must be a terminal
    agent = Agent(TurnPorts(model, clock, runner, terminal))
    outcome = await agent.run_turn("fix the failing test")

While a turn runs, the keyboard is read and the live rows are redrawn on a short
tick; both end with the turn, leaving the terminal as it was. Every key is routed by
:func:`treadle.domain.rules.keys.route` (Esc or Ctrl-C stops the turn, a second
Ctrl-C leaves at once, a key typed during the turn edits the next prompt's line, shown
and queued with Enter, see :mod:`.prompts`) and
the answer carried out here; the prompts (:mod:`.prompts`) only read what is
delivered to them. The model's reasoning streams dimmed in a live row and stays in
the log as one line; Ctrl-O shows it in full (``verbose`` shows it in full at once), and
the last commands' output that their previews folded, as the model read it. An
interactive session reads its next task with :meth:`BlessedTerminal.read_task`.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Any, assert_never

from treadle.adapters.blessed_terminal.display import Styles, TurnView, diff_lines, resumed_lines
from treadle.adapters.blessed_terminal.keyboard import Keyboard
from treadle.adapters.blessed_terminal.markdown import AnswerRenderer, MarkdownStyles
from treadle.adapters.blessed_terminal.prompts import Prompts
from treadle.adapters.blessed_terminal.screen import (
    HIDE_CURSOR,
    SHOW_CURSOR,
    Screen,
)
from treadle.adapters.leave_now import LeaveNow
from treadle.adapters.terminal.log_wrap import wrap_rows
from treadle.domain.rules import keys
from treadle.domain.rules.interrupts import CtrlC
from treadle.domain.rules.keys import Mode, route
from treadle.domain.rules.resumed_view import ResumedView
from treadle.domain.values.events import (
    AnswerDelta,
    CompactionStarted,
    ContextCompacted,
    ReasoningDelta,
    ResponseReceived,
    ToolOutput,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from treadle.domain.values.model import CUT_STOPS
from treadle.domain.values.text import CONTROL_CHARACTERS, printable
from treadle.domain.values.tools import ApprovalAnswer, ApprovalRequest

# The live rows are redrawn this often while a turn runs (the elapsed times move).
TICK = 0.1
# After answer text pushed the live rows away, they come back at once only if they
# were last drawn this long ago; the tick brings them back otherwise. Redrawing
# after every piece of a fast stream would cost more than the stream itself.
REDRAW_AFTER_TEXT = 0.05
_remove_controls = CONTROL_CHARACTERS.sub  # printable(), minus a call per answer piece


def quiet_blessed_terminal() -> Any:
    """blessed's Terminal on stdout, without the queries it sends at start-up.

    blessed asks the terminal for its capabilities and its name and waits up to five
    seconds for each answer; a terminal (or a test's pseudo-terminal) that does not
    answer would hold treadle's start for ten seconds and show the queries as text.
    The capabilities come from the terminfo entry that ``TERM`` names instead.
    """
    from blessed import Terminal
    from blessed._capabilities import TermcapResponse

    class QuietTerminal(Terminal):
        def detect_term_program(self, timeout: float = 0.0, force: bool = False) -> bool:
            self.term_program = True
            self._term_program_probed = True
            return True

    return QuietTerminal(_xtgettcap_data=TermcapResponse(supported=False))


def can_move_cursor() -> bool:
    """Whether the terminal understands cursor controls (not ``TERM=dumb``)."""
    return os.environ.get("TERM", "dumb") not in ("", "dumb", "unknown")


class BlessedTerminal:
    """The full display on a terminal, and the person's keys and answers.

    ``term`` is a blessed Terminal (default: stdout, without start-up queries).
    ``input_fd`` is the keyboard (default: stdin when it is a terminal); without one,
    nobody can answer and Esc cannot be read. ``now`` is the display's clock (real
    time: it only moves the elapsed times on the screen). ``leave_now`` is what a second
    Ctrl-C does once the terminal is put back: kill every running command, record the
    turn, exit 130 (the one :class:`~treadle.adapters.leave_now.LeaveNow`, unless
    a test gives its own). ``ctrl_c`` is the memory of the last Ctrl-C, shared with
    the signals of the same process.
    """

    def __init__(
        self,
        term: Any = None,
        *,
        resume_hint: str = "",
        input_fd: int | None = -1,
        now: Callable[[], float] = time.monotonic,
        live: bool | None = None,
        leave_now: Callable[[], None] | None = None,
        verbose: bool = False,
        ctrl_c: CtrlC | None = None,
    ) -> None:
        self.term = term if term is not None else quiet_blessed_terminal()
        if input_fd == -1:
            input_fd = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
        self.resume_hint = resume_hint
        self.verbose = verbose
        self.styles = Styles.of(self.term)
        self._out = self.term.stream
        self.screen = Screen(
            self._out,
            lambda: _window_size(self.term)[0],
            lambda: _window_size(self.term)[1],
            live=can_move_cursor() if live is None else live,
        )
        self.view = TurnView(self.styles)
        self.answer = AnswerRenderer(MarkdownStyles.of(self.term), lambda: self.screen.width)
        self.prompts = Prompts(self.term, self.screen, self.styles, self.view, self)
        self.prompts.can_answer = input_fd is not None
        self.prompts.clock = now
        self.keyboard = (
            Keyboard(self.term, input_fd, self.press, self.leave_now)
            if input_fd is not None
            else None
        )
        self._now = now
        self._leave_now_after = leave_now if leave_now is not None else LeaveNow()
        self.ctrl_c = ctrl_c if ctrl_c is not None else CtrlC()
        self._typed_ahead_at: float | None = None  # when route last said Queue
        self._interrupt: Callable[[], None] | None = None
        self._held_notes: list[str] = []
        self._drew_pending = False  # the live block shows an unfinished line of the answer
        self._continuing = False  # an answer was cut and is being continued
        self._compacting = False  # the responses now are a compaction's summary
        self._in_turn = False
        self._holds = 0
        self._ticker: asyncio.Task[None] | None = None
        self._last_draw = 0.0
        # The window's size and the view's live rows as last worked out, and when.
        self._worked_out: tuple[int, int, list[str]] = (0, 0, [])
        self._worked_out_at = -1.0
        self._worked_out_for = ""  # the activity they said
        self._cursor_hidden = False  # a turn hides it (the prompt's rows show it again)
        self._cursor_shown = False  # shown in a turn, for the prompt's rows
        self._restore_registered = False

    # The Terminal port -------------------------------------------------------------

    def show(self, event: TurnEvent) -> None:
        """The answer's pieces are the hot path (thousands of small ones), taken before
        the table; every other event first ends the reasoning shown (but reasoning
        itself), then goes to its kind's function in :func:`shown_on`."""
        if type(event) is AnswerDelta:
            self._answer_piece(event)
            return
        now = self._now()
        if type(event) is not ReasoningDelta and self.view.thinking and not event.agent:
            self._end_reasoning()
        shown_on(event, self, now)

    def _answer_piece(self, event: AnswerDelta) -> None:
        if not event.text or event.agent:
            return
        ended_reasoning = bool(self.view.thinking)
        if ended_reasoning:
            self._end_reasoning()
        self.view.activity = "writing the answer"
        rows = self.answer.feed(event.text)
        if rows:
            self.screen.write_lines(rows)
        now = self._now()
        # A new line shows at once; a line growing, at most every 50 ms. The status rows
        # drawn under a new line are those of the last 50 ms: they say the same (the
        # times move by tenths), and working them out again for each line of a fast
        # stream cost more than the line itself.
        fresh = rows or ended_reasoning or not self._drew_pending
        if fresh or now - self._last_draw >= REDRAW_AFTER_TEXT:
            self._draw(now, reuse=not ended_reasoning)
            self.screen.flush()

    def _write_log(self, lines: list[str], now: float) -> None:
        """Lines into the log, then the live rows under them."""
        self.screen.write_lines(lines)
        self._draw(now)
        self.screen.flush()

    def _redraw_soon(self, now: float) -> None:
        """The live rows again, unless they were drawn less than 50 ms ago."""
        if now - self._last_draw >= REDRAW_AFTER_TEXT:
            self._draw(now)
            self.screen.flush()

    def bind_interrupt(self, interrupt: Callable[[], None]) -> None:
        self._interrupt = interrupt
        self._begin_turn()

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        return await self.prompts.ask_approval(request)

    async def ask_question(self, question: str) -> str | None:
        return await self.prompts.ask_question(question)

    # The prompts' terminal (their Live) --------------------------------------------

    def redraw(self) -> None:
        self._draw(self._now())
        self.screen.flush()

    # Reasoning ---------------------------------------------------------------------

    def _end_reasoning(self) -> None:
        """The reasoning ended: its line goes in the log, or waits for the end of the
        answer's row when it came in the middle of one (a continued answer)."""
        self.screen.write_lines(self.view.thought_lines(verbose=self.verbose))

    def expand_folded(self) -> None:
        """The expand key: the reasoning shown as one line so far, and the last results
        shown as a preview, in full (see :meth:`TurnView.expanded_lines`)."""
        lines = self.view.expanded_lines()
        if lines:
            self.screen.write_lines(lines)
            self._draw(self._now())
            self.screen.flush()

    # The session around the turns -------------------------------------------------

    def note(self, lines: list[str]) -> None:
        """Dim lines of the session's own (a greeting, a hint)."""
        dim = self.styles.dim
        self.screen.write_lines(
            wrap_rows([dim(printable(line)) for line in lines], self.screen.width)
        )
        self._draw(self._now())
        self.screen.flush()

    def report(self, lines: list[str], *, problem: bool = False) -> None:
        """Lines the session says between turns (what an undo did); a problem in red."""
        style = self.styles.red if problem else (lambda line: line)
        rows = [style(printable(line)) for line in lines]
        self.screen.write_lines(wrap_rows(rows, self.screen.width))
        self._draw(self._now())
        self.screen.flush()

    def show_diff(self, title: str, diff: str) -> None:
        """A diff between turns (``/diff``), coloured, under a bold ``title``."""
        rows = diff_lines(diff, self.styles)
        rows = wrap_rows([self.styles.bold(printable(title)), *rows], self.screen.width)
        self.screen.write_lines(rows)
        self._draw(self._now())
        self.screen.flush()

    @property
    def can_answer(self) -> bool:
        """Whether a person can answer (there is a keyboard)."""
        return self.prompts.can_answer

    @can_answer.setter
    def can_answer(self, can: bool) -> None:
        self.prompts.can_answer = can

    async def read_task(self, prompt: str = "› ") -> str | None:
        """The next task typed at the prompt; None when the person leaves."""
        return await self.prompts.read_task(prompt)

    def stop_prompt(self) -> None:
        """End the prompt being read as if the person left (a signal asked to quit)."""
        self.prompts.stop_prompt()

    def show_resumed(self, session_id: str, view: ResumedView) -> None:
        """A resumed session's opening: its id, its task and its last exchanges."""
        self.screen.write_lines(resumed_lines(session_id, view, self.styles, self.screen.width))
        self.redraw()

    def open_session(self) -> None:
        """Keep reading keys between turns too, until :meth:`close` (an interactive session).

        Without it the keyboard is read during a turn or a prompt only, and the
        terminal is in its own mode in between, echoing what is typed.
        """
        self.hold()

    def close(self) -> None:
        """Stop reading keys and drawing, and leave the terminal as it was found."""
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self._holds = 0
        if self.keyboard is not None:
            self.keyboard.release_all()
        self.screen.hide_live()
        self.screen.end_row()
        if self._cursor_hidden:
            self.screen.write_raw(SHOW_CURSOR)
            self._cursor_hidden = False
        self.screen.flush()

    # Keys ------------------------------------------------------------------------------

    def press(self, key: str) -> None:
        """A key the person pressed (on the event loop, from the keyboard): routed."""
        now = self._now()
        self.ctrl_c.last, action = route(
            self._mode(), key, self.ctrl_c.last, now, typed_ahead_at=self._typed_ahead_at
        )
        match action:
            case keys.Deliver(key):
                self.prompts.deliver(key)
            case keys.Queue(text):
                self._typed_ahead_at = now
                self.prompts.queue(text)
            case keys.Stop():
                self._stop()
            case keys.LeaveNow():
                self.leave_now()
            case keys.Expand(after_answer=True):
                self.prompts.expand_after_answer()
            case keys.Expand():
                self.expand_folded()
            case keys.Ignore():
                pass
            case _:
                assert_never(action)

    def _mode(self) -> Mode:
        reading = self.prompts.reading
        if reading == "answer":
            return Mode.QUESTION
        if reading == "aside":
            return Mode.ASIDE
        if reading == "task":
            return Mode.PROMPT if self.prompts.typed else Mode.EMPTY_PROMPT
        return Mode.TURN if self._interrupt is not None else Mode.BETWEEN

    def _stop(self) -> None:
        if self._interrupt is None:  # a question outside a turn: nothing to stop
            return
        self.view.stopping()
        self.prompts.keep_queued()
        self._interrupt()
        self.redraw()

    def leave_now(self) -> None:
        """Put the terminal back, then leave at once (which kills the running commands).
        Should the leaving return (a test's), the prompt being read ends."""
        self.restore()
        self._leave_now_after()
        self.prompts.stop_prompt()

    def restore(self) -> None:
        """Put the terminal's mode and cursor back; safe at exit and from the key thread."""
        if self.keyboard is not None:
            self.keyboard.restore_mode()
        if self._cursor_hidden:
            self._cursor_hidden = False
            try:
                os.write(self._out.fileno(), (SHOW_CURSOR + "\r\n").encode())
            except (AttributeError, OSError, ValueError):
                with contextlib.suppress(Exception):
                    self._out.write(SHOW_CURSOR + "\n")
                    self._out.flush()

    # The turn's lifetime ---------------------------------------------------------------

    def _begin_turn(self) -> None:
        if self._in_turn:
            return
        self._in_turn = True
        self.view.begin(self._now())
        if self.screen.live:
            self.screen.write_raw(HIDE_CURSOR)
            self._cursor_hidden = True
            self._cursor_shown = False
        self.hold()
        self.screen.flush()

    def _end_turn(self, event: TurnEnded) -> None:
        self._in_turn = False
        self._continuing = self._compacting = False
        self._interrupt = None
        self.screen.end_row()
        answer = self.answer.finish()  # what an interrupt left of the answer stays
        self.screen.write_lines(
            answer
            + self._held_notes
            + wrap_rows(self.view.ending_lines(event, self.resume_hint), self.screen.width)
        )
        self._held_notes = []
        self.screen.hide_live()
        if self._cursor_hidden:
            self.screen.write_raw(SHOW_CURSOR)
            self._cursor_hidden = False
        self.screen.flush()  # before the keyboard thread is joined: the outcome shows now
        self.let_go()

    def hold(self) -> None:
        """Start reading keys and ticking (nested: a prompt inside a turn)."""
        self._holds += 1
        if self._holds > 1:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # shown outside a loop (a test): no keys, no tick
            return
        if not self._restore_registered:
            atexit.register(self.restore)
            self._restore_registered = True
        if self.keyboard is not None:
            self.keyboard.hold()
        if self.screen.live:
            self._ticker = loop.create_task(self._tick())

    def let_go(self) -> None:
        if self._holds == 0:
            return
        self._holds -= 1
        if self._holds:
            return
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self.keyboard is not None:
            self.keyboard.let_go()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK)
            self._draw(self._now())
            self.screen.flush()

    def _draw(self, now: float, *, reuse: bool = False) -> None:
        """Draw the live block; with ``reuse``, the window's size and the view's rows
        are those worked out less than 50 ms ago, if they were (answer text only)."""
        if (
            reuse
            and self._in_turn
            and 0 <= now - self._worked_out_at < REDRAW_AFTER_TEXT
            and self.view.activity == self._worked_out_for
        ):
            width, height, view_rows = self._worked_out
        else:
            # The window's size is asked for once a draw (each ask is a system call).
            width, height = self.screen.width, max(1, int(self.term.height))
            view_rows = self.view.live_rows(now, width, height) if self._in_turn else []
            self._worked_out, self._worked_out_at = (width, height, view_rows), now
            self._worked_out_for = self.view.activity
        rows = list(view_rows)
        pending = self.answer.pending() if self._in_turn else ""
        prompt, cursor, cursor_up = self.prompts.live_rows(width, height)
        if pending:  # as it will be committed, as much as half the window shows
            room = min(height // 2, height - len(rows) - len(prompt) - 2)
            rows[:0] = self.answer.pending_rows(width, room)
        self._drew_pending = bool(pending)
        rows += prompt
        self.screen.draw_live(rows, cursor, size=(width, height), cursor_up=cursor_up)
        if self._cursor_hidden and (cursor is not None) != self._cursor_shown:
            self._cursor_shown = cursor is not None
            self.screen.write_raw(SHOW_CURSOR if self._cursor_shown else HIDE_CURSOR)
        self._last_draw = now


# Events ----------------------------------------------------------------------------


@functools.singledispatch
def shown_on(event: TurnEvent, terminal: BlessedTerminal, now: float) -> None:
    """``event`` on ``terminal``'s screen: by default :func:`_logged`; the kinds
    registered below do more, or something else."""
    _logged(event, terminal, now)


def _logged(event: TurnEvent, terminal: BlessedTerminal, now: float) -> None:
    """The lines the view gives ``event`` (:meth:`TurnView.lines_for`) go in the log."""
    terminal.view.width = terminal.screen.width
    terminal._write_log(_wrapped(terminal, terminal.view.lines_for(event, now)), now)


def _wrapped(terminal: BlessedTerminal, lines: list[str]) -> list[str]:
    """The view's lines broken between words to the screen's width (rows that fit
    as they are)."""
    return wrap_rows(lines, terminal.view.width)


@shown_on.register(ReasoningDelta)
def _reasoning(event: ReasoningDelta, terminal: BlessedTerminal, now: float) -> None:
    if event.text and not event.agent:
        terminal.view.think(event.text)
        terminal._redraw_soon(now)


@shown_on.register(TurnEnded)
def _turn_ended(event: TurnEnded, terminal: BlessedTerminal, now: float) -> None:
    if event.agent:
        _logged(event, terminal, now)
    else:
        terminal._end_turn(event)


@shown_on.register(TurnStarted)
def _turn_started(event: TurnStarted, terminal: BlessedTerminal, now: float) -> None:
    if not event.agent:
        terminal._begin_turn()
        if event.task == terminal.prompts.submitted:  # the prompt line already shows it
            terminal.prompts.submitted = ""
            terminal._draw(now)
            terminal.screen.flush()
            return
    _logged(event, terminal, now)


@shown_on.register(ToolOutput)
def _tool_output(event: ToolOutput, terminal: BlessedTerminal, now: float) -> None:
    terminal.view.lines_for(event, now)  # a running command's last lines: a live row
    terminal._redraw_soon(now)


@shown_on.register(CompactionStarted)
@shown_on.register(ContextCompacted)
def _compaction(
    event: CompactionStarted | ContextCompacted, terminal: BlessedTerminal, now: float
) -> None:
    terminal.view.width = terminal.screen.width
    lines = _wrapped(terminal, terminal.view.lines_for(event, now))
    if not event.agent:  # the responses until it ends are its summary's
        terminal._compacting = isinstance(event, CompactionStarted)
    terminal._write_log(lines, now)


@shown_on.register(ResponseReceived)
def _response(event: ResponseReceived, terminal: BlessedTerminal, now: float) -> None:
    terminal.view.width = terminal.screen.width
    lines = _wrapped(terminal, terminal.view.lines_for(event, now))
    if not event.agent and not terminal._compacting:
        terminal._continuing = event.stop_reason in CUT_STOPS
        if terminal._continuing:  # the answer goes on: its unfinished line stays live
            terminal._draw(now)
            terminal.screen.flush()
            return
        lines = terminal.answer.finish() + terminal._held_notes + lines
        terminal._held_notes = []
    terminal._write_log(lines, now)


def _window_size(term: Any) -> tuple[int, int]:
    """The window's (columns, rows): one ``ioctl`` on the terminal's descriptor, as
    blessed's ``width``/``height`` would (asked per streamed line, its own lookup cost
    as much as rendering the line); blessed's answer where it has no descriptor or
    holds a size from an in-band resize report."""
    fd = getattr(term, "_init_descriptor", None)
    if fd is not None and getattr(term, "_preferred_size_cache", None) is None:
        try:
            size = os.get_terminal_size(fd)
        except (OSError, ValueError, TypeError):
            pass
        else:
            return size.columns, size.lines
    return int(term.width), int(term.height)
