"""What a batch will run: its TASKS read line by line, and what an earlier RESULTS file
says is done already.

Every bad line of TASKS is reported with its number before anything runs; a rerun with
the same RESULTS skips the ids that finished and continues the sessions of turns that
were cut short (paused, lost). Example::

    >>> for problem in parse_tasks(['{"id": "a", "task": "fix it"}', '{"id": "a"}']).failure():
    ...     print(problem)
    line 2: id "a" is already on line 1
    line 2: "task" is missing (only a line with "resume" may leave it out)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from returns.result import Failure, Result, Success

from treadle.domain.values.batch import TURN_FLAGS, BatchTask, Flags, TurnOrder

FIELDS = ("id", "task", "workspace", "model", "resume", *TURN_FLAGS)
OPTIONAL = ("workspace", "model", "resume")
CONTINUED = ("paused", "lost")
"""Outcomes whose session a rerun continues: the turn was cut short from outside."""


def parse_tasks(lines: Iterable[str]) -> Result[tuple[BatchTask, ...], tuple[str, ...]]:
    """The tasks of TASKS (JSON Lines; blank lines are skipped), or every problem found,
    each as ``line N: what is wrong``."""
    tasks, problems = read_task_lines(lines)
    return Failure(problems) if problems else Success(tasks)


def decode_lines(raw: bytes) -> tuple[list[str], list[str]]:
    """TASKS's lines as text, and a problem for each that is not UTF-8 (it stands as a
    blank line, so that the others keep their numbers). Lines end at ``\\n`` (and
    ``\\r``) only: JSON text may hold U+2028, which is no line break here.

    >>> decode_lines(b'{"id": 1}\\n\\xff{"id": 2}\\n')
    (['{"id": 1}', ''], ['line 2: not UTF-8 (byte 0xff at column 1)'])
    """
    lines: list[str] = []
    problems: list[str] = []
    for number, line in enumerate(raw.splitlines(), 1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as error:
            lines.append("")
            byte, column = line[error.start], error.start + 1
            problems.append(f"line {number}: not UTF-8 (byte {byte:#04x} at column {column})")
    return lines, problems


def read_task_lines(lines: Iterable[str]) -> tuple[tuple[BatchTask, ...], tuple[str, ...]]:
    """The tasks of the lines that are well-formed, and every problem of the others
    (``line N: what is wrong``): what only I/O can check is then checked of the good
    lines too, so that one report names every bad line."""
    tasks: list[BatchTask] = []
    problems: list[str] = []
    first_line_of: dict[str, int] = {}
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        identity, found = _one_task(number, text)
        if identity is not None and identity in first_line_of:
            problems.append(
                f"line {number}: id {_shown(identity)} is already on line {first_line_of[identity]}"
            )
        elif identity is not None:
            first_line_of[identity] = number
        if isinstance(found, BatchTask):
            tasks.append(found)
        else:
            problems.extend(f"line {number}: {problem}" for problem in found)
    return tuple(tasks), tuple(problems)


def by_line(problems: Iterable[str]) -> tuple[str, ...]:
    """Problems (``line N: …``) in the order of their lines, each line's in its order."""

    def line_of(problem: str) -> int:
        number = problem.removeprefix("line ").partition(":")[0]
        return int(number) if number.isdigit() else 0

    return tuple(sorted(problems, key=line_of))


def _one_task(number: int, text: str) -> tuple[str | None, BatchTask | list[str]]:
    """The line's id (None when it has no usable one) and its task, or its problems."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return None, [f"not JSON ({error.msg}, column {error.colno})"]
    if not isinstance(data, dict):
        return None, ['a task is a JSON object, e.g. {"id": "fix-1", "task": "fix the test"}']
    problems = [
        f"unknown field {_shown(key)} (the fields: {', '.join(FIELDS)})"
        for key in data
        if key not in FIELDS
    ]
    raw = data.get("id")
    # Ids are often numbers; RESULTS writes them as strings.
    number_id = isinstance(raw, int) and not isinstance(raw, bool)
    identity: str | None = str(raw) if number_id else raw if isinstance(raw, str) else None
    if "id" not in data:
        problems.append('"id" is missing')
    elif identity is None or not identity.strip():
        problems.append(f'"id" must be a non-empty string, not {_shown(raw)}')
        identity = None
    task = data.get("task")
    if task is not None and not isinstance(task, str):
        problems.append(f'"task" must be a string, not {_shown(task)}')
    elif not (task or "").strip() and not data.get("resume"):
        what = "missing" if "task" not in data else "empty"
        problems.append(f'"task" is {what} (only a line with "resume" may leave it out)')
    for key in OPTIONAL:
        value = data.get(key)
        if key in data and (not isinstance(value, str) or not value.strip()):
            problems.append(f"{_shown(key)} must be a non-empty string, not {_shown(value)}")
    flags: list[tuple[str, str]] = []
    for key in TURN_FLAGS:
        value = data.get(key)
        if key not in data:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
            problems.append(f"{_shown(key)} must be a number or a string, not {_shown(value)}")
        else:
            flags.append((key, str(value)))
    if problems or identity is None:
        return identity, problems
    task_found = BatchTask(
        id=identity,
        task=task or "",
        line=number,
        workspace=data.get("workspace", ""),
        model=data.get("model", ""),
        resume=data.get("resume", ""),
        flags=tuple(flags),
    )
    return identity, task_found


def _shown(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


# RESULTS -------------------------------------------------------------------------------


def latest_results(lines: Iterable[str]) -> dict[str, Mapping[str, object]]:
    """The last result of each id in a RESULTS file's lines. A line that is not a result
    (torn by a kill mid-write, or edited by hand) is passed over: its task runs again."""
    latest: dict[str, Mapping[str, object]] = {}
    for text in lines:
        try:
            row = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("id"), str):
            latest[row["id"]] = row
    return latest


# The plan --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnDefaults:
    """What every turn gets unless its line says otherwise: the batch's folder and flags,
    and the ``TREADLE_*`` settings it passes on."""

    workspace: str
    model: str = ""
    base_url: str = ""
    approval: str = ""
    sandbox: str = ""
    environment: tuple[tuple[str, str], ...] = ()
    flags: Flags = ()


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """The turns to run, in TASKS order, and the ids skipped as finished before."""

    orders: tuple[TurnOrder, ...]
    skipped: tuple[str, ...] = ()


def plan_batch(
    tasks: Iterable[BatchTask],
    previous: Mapping[str, Mapping[str, object]],
    defaults: TurnDefaults,
    *,
    redo: bool = False,
    new_session: Callable[[BatchTask], str],
    transcript_of: Callable[[str], str] = lambda session: "",
) -> BatchPlan:
    """The turns for ``tasks``, given the ``previous`` results (by id).

    A task that finished before is skipped (unless ``redo``); one that was paused or
    lost continues its session (no new message: it goes on where it stopped); one that
    was not started, or ended otherwise (failed, blocked, waiting), runs as its line
    says. ``new_session`` names the session of a turn that starts a new one.

    >>> defaults = TurnDefaults(workspace="/w")
    >>> before = {"a": {"outcome": "finished"}, "b": {"outcome": "paused", "session": "s-b"}}
    >>> plan = plan_batch([BatchTask("a", "x"), BatchTask("b", "y")], before, defaults,
    ...                   new_session=lambda task: "new")
    >>> plan.skipped, [(o.id, o.session, o.resuming, o.task) for o in plan.orders]
    (('a',), [('b', 's-b', True, '')])
    """
    orders: list[TurnOrder] = []
    skipped: list[str] = []
    for task in tasks:
        before = {} if redo else previous.get(task.id, {})
        if before.get("outcome") == "finished":
            skipped.append(task.id)
            continue
        session = before.get("session")
        cut_short = before.get("outcome") in CONTINUED
        waiting_to_go_on = before.get("outcome") == "not started" and session != task.resume
        if isinstance(session, str) and session and (cut_short or waiting_to_go_on):
            orders.append(_order(task, defaults, session, "", True, transcript_of))
        elif task.resume:
            orders.append(_order(task, defaults, task.resume, task.task, True, transcript_of))
        else:
            session = new_session(task)
            orders.append(_order(task, defaults, session, task.task, False, transcript_of))
    return BatchPlan(tuple(orders), tuple(skipped))


def _order(
    task: BatchTask,
    defaults: TurnDefaults,
    session: str,
    message: str,
    resuming: bool,
    transcript_of: Callable[[str], str],
) -> TurnOrder:
    return TurnOrder(
        id=task.id,
        task=message,
        session=session,
        workspace=task.workspace or defaults.workspace,
        resuming=resuming,
        model=task.model or defaults.model,
        base_url=defaults.base_url,
        approval=defaults.approval,
        sandbox=defaults.sandbox,
        environment=defaults.environment,
        flags=merged_flags(defaults.flags, task.flags),
        transcript=transcript_of(session),
    )


def merged_flags(batch: Flags, own: Flags) -> Flags:
    """The batch's settings with a task's own over them, in :data:`TURN_FLAGS` order.

    >>> merged_flags((("max_cost", "1"), ("max_time", "10m")), (("max_cost", "0.2"),))
    (('max_cost', '0.2'), ('max_time', '10m'))
    """
    given = dict(batch) | dict(own)
    return tuple((key, given[key]) for key in TURN_FLAGS if key in given)


def shared_workspaces(orders: Iterable[TurnOrder]) -> dict[str, int]:
    """Folders that more than one turn works in, with how many: their turns may run at
    the same time and see (and overwrite) each other's edits. A turn in a worktree of
    its own (``--worktree``) shares none.

    >>> shared_workspaces([TurnOrder("a", "", "s", "/w"), TurnOrder("b", "", "t", "/w")])
    {'/w': 2}
    >>> apart = [TurnOrder(i, "", i, "/w", worktree=i) for i in "ab"]
    >>> shared_workspaces(apart)
    {}
    """
    counts: dict[str, int] = {}
    for order in orders:
        if order.worktree:
            continue
        counts[order.workspace] = counts.get(order.workspace, 0) + 1
    return {folder: n for folder, n in counts.items() if n > 1}
