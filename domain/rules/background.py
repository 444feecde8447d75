"""Background processes: how many may run, what a read says, what ends them (issue 27).

A command the model starts with ``background: true`` runs under every rule a command
has (its group, its cgroup, the watchdog, the sandbox, no secrets), but its call returns
at once with an id; ``process_output`` reads what it printed since the last read and
``process_stop`` stops it. These are the decisions about them, as pure functions of
plain values; ``domain/loop/background.py`` drives the processes.

Example::

    >>> over_limit(running=4, limit=4).startswith("at most 4 background processes may run")
    True
    >>> over_limit(running=1, limit=4) is None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from treadle.domain.values.process import BackgroundState, BackgroundView
from treadle.domain.values.tools import ToolLimits

DEFAULT_LIMIT = ToolLimits().background_limit
"""How many background processes may run at once unless ``background_limit`` says."""

ID_PREFIX = "bg"


def process_id(number: int) -> str:
    """The id of the session's ``number``-th background process.

    >>> process_id(3)
    'bg3'
    """
    return f"{ID_PREFIX}{number}"


def over_limit(*, running: int, limit: int) -> str | None:
    """Why one more background process may not start, or None when it may."""
    if running < limit:
        return None
    if limit <= 0:
        return "background processes are turned off here (background_limit = 0)"
    plural = "process may" if limit == 1 else "processes may"
    return (
        f"at most {limit} background {plural} run at once (background_limit); "
        "stop one with process_stop first"
    )


def stopped_at_session_end(views: Sequence[BackgroundView]) -> tuple[str, ...]:
    """What the end of a session stops: every background process still running.

    A stopped turn (Esc, Ctrl-C, a caller's stop) stops none of them: a dev server the
    model started is what the person may want to look at, or the next turn to test
    against. It stays running (``/processes`` lists it) until ``process_stop`` or the
    session's end; a second Ctrl-C, which leaves at once, still kills every command."""
    return tuple(view.id for view in views if view.state is BackgroundState.RUNNING)


def session_end_line(stopped: Sequence[BackgroundView]) -> str:
    """What the session's end says of the background processes it stopped ("": none).

    >>> session_end_line([BackgroundView("bg1", "serve", BackgroundState.STOPPED, 0.0)])
    'stopped 1 background process as the session ended: bg1 (serve)'
    """
    if not stopped:
        return ""
    plural = "process" if len(stopped) == 1 else "processes"
    named = ", ".join(f"{view.id} ({view.command})" for view in stopped)
    return f"stopped {len(stopped)} background {plural} as the session ended: {named}"


def how_it_is(view: BackgroundView, now: float) -> str:
    """Its state in a few words: ``running for 3.2 s``, ``exited with code 0 after 5.0 s``.

    >>> how_it_is(BackgroundView("bg1", "make", BackgroundState.EXITED, 1.0, 6.0, 0), 9.0)
    'exited with code 0 after 5.0 s'
    """
    ended = view.ended if view.ended is not None else now
    took = f"{max(0.0, ended - view.started):.1f} s"
    match view.state:
        case BackgroundState.RUNNING:
            return f"running for {took}"
        case BackgroundState.EXITED if view.exit_code is not None:
            return f"exited with code {view.exit_code} after {took}"
        case BackgroundState.EXITED:
            return f"killed by signal {view.signal} after {took}"
        case BackgroundState.STOPPED:
            return f"stopped after {took}"
        case BackgroundState.NOT_STARTED:
            return f"could not start: {view.detail}" if view.detail else "could not start"
    raise AssertionError(view.state)


def read_text(view: BackgroundView, output: str, omitted: int, now: float) -> str:
    """What the model reads from ``process_output``: the process's state, then what it
    printed since the last read (``output``, head and tail, ``omitted`` bytes left out).

    >>> read_text(BackgroundView("bg1", "serve", BackgroundState.RUNNING, 0.0), "", 0, 2.0)
    'bg1 (serve) is running for 2.0 s.\\nNothing new since the last read.'
    """
    lines = [f"{view.id} ({view.command}) is {how_it_is(view, now)}."]
    if omitted:
        lines.append(f"Output was cut: {omitted} bytes left out.")
    lines.append(
        f"What it printed since the last read:\n{output}"
        if output
        else "Nothing new since the last read."
    )
    return "\n".join(lines)


def started_text(view: BackgroundView) -> str:
    """What the model reads when the call that starts a background process returns."""
    return (
        f"Started in the background as {view.id}: {view.command}\n"
        f"Read what it prints with process_output(id={view.id!r}); stop it with "
        f"process_stop(id={view.id!r}). It keeps running until then, and is stopped "
        "when the session ends."
    )


def unknown_text(process: str, views: Sequence[BackgroundView]) -> str:
    """The tool error for an id that names no background process."""
    known = ", ".join(view.id for view in views) or "none started yet"
    return f"no background process {process!r}; the session's are: {known}"


def listing_lines(views: Sequence[BackgroundView], now: float) -> list[str]:
    """``/processes``: one line per background process of the session, newest last.

    >>> listing_lines([BackgroundView("bg1", "serve", BackgroundState.RUNNING, 0.0)], 3.0)
    ['bg1  running for 3.0 s  serve']
    >>> listing_lines([], 0.0)
    ['no background processes']
    """
    if not views:
        return ["no background processes"]
    return [f"{view.id}  {how_it_is(view, now)}  {view.command}" for view in views]


def status_part(running: int) -> str:
    """The status line's count of running background processes ("" when none).

    >>> status_part(2), status_part(0)
    ('2 background', '')
    """
    return f"{running} background" if running else ""
