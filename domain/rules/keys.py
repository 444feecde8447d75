"""What a key the person presses does, decided in one place for every moment of a session.

The terminal reads a key, says what it is doing (:class:`Mode`) and when the last Ctrl-C
came, and :func:`route` answers with the new memory of the last Ctrl-C and one
:data:`Action`: give the key to the prompt being read, type it ahead on the next prompt's line,
stop the running turn, leave at once, or show the model's reasoning. Nothing else
in treadle judges a key or a second Ctrl-C; a SIGINT is judged as a Ctrl-C during a
turn.

A question that appears while the person is typing ahead (the keys typed during a
turn edit the next prompt's line) is not theirs yet: until :data:`TYPING_ON` after the
last key typed ahead, the keys go on to that line, not to the question (the ``a`` of
"and" would allow a command for the whole session). The terminal says when it last
queued a key (``typed_ahead_at``): the time of the last :class:`Queue` it was given.
And an Enter with another key right behind it is a line break inside a paste, not a
person submitting (:func:`enter_is_pasted`).

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
    >>> route(Mode.QUESTION, "a", None, 12.2, typed_ahead_at=12.0)
    (None, Queue(text='a'))
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
CTRL_D: Final = "<ctrl-d>"

TYPING_ON: Final = 0.5
"""Seconds after a key typed ahead (during a turn) within which the next key is still
part of that line, also when a question or an approval appeared meanwhile: the person
typing has not read it yet."""

PASTE_GAP: Final = 0.03
"""Seconds within which a key right behind an Enter makes it a line break of a paste: the
bytes of a paste are all there at once, however the event loop and the keyboard's thread
take turns, and nobody types that fast after an Enter."""


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
    """Give the key to the next prompt's line, typed ahead while no prompt is read (or
    while a question appeared as the person typed): it shows as it is edited, and Enter
    queues it to be sent when the turn ends. The terminal notes when it queued the key:
    that is the ``typed_ahead_at`` it passes to :func:`route` next."""

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
_ASKED = (Mode.QUESTION, Mode.ASIDE)


def route(
    mode: Mode,
    key: str,
    last_ctrl_c: float | None,
    now: float,
    *,
    typed_ahead_at: float | None = None,
) -> tuple[float | None, Action]:
    """The memory of the last Ctrl-C after ``key`` came at ``now`` in ``mode``, and what
    the key does; ``typed_ahead_at`` is when a key was last typed ahead (queued)."""
    if key == CTRL_C:
        return _ctrl_c(mode, key, last_ctrl_c, now)
    if key == ESC:
        if mode is Mode.ASIDE:  # the line's own: a plain no, the turn goes on
            return last_ctrl_c, _typed(mode, key, now, typed_ahead_at)
        if mode in _STOPPABLE:
            return last_ctrl_c, Stop()
        return last_ctrl_c, Deliver(key) if mode in _PROMPTS else Ignore()
    if key == CTRL_O:  # at any moment, but never inside a question
        return last_ctrl_c, Expand(after_answer=mode in _ASKED)
    return last_ctrl_c, _typed(mode, key, now, typed_ahead_at)


def typing_on(typed_ahead_at: float | None, now: float) -> bool:
    """Whether a key at ``now`` is still part of the line typed ahead at ``typed_ahead_at``.

    Example: ``typing_on(12.0, 12.4)`` is True, ``typing_on(12.0, 12.5)`` False.
    """
    return typed_ahead_at is not None and 0.0 <= now - typed_ahead_at < TYPING_ON


def enter_is_pasted(following: str | None) -> bool:
    """Whether an Enter with ``following`` read right behind it (within
    :data:`PASTE_GAP`; None: no key came) is a line break inside a paste. Esc, Ctrl-C or
    Ctrl-D stop what the person asked for, and must not turn their Enter into a break.

    Example: ``enter_is_pasted("b")`` is True, ``enter_is_pasted(ESC)`` False.
    """
    return following is not None and following not in (ESC, CTRL_C, CTRL_D)


def _typed(mode: Mode, key: str, now: float, typed_ahead_at: float | None) -> Action:
    if mode not in _PROMPTS:
        return Queue(key)
    if mode in _ASKED and typing_on(typed_ahead_at, now):  # not read yet: no answer
        return Queue(key)
    return Deliver(key)


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
