"""``treadle batch TASKS.jsonl``: many headless turns at once, here or on a Ray cluster.

Everything is checked before anything runs: the flags and the configuration, every
line of TASKS (each problem with its line number), the folders and sessions the lines
name, the RESULTS file. Then the container builds the engine, RESULTS and the screen,
and :class:`~treadle.domain.loop.batch.BatchRun` runs the plan. Exit codes: 0 when every
turn finished, 1 otherwise, 130 when stopped (Ctrl-C, SIGTERM), 2 for bad input or an
engine that could not start (nothing ran then).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from returns.result import Failure, Success

from treadle.domain.loop.batch import BatchPorts, BatchRun
from treadle.domain.rules.batch import start_batch
from treadle.domain.rules.batch_plan import (
    BatchPlan,
    TurnDefaults,
    by_line,
    decode_lines,
    latest_results,
    plan_batch,
    read_task_lines,
    shared_workspaces,
)
from treadle.domain.rules.interrupts import CtrlC
from treadle.domain.rules.keys import CTRL_C, LeaveNow, Mode, route
from treadle.domain.rules.network import NETWORK_MODES
from treadle.domain.rules.worktree import name_for
from treadle.domain.values.batch import TURN_FLAGS, BatchTask, Flags, TurnOrder
from treadle.entrypoints.batch_wiring import ENGINES, BatchOptions
from treadle.entrypoints.config import ConfigError, check_value, load_config
from treadle.entrypoints.interrupts import LEAVE_CODE, STOP_SIGNALS

if TYPE_CHECKING:
    from treadle.adapters.batch.results_file import ResultsLock
    from treadle.entrypoints.container import Container

USAGE_ERROR = 2
MOST_PROBLEMS_SHOWN = 20


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="treadle batch",
        description="Run many headless turns at once: one treadle --json process per "
        "line of TASKS, on this machine or on a Ray cluster; one line of RESULTS per task.",
    )
    parser.add_argument("tasks", metavar="TASKS", help='JSON Lines: {"id": …, "task": …}')
    parser.add_argument(
        "--workers", type=_whole, default=2, help="turns at once (default: 2)", metavar="N"
    )
    parser.add_argument("--engine", choices=ENGINES, help="local (default) or ray")
    parser.add_argument("--address", help="an existing Ray cluster, e.g. 10.0.0.5:6379")
    parser.add_argument(
        "--out", metavar="RESULTS", help="the results file (default: TASKS.results.jsonl)"
    )
    parser.add_argument("--redo", action="store_true", help="run finished ids again too")
    parser.add_argument("--model", help="every turn's model, unless its line names one")
    parser.add_argument("--base-url", help="the model server of every turn")
    parser.add_argument("--approval", choices=["ask", "auto", "read-only"])
    parser.add_argument("--sandbox", choices=["workspace-write", "read-only", "off"])
    parser.add_argument("--workspace", help="the folder of lines that name none (default: here)")
    parser.add_argument(
        "--worktree",
        action="store_true",
        help="each task in a git worktree of its own, on the branch treadle/ID",
    )
    turn = parser.add_argument_group("every turn's, unless its line sets its own")
    turn.add_argument("--max-cost", metavar="USD", help="dollars a turn may spend")
    turn.add_argument("--max-tokens-total", metavar="N", help="tokens a turn may spend")
    turn.add_argument("--max-requests", metavar="N", help="requests a turn may make")
    turn.add_argument("--max-time", metavar="DURATION", help="how long a turn may run: 10m")
    turn.add_argument("--output-schema", metavar="FILE", help="the JSON Schema of each answer")
    turn.add_argument(
        "--network",
        dest="sandbox_network",
        choices=list(NETWORK_MODES),
        help="what network each turn's commands reach: on, off or allowlist",
    )
    return parser


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def run_batch_command(argv: Sequence[str]) -> int:
    """``treadle batch ARGS``: the batch's exit code."""
    args = build_parser().parse_args(list(argv))
    from treadle.entrypoints.session import hide_environment_from_commands

    hide_environment_from_commands()
    from treadle.adapters.batch.results_file import ResultsLock

    lock = ResultsLock(results_path(args))
    try:
        hold(lock)
        options, plan = prepare(args)
        return asyncio.run(run_plan(options, plan))
    except ConfigError as error:
        for line in str(error).splitlines():
            print(f"treadle: {line}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:  # before the batch's own handlers: nothing had started
        return LEAVE_CODE
    finally:
        lock.release()


def results_path(args: argparse.Namespace) -> Path:
    return Path(args.out) if args.out else default_results(Path(args.tasks))


def hold(lock: ResultsLock) -> None:
    """Take RESULTS for this batch, or a ConfigError: a second batch on one RESULTS
    would run every task again, as a second ``--resume`` of a session would."""
    from treadle.adapters.batch.results_file import ResultsBusy

    results = lock.path.with_suffix("")
    try:
        lock.acquire()
    except ResultsBusy as busy:
        raise ConfigError(f"{results}: {busy}") from None
    except OSError as error:
        raise ConfigError(f"{results}: cannot be written: {error.strerror or error}") from None


def prepare(args: argparse.Namespace) -> tuple[BatchOptions, BatchPlan]:
    """The batch's options and plan, or a ConfigError naming every problem found."""
    if args.address and args.engine == "local":
        raise ConfigError("flag --address: a Ray cluster's address needs --engine ray")
    engine = "ray" if args.address else args.engine or "local"
    flags = {"model": args.model, "base_url": args.base_url, "approval": args.approval}
    flags.update(workspace=args.workspace, sandbox=args.sandbox)
    flags.update({key: getattr(args, key) for key in TURN_FLAGS})
    app = load_config(flags=flags, environ=os.environ)
    tasks = read_tasks(Path(args.tasks), on_this_machine=not args.address)
    # A Ray worker does not run in our folder: every turn gets an absolute one.
    tasks = tuple(
        replace(task, workspace=os.path.abspath(task.workspace)) if task.workspace else task
        for task in tasks
    )
    out = results_path(args)
    from treadle.adapters.batch.results_file import read_lines
    from treadle.entrypoints.session import new_session_id, state_dir

    sessions = state_dir().absolute() / "sessions"
    defaults = TurnDefaults(
        workspace=os.path.realpath(app.workspace),
        model=args.model or "",
        base_url=args.base_url or "",
        approval=args.approval or "",
        sandbox=args.sandbox or "",
        environment=turn_settings(os.environ, sessions.parent),
        flags=batch_flags(args),
    )
    try:
        previous = latest_results(read_lines(out))
    except OSError as error:
        raise ConfigError(f"{out}: cannot be read: {error.strerror or error}") from None
    plan = plan_batch(
        tasks,
        previous,
        defaults,
        redo=args.redo,
        new_session=lambda task: new_session_id(),
        transcript_of=lambda session: str(sessions / session / "transcript.jsonl"),
    )
    if getattr(args, "worktree", False):
        if engine != "local":
            raise ConfigError(
                "flag --worktree: the worktrees are made on this machine: --engine local"
            )
        plan = replace(plan, orders=with_worktrees(plan.orders, app.worktree_dir))
    options = BatchOptions(engine, args.workers, args.address or "", str(out))
    return options, plan


def with_worktrees(orders: Sequence[TurnOrder], worktree_dir: str) -> tuple[TurnOrder, ...]:
    """Each turn in a worktree of its own, named after its task, made (or found) now, one
    after the other: the turns then start in them side by side, and git is never asked
    to make two at once in one repository."""
    from treadle.adapters.worktrees import WorktreeError
    from treadle.entrypoints.worktrees import repository_of

    placed: list[TurnOrder] = []
    taken: set[str] = set()
    for order in orders:
        name = base = name_for(order.id)
        number = 1
        while name in taken:  # two ids that make one name: the second gets a number
            number += 1
            name = f"{base}-{number}"
        taken.add(name)
        try:
            repository_of(order.workspace, worktree_dir).open(name)
        except WorktreeError as error:
            raise ConfigError(f"task {order.id}: {error}") from None
        except ConfigError as error:
            raise ConfigError(f"task {order.id}: {error}") from None
        placed.append(replace(order, worktree=name))
    return tuple(placed)


def batch_flags(args: argparse.Namespace) -> Flags:
    """The limits and output schema given to the batch (checked with the configuration,
    before anything runs), as each turn's flags; a schema's file by its absolute path."""
    flags: list[tuple[str, str]] = []
    for key in TURN_FLAGS:
        text = getattr(args, key, None)
        if text is not None:
            flags.append((key, os.path.abspath(text) if key == "output_schema" else text))
    return tuple(flags)


def default_results(tasks: Path) -> Path:
    """``tasks.jsonl`` → ``tasks.results.jsonl``, beside it: a rerun finds it."""
    stem = tasks.name.removesuffix(".jsonl").removesuffix(".json")
    return tasks.with_name(f"{stem}.results.jsonl")


def turn_settings(environ: Mapping[str, str], state: Path) -> tuple[tuple[str, str], ...]:
    """What every turn gets from the batch's environment: its ``TREADLE_*`` settings
    (not the run markers of an enclosing treadle) and the batch's state folder, so that
    every transcript is where RESULTS says, on whichever node the turn runs."""
    settings = {
        name: value
        for name, value in environ.items()
        if name.startswith("TREADLE_") and not name.startswith("TREADLE_RUN_")
    }
    settings["TREADLE_STATE_DIR"] = str(state)
    return tuple(sorted(settings.items()))


def read_tasks(path: Path, *, on_this_machine: bool) -> tuple[BatchTask, ...]:
    """The tasks of TASKS, or a ConfigError naming every bad line: those that are not
    well-formed, and those of the others that name what does not exist."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror or error}") from None
    lines, undecodable = decode_lines(raw)
    tasks, problems = read_task_lines(lines)
    checked = check_lines(tasks, on_this_machine=on_this_machine)
    problems = by_line([*undecodable, *problems, *checked])
    if problems:
        raise ConfigError(_problems(path, problems))
    if not tasks:
        raise ConfigError(f"{path}: no tasks in it")
    return tasks


def check_lines(tasks: Sequence[BatchTask], *, on_this_machine: bool) -> list[str]:
    """What only I/O can check: the folders and sessions the lines name (on a cluster
    they may exist on its nodes only), and the models they ask for."""
    from treadle.adapters.transcript.sessions import SessionNotFound, SessionStore
    from treadle.entrypoints.session import state_dir

    store = SessionStore(state_dir() / "sessions")
    problems: list[str] = []
    resumed: dict[str, int] = {}
    for task in tasks:
        where = f"line {task.line}"
        if task.model:
            try:
                check_value("model", task.model)
            except ValueError as problem:
                problems.append(f"{where}: model: {problem}")
        for key, text in task.flags:
            if key == "sandbox_network":
                try:
                    check_value(key, text)
                except ValueError as problem:
                    problems.append(f"{where}: {key}: {problem}")
        if task.workspace and on_this_machine and not os.path.isdir(task.workspace):
            what = "not a folder" if os.path.exists(task.workspace) else "no such folder"
            problems.append(f"{where}: workspace {task.workspace}: {what}")
        if task.resume:
            session = task.resume
            if on_this_machine:
                try:
                    session = store.find(task.resume)
                except SessionNotFound as missing:
                    problems.append(f"{where}: resume: {missing}")
            if session in resumed:
                first = resumed[session]
                problems.append(
                    f"{where}: resume: session {session} is continued on line {first} too"
                )
            resumed[session] = task.line
    return problems


def _problems(path: Path, problems: Sequence[str]) -> str:
    shown = [f"{path}:{problem.removeprefix('line ')}" for problem in problems]
    if len(shown) > MOST_PROBLEMS_SHOWN:
        hidden = len(shown) - MOST_PROBLEMS_SHOWN
        shown = [*shown[:MOST_PROBLEMS_SHOWN], f"{path}: … and {hidden} more problems"]
    return "\n".join([*shown, "nothing was run"])


async def run_plan(options: BatchOptions, plan: BatchPlan) -> int:
    """Run the plan with what the container builds; signals stop it."""
    from treadle.adapters.secrets.redact import Redactor
    from treadle.adapters.transcript.session_log import session_log
    from treadle.entrypoints.container import Container
    from treadle.entrypoints.injector import providers

    container = Container()
    container.batch_options.override(providers.Object(options))
    log = str(Path(options.results_path).with_suffix(".log"))
    redact = Redactor.from_environ(os.environ).redact
    try:
        with session_log(log, redact, "warning"):  # a bug's traceback: there, not on screen
            return await drive(container, options, plan)
    except OSError as error:  # RESULTS could not be opened or written
        print(f"treadle: {options.results_path}: {error.strerror or error}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        container.shutdown_resources()


async def drive(container: Container, options: BatchOptions, plan: BatchPlan) -> int:
    """The batch on the container's engine, RESULTS and screen: its exit code."""
    screen = container.batch_screen()
    ports = BatchPorts(
        container.turn_engine(), container.batch_results(), screen, container.clock()
    )
    for folder, count in shared_workspaces(plan.orders).items():
        if options.workers > 1:
            screen.note(f"{count} turns share the workspace {folder} (see README: Batches)")
    if options.engine == "ray":
        screen.note(
            f"connecting to the Ray cluster at {options.address}"
            if options.address
            else "starting a private Ray instance on 127.0.0.1"
        )
    run = BatchRun(start_batch(plan.orders, workers=options.workers, skipped=plan.skipped), ports)
    ctrl_c = CtrlC()

    def signalled(signum: int) -> None:
        # A second SIGINT kills the turns that would not pause; the batch still ends
        # with its report (its turns run in other processes, which leave on their own).
        if signum == signal.SIGINT:
            ctrl_c.last, action = route(Mode.TURN, CTRL_C, ctrl_c.last, time.monotonic())
            if isinstance(action, LeaveNow):
                run.kill()
                return
        run.stop()

    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, signalled, signum)
    match await run.run():
        case Success(code):
            return int(code)
        case Failure(why):
            print(f"treadle: {why}", file=sys.stderr)
            return USAGE_ERROR
    raise AssertionError("unreachable")  # pragma: no cover
