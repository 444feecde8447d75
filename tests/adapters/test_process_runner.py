"""The real runner on real processes: cleanup of whole trees, bounds, spills, environment."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from returns.result import Failure, Result, Success

from tests.processes import is_running
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.process.cgroup import CgroupHome, cgroup_home
from treadle.adapters.process.environment import child_environment, looks_secret
from treadle.adapters.process.watchdog_script import doomed
from treadle.adapters.sandbox.confinement import Launch
from treadle.adapters.sandbox.landlock import Ruleset
from treadle.adapters.sandbox.spawner import Start, native_spawner
from treadle.domain.values.process import ProcessResult, ProcessSpec

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

# Four ways to outlive a shell: a plain background child, one that called setsid, a
# double-forked daemon that stays in the group, and one that does both and drops the pipe.
# Each writes its pid to a file; the shell says "ready" once all four have.
ESCAPING_TREE = """
record() { echo $1 > "$DIR/$2.tmp" && mv "$DIR/$2.tmp" "$DIR/$2.pid"; }
bash -c "$(declare -f record); record \\$\\$ background; exec sleep 300" &
setsid bash -c "$(declare -f record); record \\$\\$ setsid; exec sleep 300" &
( bash -c "$(declare -f record); record \\$\\$ double_fork; exec sleep 300" & )
( setsid bash -c "$(declare -f record); record \\$\\$ daemon; exec sleep 300 >/dev/null 2>&1" & )
record $$ shell
while [ "$(ls "$DIR" | grep -c '\\.pid$')" -lt 5 ]; do sleep 0.01; done
echo ready > "$DIR/ready"
echo ready
sleep 300
"""


def contents(path: Path) -> str:
    return path.read_text()


def exists(path: Path) -> bool:
    return path.exists()


def contents_of(folder: Path) -> list[Path]:
    return list(folder.iterdir())


def our_zombie(pid: int) -> bool:
    """Whether ``pid`` ended as our child and nobody collected it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[0] == b"Z" and int(fields[1]) == os.getpid()


def recorded_pids(folder: Path) -> dict[str, int]:
    return {path.stem: int(path.read_text()) for path in folder.glob("*.pid")}


def ran(outcome: object) -> ProcessResult:
    assert isinstance(outcome, Success), outcome
    result = outcome.unwrap()
    assert isinstance(result, ProcessResult)
    return result


def spec(command: str, tmp_path: Path, **overrides: object) -> ProcessSpec:
    settings: dict[str, object] = {"timeout": 30.0, "cwd": str(tmp_path)}
    settings.update(overrides)
    return ProcessSpec(command, **settings)  # type: ignore[arg-type]


@pytest.mark.slow
async def test_nothing_of_the_tree_survives_the_deadline(tmp_path: Path) -> None:
    runner = SubprocessRunner(grace=1.0)

    result = ran(
        await runner.run(spec(ESCAPING_TREE, tmp_path, timeout=3.0, env={"DIR": str(tmp_path)}))
    )

    pids = recorded_pids(tmp_path)
    assert set(pids) == {"shell", "background", "setsid", "double_fork", "daemon"}
    assert result.timed_out
    assert result.output == "ready\n"
    assert result.exit_code is None
    assert result.signal == signal.SIGTERM
    assert [name for name, pid in pids.items() if is_running(pid)] == []


async def test_nothing_of_the_tree_survives_a_cancel(tmp_path: Path) -> None:
    runner = SubprocessRunner(grace=1.0)
    call = asyncio.create_task(
        runner.run(spec(ESCAPING_TREE, tmp_path, timeout=300.0, env={"DIR": str(tmp_path)}))
    )
    for _ in range(3000):
        if (tmp_path / "ready").exists() or call.done():
            break
        await asyncio.sleep(0.01)
    assert not call.done()

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    pids = recorded_pids(tmp_path)
    assert len(pids) == 5
    assert [name for name, pid in pids.items() if is_running(pid)] == []


async def test_every_piece_of_output_is_handed_on_as_it_is_read(tmp_path: Path) -> None:
    """on_output hears the first line while the command still runs, and gets all of
    what it printed, the bound notwithstanding."""
    runner = SubprocessRunner(grace=0.2)
    chunks: list[bytes] = []
    first_seen = asyncio.get_running_loop().create_future()

    def take(chunk: bytes) -> None:
        chunks.append(chunk)
        if not first_seen.done():
            first_seen.set_result(None)

    command = f"echo first; while [ ! -e {tmp_path}/go ]; do sleep 0.01; done; seq 1 20000"
    call = asyncio.ensure_future(
        runner.run(spec(command, tmp_path, output_limit=100, on_output=take))
    )
    await asyncio.wait_for(first_seen, 10)
    assert b"".join(chunks) == b"first\n" and not call.done()
    (tmp_path / "go").touch()
    result = ran(await call)
    whole = b"first\n" + b"".join(b"%d\n" % n for n in range(1, 20001))
    assert b"".join(chunks) == whole
    assert result.truncated and len(result.output) < 300


async def test_output_printed_while_a_cancel_stops_the_command_is_handed_on(
    tmp_path: Path,
) -> None:
    runner = SubprocessRunner(grace=2.0)
    chunks: list[bytes] = []
    command = "trap 'echo stopping; exit 1' TERM; echo started; sleep 300 & wait"
    call = asyncio.ensure_future(runner.run(spec(command, tmp_path, on_output=chunks.append)))
    for _ in range(1000):
        if chunks:
            break
        await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert b"".join(chunks) == b"started\nstopping\n"


async def test_a_program_ignoring_sigterm_gets_sigkill_after_the_grace(tmp_path: Path) -> None:
    runner = SubprocessRunner(grace=0.2)

    result = ran(await runner.run(spec("trap '' TERM; echo $$; sleep 300", tmp_path, timeout=0.5)))

    assert result.timed_out
    assert result.signal == signal.SIGKILL
    assert not is_running(int(result.output))


async def test_a_background_child_holding_the_output_does_not_hold_the_call(
    tmp_path: Path,
) -> None:
    runner = SubprocessRunner(grace=1.0)
    started = time.monotonic()

    result = ran(await runner.run(spec("sleep 60 & echo $!; echo done", tmp_path)))

    assert time.monotonic() - started < 5.0  # the child would sleep for 60
    child, done = result.output.split()
    assert done == "done"
    assert result.exit_code == 0
    assert not result.timed_out
    assert not is_running(int(child))


async def test_a_detached_daemon_is_stopped_when_the_command_ends(tmp_path: Path) -> None:
    runner = SubprocessRunner(grace=1.0)

    # The daemon leaves the session, gives up the pipe, and its parent is gone at once.
    result = ran(await runner.run(spec("(setsid sleep 300 >/dev/null 2>&1 & echo $!)", tmp_path)))

    assert result.exit_code == 0
    assert not is_running(int(result.output))


@pytest.mark.slow
async def test_an_endless_output_is_bounded_with_the_omitted_count(tmp_path: Path) -> None:
    runner = SubprocessRunner()

    result = ran(await runner.run(spec("yes | head -c 1000000000", tmp_path, output_limit=10_000)))

    parts = re.fullmatch(r"(.*\n)(\[\.\.\. [^\n]* \.\.\.\])\n(.*)", result.output, re.DOTALL)
    assert parts is not None
    head, marker, tail = parts.groups()
    kept = len(head) + len(tail)
    assert result.truncated
    assert result.exit_code == 0
    assert result.omitted_bytes == 1_000_000_000 - kept
    assert kept == 10_000
    assert f"{result.omitted_bytes:,} bytes" in marker
    assert set(head + tail) == {"y", "\n"}


async def test_the_full_output_is_saved_when_the_bound_cuts(tmp_path: Path) -> None:
    spill = tmp_path / "session"
    runner = SubprocessRunner()

    result = ran(
        await runner.run(spec("seq 1 20000", tmp_path, output_limit=1_000, spill_dir=str(spill)))
    )

    assert result.truncated
    assert result.full_output_path is not None
    saved = Path(result.full_output_path)
    assert saved.parent == spill
    expected = "".join(f"{n}\n" for n in range(1, 20001))
    assert contents(saved) == expected
    assert f"full output in {saved}" in result.output
    assert result.omitted_bytes == len(expected) - 1_000


async def test_nothing_is_saved_when_the_output_fits(tmp_path: Path) -> None:
    spill = tmp_path / "session"
    runner = SubprocessRunner()

    result = ran(await runner.run(spec("seq 1 10", tmp_path, spill_dir=str(spill))))

    assert not result.truncated
    assert result.full_output_path is None
    assert not spill.exists() or list(spill.iterdir()) == []


async def test_the_saved_output_stops_at_its_cap(tmp_path: Path) -> None:
    runner = SubprocessRunner(spill_cap=5_000)

    result = ran(
        await runner.run(
            spec("seq 1 20000", tmp_path, output_limit=1_000, spill_dir=str(tmp_path / "s"))
        )
    )

    assert result.full_output_path is not None
    assert len(contents(Path(result.full_output_path))) == 5_000
    assert "only the first 5,000 bytes of the output were saved" in result.output


async def test_a_spill_that_cannot_be_written_is_said_not_failed(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    runner = SubprocessRunner()

    result = ran(
        await runner.run(
            spec("seq 1 20000", tmp_path, output_limit=1_000, spill_dir=str(blocker / "s"))
        )
    )

    assert result.exit_code == 0
    assert result.truncated
    assert result.full_output_path is None
    assert "the full output could not be saved: " in result.output


async def test_secrets_stay_out_of_the_environment_unless_let_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TREADLE_TEST_API_KEY", "key-k9q2x7")
    monkeypatch.setenv("Github_Token", "token-w4z8v1")
    monkeypatch.setenv("TREADLE_TEST_PLAIN", "visible")
    command = "env"
    # Values no path can hold by chance: "t-456" was found in pytest's own folder
    # /tmp/pytest-of-root/pytest-456/ (TMPDIR and PWD are in the environment).

    closed = ran(await SubprocessRunner().run(spec(command, tmp_path)))
    allowed = ran(
        await SubprocessRunner(passthrough_env=["Github_Token"]).run(spec(command, tmp_path))
    )

    assert "key-k9q2x7" not in closed.output
    assert "token-w4z8v1" not in closed.output
    assert "TREADLE_TEST_PLAIN=visible" in closed.output
    assert "Github_Token=token-w4z8v1" in allowed.output
    assert "key-k9q2x7" not in allowed.output


async def test_commands_are_told_not_to_wait_for_anyone(tmp_path: Path) -> None:
    result = ran(
        await SubprocessRunner().run(
            spec(
                'read line; echo "[$line:$?] $CI $GIT_TERMINAL_PROMPT $PAGER $GIT_PAGER $MINE"',
                tmp_path,
                env={"MINE": "mine"},
            )
        )
    )

    assert result.output == "[:1] 1 0 cat cat mine\n"  # read found stdin closed


async def test_the_command_runs_in_the_given_folder(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    folder.mkdir()

    result = ran(await SubprocessRunner().run(spec("pwd", tmp_path, cwd=str(folder))))

    assert result.output == f"{folder}\n"


@pytest.mark.parametrize("folder", ["missing", "a_file"])
async def test_a_command_that_cannot_start_is_a_failure_value(tmp_path: Path, folder: str) -> None:
    (tmp_path / "a_file").write_text("")

    outcome = await SubprocessRunner().run(spec("true", tmp_path, cwd=str(tmp_path / folder)))

    assert isinstance(outcome, Failure)
    assert folder in outcome.failure().detail


def test_names_that_look_like_secrets() -> None:
    assert all(map(looks_secret, ["OPENAI_API_KEY", "gh_token", "DbPassword", "AWS_SECRET"]))
    assert not any(map(looks_secret, ["PATH", "HOME", "LANG", "CI"]))


def test_the_callers_variables_win_and_the_run_is_tagged() -> None:
    environment = child_environment(
        {"PAGER": "less", "MY_KEY": "x", "HOME": "/h"},
        passthrough=(),
        extra={"PAGER": "more", "SERVICE_TOKEN": "given"},
        run_id="abc",
    )

    assert environment == {
        "HOME": "/h",
        "CI": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "PAGER": "more",
        "GIT_PAGER": "cat",
        "SERVICE_TOKEN": "given",
        "TREADLE_RUN_abc": "1",
    }


# A descendant that clears its environment (no marker) and leaves the session: the shell
# ends at once, so it is re-parented to us; in the second, its parent is still running.
HIDDEN = {
    "orphaned": "(setsid env -i sleep 300 & echo $!)",
    "bare": "setsid env -i sleep 300 & echo $!",
    "stubborn": "setsid env -i sh -c 'trap \"\" TERM; exec sleep 300' & echo $!",
}


@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroup", "records"])
@pytest.mark.parametrize("command", list(HIDDEN.values()), ids=list(HIDDEN))
async def test_a_descendant_without_the_marker_is_still_the_commands(
    tmp_path: Path, command: str, cgroups: bool
) -> None:
    runner = SubprocessRunner(grace=0.2, cgroups=cgroups)

    result = ran(await runner.run(spec(command, tmp_path)))

    assert result.exit_code == 0
    assert not is_running(int(result.output))
    assert not our_zombie(int(result.output))  # and its exit was collected


@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroup", "records"])
async def test_a_hidden_descendant_of_a_command_that_times_out_is_stopped(
    tmp_path: Path, cgroups: bool
) -> None:
    runner = SubprocessRunner(grace=0.2, cgroups=cgroups)
    command = "(setsid env -i sleep 300 & echo $!); setsid env -i sleep 300 & echo $!; sleep 300"

    result = ran(await runner.run(spec(command, tmp_path, timeout=0.5)))

    assert result.timed_out
    assert [pid for pid in map(int, result.output.split()) if is_running(pid)] == []


async def test_where_the_kernel_allows_it_each_command_has_a_cgroup_of_its_own(
    tmp_path: Path,
) -> None:
    home = cgroup_home()
    if home is None:
        pytest.skip("no cgroup v2 this process may write to")
    runner = SubprocessRunner()

    first, second = [
        ran(await runner.run(spec("tail -n 1 /proc/self/cgroup", tmp_path))).output
        for _ in range(2)
    ]

    assert "/treadle-" in first and "/run-" in first
    assert first != second
    assert not exists(Path(home.path, first.rsplit("/", 1)[1].strip()))  # removed after


WAIT_FOR_GO = "touch started; while [ ! -e go ]; do sleep 0.01; done; echo long"


async def test_an_orphan_of_two_runs_at_once_is_stopped_by_the_last_to_end(
    tmp_path: Path,
) -> None:
    runner = SubprocessRunner(grace=0.2, cgroups=False)
    long = asyncio.create_task(runner.run(spec(WAIT_FOR_GO, tmp_path)))
    await asyncio.sleep(0)  # the long one starts first
    short = ran(await runner.run(spec(HIDDEN["orphaned"], tmp_path)))
    (tmp_path / "go").touch()

    assert ran(await long).output == "long\n"
    assert not is_running(int(short.output))


async def test_treadles_own_children_are_never_taken_for_leftovers(tmp_path: Path) -> None:
    runner = SubprocessRunner(grace=0.2, cgroups=False)
    call = asyncio.create_task(runner.run(spec(WAIT_FOR_GO, tmp_path)))
    for _ in range(3000):
        if exists(tmp_path / "started"):
            break
        await asyncio.sleep(0.01)
    # Started by us, in our session, while the command runs.
    own = subprocess.Popen(["sleep", "30"])  # noqa: ASYNC220
    try:
        (tmp_path / "go").touch()
        ran(await call)
        assert own.poll() is None
    finally:
        own.kill()
        own.wait()


def test_the_watchdog_kills_what_it_recorded_only_if_it_is_the_same_process() -> None:
    entries = {10: (1, 10, 500), 11: (10, 10, 501), 12: (1, 12, 900), 13: (1, 13, 7)}

    targets = doomed(entries, seeds=[13], recorded={10: 500, 12: 400}, spare=[1])

    # 12 is another process by now (it started later than the one recorded).
    assert targets == {10, 11, 13}


async def test_where_the_kernel_refuses_a_cgroup_the_runner_falls_back_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder that is not a cgroup: making one works, moving a process into it does not.
    folder = tmp_path / "not-a-cgroup"
    folder.mkdir()
    home = CgroupHome(str(folder))
    monkeypatch.setattr("treadle.adapters.process.runner.cgroup_home", lambda: home)
    runner = SubprocessRunner(grace=0.2)

    result = ran(await runner.run(spec(HIDDEN["orphaned"], tmp_path)))

    assert result.exit_code == 0
    assert not is_running(int(result.output))
    assert not home.usable
    assert contents_of(folder) == []  # the folder it made is gone again


class RefusedRuleset:
    """A sandbox that hands the start a descriptor that is no ruleset: the kernel
    refuses to confine it (landlock_restrict_self fails), as where it cannot."""

    def launch(self) -> Result[Launch, str]:
        not_a_ruleset = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        return Success(Launch(ruleset=Ruleset(not_a_ruleset, abi=1), owns=True))


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


STARTS = {
    "spawner in a cgroup": (True, True),
    "spawner": (True, False),
    "python helper behind the gate": (False, True),
    "python helper": (False, False),
}
needs_spawner = pytest.mark.skipif(
    native_spawner() is None, reason="the native spawner is not built (make)"
)


def starts(*, cgroup_only: bool = False) -> list[object]:
    return [
        pytest.param(*how, id=name, marks=[needs_spawner] if how[0] else [])
        for name, how in STARTS.items()
        if how[1] or not cgroup_only
    ]


@pytest.mark.parametrize(("spawner", "cgroups"), starts())
async def test_a_command_whose_sandbox_helper_cannot_confine_itself_never_runs_and_is_blocked(
    tmp_path: Path, spawner: bool, cgroups: bool
) -> None:
    runner = SubprocessRunner(cgroups=cgroups, sandbox=RefusedRuleset(), spawner=spawner)  # type: ignore[arg-type]
    before = open_descriptors()
    for _ in range(3):  # whenever the helper ends, before or after the gate is reached
        outcome = await runner.run(spec("touch ran", tmp_path))
        assert isinstance(outcome, Failure), outcome
        error = outcome.failure()
        assert error.blocked
        assert error.detail.startswith("the sandbox could not be set up: landlock_restrict_self: ")
        assert not exists(tmp_path / "ran")
    assert open_descriptors() == before  # the status pipe, the gate, the ruleset: all closed


def stuck_start(ruleset: object, cgroup: int, *, native: bool = True, **_: object) -> Start:
    """A start that never gets as far as confining itself (it sleeps, holding the
    status pipe open)."""
    reading, writing = os.pipe()
    prefix = ("/bin/sh", "-c", "sleep 30", "sh")
    return Start(prefix, (writing,), (reading, writing), gated=cgroup >= 0)


@pytest.mark.parametrize("cgroups", [True, False], ids=["in a cgroup", "no cgroup"])
async def test_a_sandbox_helper_that_never_gets_to_the_command_is_stopped_at_the_deadline(
    tmp_path: Path, cgroups: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("treadle.adapters.process.runner.plan_start", stuck_start)
    runner = SubprocessRunner(grace=0.2, cgroups=cgroups, sandbox=RefusedRuleset())  # type: ignore[arg-type]
    result = ran(await runner.run(spec("touch ran", tmp_path, timeout=0.3)))
    assert result.timed_out and result.duration < 5
    assert not exists(tmp_path / "ran")


@pytest.mark.parametrize(("spawner", "cgroups"), starts())
async def test_a_command_is_treadles_child_leading_its_own_session_however_it_starts(
    tmp_path: Path, spawner: bool, cgroups: bool
) -> None:
    runner = SubprocessRunner(grace=0.2, cgroups=cgroups, spawner=spawner)
    shown = ran(await runner.run(spec("echo $$ $PPID; ps -o sid=,pgid= -p $$", tmp_path)))
    pid, parent, session, group = map(int, shown.output.split())
    assert parent == os.getpid()  # the spawner's CLONE_PARENT: no helper in between
    assert session == group == pid  # what the process tree counts on
    assert ran(await runner.run(spec("exit 3", tmp_path))).exit_code == 3
    killed = ran(await runner.run(spec("kill -9 $$", tmp_path)))
    assert killed.signal == signal.SIGKILL and killed.exit_code is None
    assert [pid for pid in running_children() if our_zombie(pid)] == []  # all collected


def running_children() -> list[int]:
    listing = Path(f"/proc/self/task/{os.getpid()}/children").read_text()
    return [int(pid) for pid in listing.split()]


@pytest.mark.parametrize(("spawner", "cgroups"), starts(cgroup_only=True))
async def test_a_command_starts_in_its_cgroup_and_so_does_all_it_starts(
    tmp_path: Path, spawner: bool, cgroups: bool
) -> None:
    home = cgroup_home()
    if home is None or not home.usable:
        pytest.skip("no cgroup v2 this process may write to")
    runner = SubprocessRunner(grace=0.2, cgroups=cgroups, spawner=spawner)
    shown = ran(
        await runner.run(
            spec("tail -n 1 /proc/self/cgroup; setsid tail -n 1 /proc/self/cgroup", tmp_path)
        )
    ).output.split()
    assert len(shown) == 2 and shown[0] == shown[1]
    assert f"/{os.path.basename(home.path)}/run-" in shown[0]


@needs_spawner
def test_a_spawner_built_from_another_version_of_its_source_refuses_to_run() -> None:
    spawner = native_spawner()
    assert spawner is not None
    done = subprocess.run(
        [spawner, "1", "-1", "-1", "-1", "--", "/bin/echo", "ran"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: treadle-spawn 2 ")
