"""Hooks run as commands (issue 23): each through the session's process runner, so
under treadle's rules for commands — its own process group (and cgroup), the sandbox,
secrets left out of its environment, its deadline, and nothing of it left running
when it ends, is stopped (Esc) or treadle dies.

A hook reads what happened as JSON on stdin and answers with its exit code, stdout and
stderr, as Claude Code's do. The runner keeps a command's output as one stream and
gives it no stdin, so a small shell wrapper does both: stdin from a private file, and
stderr kept apart and written after stdout behind a marker of the run's own::

    hooks = CommandHooks(table, runner, workspace="/repo", session_id="s1")
    verdict = await hooks.fire(HookInput(HookEvent.PRE_TOOL_USE, "bash", {"command": "rm x"}))
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile

from returns.result import Failure, Success

from treadle.domain.rules.hooks import combine, commands_for, decide, hook_payload, matches
from treadle.domain.values.hook_table import HookCommand, HookRun, HookTable
from treadle.domain.values.hooks import NO_VERDICT, HookEvent, HookInput, HookVerdict
from treadle.domain.values.process import ProcessSpec
from treadle.ports.process import ProcessRunner

HOOK_OUTPUT = 256 * 1024
"""Bytes of a hook's output kept (its head and tail): a verdict is a line or a JSON
object; a hook that prints more is read no further."""

HOOK_STDERR = 32 * 1024
"""Bytes of a hook's stderr kept (its tail, where the reason of an ``exit 2`` ends): the
wrapper's shell holds no more of it however much the hook writes."""

WRAPPER = (
    "exec 3>&1\n"
    'treadle_hook_err=$( { ( eval "$TREADLE_HOOK_COMMAND" ) <"$TREADLE_HOOK_INPUT" '
    '2>&1 1>&3 3>&-; printf \'\\n%s\' "$?"; } | tail -c "$TREADLE_HOOK_STDERR" )\n'
    'treadle_hook_status=${treadle_hook_err##*"\n"}\n'
    "exec 3>&-\n"
    'printf \'\\n%s\\n%s\' "$TREADLE_HOOK_MARK" "${treadle_hook_err%"\n"*}"\n'
    'exit "$treadle_hook_status"\n'
)
"""The hook's command (in ``TREADLE_HOOK_COMMAND``, so that its text is never spliced
into shell; in a subshell of its own, so that its ``exit`` ends only it) with stdin from
``TREADLE_HOOK_INPUT``, stdout straight to the output, and stderr gathered — its last
``TREADLE_HOOK_STDERR`` bytes, through ``tail``, with the exit code written last behind
them, so that the shell holds a bounded text however much the hook writes — then
written after ``TREADLE_HOOK_MARK``; its exit code is the wrapper's."""

log = logging.getLogger(__name__)

TOOL_EVENTS = frozenset({HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE})


class CommandHooks:
    """The Hooks port over the session's runner. ``workspace`` is where hooks run (and
    ``CLAUDE_PROJECT_DIR``); ``session_id`` and ``transcript_path`` are what they are
    told of the session."""

    def __init__(
        self,
        table: HookTable,
        runner: ProcessRunner,
        *,
        workspace: str,
        session_id: str = "",
        transcript_path: str = "",
    ) -> None:
        self.table = table
        self._runner = runner
        self._workspace = workspace
        self._session_id = session_id
        self._transcript = transcript_path
        self._events = table.events()

    def wants(self, event: HookEvent, subject: str = "") -> bool:
        if event not in self._events:
            return False
        tool = event in TOOL_EVENTS
        return any(
            group.event is event and matches(group.matcher, subject, tool=tool)
            for group in self.table.groups
        )

    async def fire(self, happened: HookInput) -> HookVerdict:
        commands = commands_for(self.table, happened)
        if not commands:
            return NO_VERDICT
        payload = hook_payload(
            happened,
            session_id=self._session_id,
            transcript_path=self._transcript,
            cwd=self._workspace,
        )
        path = _input_file(json.dumps(payload, ensure_ascii=False, default=str))
        try:
            runs = await asyncio.gather(*(self._run(command, path) for command in commands))
        finally:
            _remove(path)
        return combine(decide(happened.event, run) for run in runs)

    async def _run(self, command: HookCommand, input_path: str) -> HookRun:
        mark = "treadle-hook-stderr-" + os.urandom(8).hex()
        spec = ProcessSpec(
            WRAPPER,
            cwd=self._workspace,
            timeout=command.timeout,
            output_limit=HOOK_OUTPUT,
            env={
                "TREADLE_HOOK_COMMAND": command.command,
                "TREADLE_HOOK_INPUT": input_path,
                "TREADLE_HOOK_MARK": mark,
                "TREADLE_HOOK_STDERR": str(HOOK_STDERR),
                "CLAUDE_PROJECT_DIR": self._workspace,
            },
        )
        match await self._runner.run(spec):
            case Failure(error):
                log.debug("hook %r could not start: %s", command.command, error.detail)
                return HookRun(command.command, None, failure=error.detail, timeout=command.timeout)
            case Success(result):
                stdout, stderr = split_output(result.output, mark)
                log.debug(
                    "hook %r: exit %s%s in %.3f s",
                    command.command,
                    result.exit_code,
                    " (deadline)" if result.timed_out else "",
                    result.duration,
                )
                return HookRun(
                    command.command,
                    result.exit_code,
                    stdout,
                    stderr,
                    timed_out=result.timed_out,
                    timeout=command.timeout,
                    duration=result.duration,
                )
        raise AssertionError("a runner's result is a Success or a Failure")


def split_output(output: str, mark: str) -> tuple[str, str]:
    """A wrapped hook's stdout and stderr; all of it is stdout when the marker never
    came (the hook was stopped before it ended)."""
    at = output.rfind(f"\n{mark}\n")
    if at < 0:
        return output, ""
    return output[:at], output[at + len(mark) + 2 :]


def _input_file(text: str) -> str:
    """A private file holding what a hook reads on stdin (the tool's input may be
    anything the model wrote: only the user may read it)."""
    descriptor, path = tempfile.mkstemp(prefix="treadle-hook-", suffix=".json")
    try:
        os.write(descriptor, text.encode("utf-8", "replace"))
    finally:
        os.close(descriptor)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
