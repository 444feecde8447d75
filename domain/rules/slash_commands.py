"""What a line typed at the interactive prompt asks for: a task, or one of the session's
slash commands — or a word that looks like a command and is none, said so and never
sent to the model.

A line is a command when it starts with ``/`` and its first word holds no other ``/``:
``/usr/bin/env is missing`` is a task about a path, ``/hlep`` an unknown command. A
line that starts with a space is always a task.

>>> read_line("/diff", {"/diff"})
Run(name='/diff', arguments='')
>>> read_line("/review src/app.py", {"/review"})
Run(name='/review', arguments='src/app.py')
>>> read_line("/dif", {"/diff"})
Unknown(word='/dif', near='/diff')
>>> read_line("/usr/bin/env is missing", {"/diff"})
Task(text='/usr/bin/env is missing')
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    """A command of the session, as ``/help`` lists it."""

    name: str
    summary: str


BUILT_IN: tuple[SlashCommand, ...] = (
    SlashCommand("/help", "list these commands"),
    SlashCommand("/diff", "show what the last turn changed"),
    SlashCommand("/undo", "take the last turn's changes back"),
    SlashCommand("/redo", "bring back what /undo took"),
    SlashCommand("/skills", "list the skills offered to the model, with their paths"),
    SlashCommand("/processes", "list the background processes the model started"),
    SlashCommand("/fork", "copy this session so far into a new one, to resume apart"),
    SlashCommand("/exit", "leave the session (also /quit or Ctrl-D)"),
)
LEAVE = frozenset({"/exit", "/quit"})


@dataclass(frozen=True)
class Task:
    """A line for the model."""

    text: str


@dataclass(frozen=True)
class Run:
    """A command of the session, by its name, and what follows the name."""

    name: str
    arguments: str = ""


@dataclass(frozen=True)
class Unknown:
    """A ``/word`` that names no command; ``near`` is the command it was likely meant as."""

    word: str
    near: str | None


def read_line(line: str, known: Collection[str]) -> Task | Run | Unknown | None:
    """What ``line`` asks for, given the names of the commands ``known``; None for a
    line with nothing on it."""
    text = line.strip()
    if not text:
        return None
    word = text.split()[0]
    if not line.startswith("/") or "/" in word[1:]:
        return Task(text)
    if word in known or word in LEAVE:
        return Run(word, text[len(word) :].strip())
    near = difflib.get_close_matches(word, sorted({*known, *LEAVE}), n=1, cutoff=0.6)
    return Unknown(word, near[0] if near else None)


def help_lines(commands: Collection[SlashCommand]) -> list[str]:
    """``/help``'s answer: each command with what it does, aligned."""
    width = max((len(c.name) for c in commands), default=0)
    lines = [f"{c.name.ljust(width)}  {c.summary}" for c in commands]
    return [*lines, "A line that starts with a space is sent as a task, / and all."]


def unknown_line(unknown: Unknown) -> str:
    """What the session says to a ``/word`` it does not know."""
    meant = f" — did you mean {unknown.near}?" if unknown.near else ""
    return f"unknown command {unknown.word}{meant} (/help lists them; nothing was sent)"
