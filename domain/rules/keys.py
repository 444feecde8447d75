"""What a key the person presses does, decided in one place for every moment of a session.

The terminal reads a key, says what it is doing (:class:`Mode`) and when the last Ctrl-C
came, and :func:`route` answers with the new memory of the last Ctrl-C and one
:data:`Action`: give the key to the prompt being read, type it ahead on the next prompt's line,
stop the running turn, leave at once, or show the model's reasoning. Nothing else
in treadle judges a key or a second Ctrl-C; a SIGINT is judged as a Ctrl-C during a
turn.

The second-Ctrl-C rule (:mod:`~treadle.domain.rules.interrupts`) holds wherever the
Ctrl-C lands, with one exception: a Ctrl-C that clears a typed line does only that,
and is forgotten.

Example::

    >>> route(Mode.TURN, CTRL_C, None, 10.0)
    (10.0, Stop())
    >>> route(Mode.TURN, CTRL_C, 10.0, 11.0)
    (None, LeaveNow())
    >>> route(Mode.TURN, "x", None, 12.0)
    (None, Queue(text='x'))
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

from treadle.domain.rules.interrupts import is_second_interrupt

# The names of the keys the router judges; every other key is passed on as it is (a
# typed character is itself). The terminal's line editor spells its keys the same way.
ESC: Final = "<esc>"
CTRL_C: Final = "<ctrl-c>"
CTRL_O: Final = "<ctrl-o>"


class Mode(Enum):
    """What the terminal is doing when a key comes."""

    EMPTY_PROMPT = "the task prompt is read, and nothing is typed on it"
    PROMPT = "the task prompt is read, with a line typed on it"
    TURN = "a turn runs, and no prompt is read"
    QUESTION = "a question or an approval waits for its answer (in a turn)"
    ASIDE = "the words of a no are typed, inside an approval (Esc takes them back)"
    BETWEEN = "no turn runs and no prompt is read (a command such as /diff runs)"


@dataclass(frozen=True, slots=True)
class Deliver:
    """Give the key to the prompt being read (its line editor, or the approval's keys)."""

    key: str


@dataclass(frozen=True, slots=True)
class Queue:
    """Give the key to the next prompt's line, typed ahead while no prompt is read: it
    shows as it is edited, and Enter queues it to be sent when the turn ends."""

    text: str


@dataclass(frozen=True, slots=True)
class Stop:
    """Stop the running turn: it ends paused (asked again while it stops, nothing more)."""


@dataclass(frozen=True, slots=True)
class LeaveNow:
    """Leave at once: kill every running command, record the turn as paused, exit 130."""


@dataclass(frozen=True, slots=True)
class Expand:
    """Show the model's reasoning in full; once the question is answered when
    ``after_answer`` (nothing prints between a question and its answer)."""

    after_answer: bool = False


@dataclass(frozen=True, slots=True)
class Ignore:
    """Nothing to do (Esc or a first Ctrl-C with no turn to stop and no prompt)."""


Action = Deliver | Queue | Stop | LeaveNow | Expand | Ignore

_PROMPTS = (Mode.EMPTY_PROMPT, Mode.PROMPT, Mode.QUESTION, Mode.ASIDE)
_STOPPABLE = (Mode.TURN, Mode.QUESTION, Mode.ASIDE)


def route(
    mode: Mode, key: str, last_ctrl_c: float | None, now: float
) -> tuple[float | None, Action]:
    """The memory of the last Ctrl-C after ``key`` came at ``now`` in ``mode``, and what
    the key does."""
    if key == CTRL_C:
        return _ctrl_c(mode, key, last_ctrl_c, now)
    if key == ESC:
        if mode is Mode.ASIDE:  # the line's own: a plain no, the turn goes on
            return last_ctrl_c, Deliver(key)
        if mode in _STOPPABLE:
            return last_ctrl_c, Stop()
        return last_ctrl_c, Deliver(key) if mode in _PROMPTS else Ignore()
    if key == CTRL_O:  # at any moment, but never inside a question
        return last_ctrl_c, Expand(after_answer=mode in (Mode.QUESTION, Mode.ASIDE))
    return last_ctrl_c, Deliver(key) if mode in _PROMPTS else Queue(key)


def _ctrl_c(
    mode: Mode, key: str, last_ctrl_c: float | None, now: float
) -> tuple[float | None, Action]:
    if mode is Mode.PROMPT:  # it clears the typed line: that is its whole job
        return None, Deliver(key)
    if is_second_interrupt(last_ctrl_c, now):
        return None, LeaveNow()
    if mode in _STOPPABLE:
        return now, Stop()
    return now, Deliver(key) if mode is Mode.EMPTY_PROMPT else Ignore()
