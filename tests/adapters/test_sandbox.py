"""Commands confined by the real kernel: Landlock, through the runner and its exec helper.

The workspace and the folder "outside" it are made under /var/tmp, so that the temporary
folder being writable hides nothing; every test is skipped on a kernel without Landlock.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from treadle.adapters.process import SubprocessRunner
from treadle.adapters.sandbox import Sandbox, probe, spawner
from treadle.adapters.sandbox.landlock import prepare
from treadle.adapters.sandbox.spawner import HELPER, PROTOCOL, native_spawner
from treadle.domain.rules.sandbox import SandboxMode, SandboxSupport
from treadle.domain.values.process import ProcessResult, ProcessSpec

SUPPORT = probe()
pytestmark = pytest.mark.skipif(not SUPPORT.available, reason=SUPPORT.reason)
DENIED = "Permission denied"
ON = ("on", "-1", "0")
"""The network arguments of a start that leaves the network alone."""


@pytest.fixture
def places() -> Iterator[tuple[Path, Path]]:
    """A workspace and a folder beside it, neither in a temporary folder."""
    root = Path(tempfile.mkdtemp(prefix="treadle-sandbox-", dir="/var/tmp"))
    workspace, outside = root / "work", root / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "kept.txt").write_text("original\n")
    yield workspace, outside
    shutil.rmtree(root, ignore_errors=True)


async def run(
    command: str,
    workspace: Path,
    mode: SandboxMode = "workspace-write",
    spawner: bool = True,
    **options: object,
) -> ProcessResult:
    sandbox = Sandbox(mode, str(workspace), **options)  # type: ignore[arg-type]
    runner = SubprocessRunner(sandbox=sandbox, spawner=spawner)
    return (await runner.run(ProcessSpec(command, cwd=str(workspace), timeout=30))).unwrap()


async def test_writes_outside_the_workspace_are_refused_and_inside_allowed(places) -> None:
    workspace, outside = places
    result = await run(
        f"echo new > {outside}/new.txt; echo more >> {outside}/kept.txt; "
        f"rm -f {outside}/kept.txt; mkdir {outside}/made; "
        "mkdir -p a/b && echo inside > a/b/f && mv a/b/f a/g && rm -r a/b && cat a/g",
        workspace,
    )
    assert result.output.count(DENIED) == 4, result.output
    assert result.output.rstrip().endswith("inside")
    assert sorted(os.listdir(outside)) == ["kept.txt"]
    assert (outside / "kept.txt").read_text() == "original\n"
    assert (workspace / "a" / "g").read_text() == "inside\n"


async def test_read_only_refuses_writes_to_the_workspace_and_outside(places) -> None:
    workspace, outside = places
    result = await run(
        f"echo x > here.txt; echo y > {outside}/there.txt; echo z > /dev/null && echo devnull ok",
        workspace,
        "read-only",
    )
    assert result.output.count(DENIED) == 2, result.output
    assert "devnull ok" in result.output
    assert os.listdir(workspace) == [] and sorted(os.listdir(outside)) == ["kept.txt"]


STARTS = [
    pytest.param(True, id="native spawner", marks=pytest.mark.skipif(
        native_spawner() is None, reason="the native spawner is not built (make)"
    )),
    pytest.param(False, id="python helper"),
]  # fmt: skip


@pytest.mark.parametrize("spawner", STARTS)
async def test_a_descendant_that_leaves_the_session_is_still_confined(
    places, spawner: bool
) -> None:
    workspace, outside = places
    escape = f"echo escaped > {outside}/escaped.txt"
    result = await run(
        f"setsid bash -c '{escape}' 2>&1; (bash -c '( {escape} ) &' &) 2>&1; sleep 0.2; wait",
        workspace,
        spawner=spawner,
    )
    assert result.output.count(DENIED) == 2, result.output
    assert not (outside / "escaped.txt").exists()


async def test_a_command_that_needs_the_temporary_folder_works_in_both_modes(places) -> None:
    workspace, _ = places
    needs_temp = (
        f'{sys.executable} -c "import tempfile; f = tempfile.NamedTemporaryFile(); '
        "f.write(b'x'); f.flush(); print('temp ok', tempfile.gettempdir())\"; "
        'd=$(mktemp -d) && echo hi > "$d/f" && cat "$d/f"'
    )
    for mode in ("workspace-write", "read-only"):
        result = await run(needs_temp, workspace, mode)
        assert result.exit_code == 0, result.output
        assert "temp ok" in result.output and "hi" in result.output


async def test_a_read_only_command_gets_its_own_scratch_folder_deleted_after_it(places) -> None:
    workspace, _ = places
    result = await run('echo "$TMPDIR"; touch "$TMPDIR/left"', workspace, "read-only")
    scratch = Path(result.output.strip())
    assert scratch.name.startswith("treadle-scratch-")
    assert not scratch.exists()  # noqa: ASYNC240 (a test's look, after the command)


async def test_folders_listed_in_sandbox_writable_and_the_cache_can_be_written(places) -> None:
    workspace, outside = places
    cache = outside / "cache"
    result = await run(
        f'echo ok > {outside}/extra.txt && echo cached > "$npm_config_cache"',
        workspace,
        writable=[str(outside)],
        cache=str(cache),
        environ={},
    )
    assert result.exit_code == 0, result.output
    assert (cache / "npm").read_text() == "cached\n"


async def test_a_confined_command_cannot_signal_treadle(places) -> None:
    workspace, _ = places
    result = await run(f"kill -0 {os.getpid()} && echo reached || echo refused", workspace)
    if SUPPORT.abi < 6:
        pytest.skip("scopes need Landlock ABI 6")
    assert "refused" in result.output and "reached" not in result.output


@pytest.mark.parametrize("abi", range(1, 8))
def test_a_ruleset_for_each_older_abi_is_accepted_and_confines(places, abi: int) -> None:
    if abi > SUPPORT.abi:
        pytest.skip(f"this kernel has ABI {SUPPORT.abi}")
    workspace, outside = places
    ruleset = prepare((str(workspace),), SandboxSupport(abi))
    reading, writing = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", HELPER, str(ruleset.fd), str(writing), *ON, "--",
             "/bin/bash", "-c", f"echo in > in.txt; echo out > {outside}/out.txt"],
            cwd=workspace, pass_fds=(ruleset.fd, writing), capture_output=True, text=True,
            check=False,
        )  # fmt: skip
        os.close(writing)
        assert os.read(reading, 100) == b""  # confined: the helper had nothing to say
    finally:
        ruleset.close()
        os.close(reading)
    assert DENIED in done.stderr
    assert (workspace / "in.txt").exists() and not (outside / "out.txt").exists()


def test_the_exec_helper_given_a_descriptor_that_is_no_ruleset_refuses_to_run() -> None:
    reading, writing = os.pipe()
    done = subprocess.run(
        [sys.executable, "-I", "-S", HELPER, "0", str(writing), *ON, "--", "/bin/echo", "ran"],
        stdin=subprocess.DEVNULL, pass_fds=(writing,), capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    os.close(writing)
    with os.fdopen(reading, "rb") as status:
        said = status.read().decode()
    assert done.returncode == 126 and "ran" not in done.stdout
    assert done.stderr.startswith("treadle sandbox: landlock_restrict_self:")
    assert said == done.stderr  # and on the status pipe, for treadle to tell


async def test_an_explicit_sandbox_without_landlock_starts_nothing_and_says_why(places) -> None:
    workspace, _ = places
    missing = SandboxSupport(0, "Landlock is unavailable: not enabled at boot")
    sandbox = Sandbox("read-only", str(workspace), explicit=True, support=lambda: missing)
    outcome = await SubprocessRunner(sandbox=sandbox).run(
        ProcessSpec("touch ran", cwd=str(workspace), timeout=30)
    )
    error = outcome.failure()
    assert error.blocked
    assert error.detail == (
        "sandbox = read-only was asked for, but Landlock is unavailable: not enabled at boot"
    )
    assert not (workspace / "ran").exists()


async def test_the_default_without_landlock_runs_unconfined_with_a_warning(places) -> None:
    workspace, outside = places
    missing = SandboxSupport(0, "Landlock is unavailable: built without it")
    sandbox = Sandbox("workspace-write", str(workspace), support=lambda: missing)
    assert sandbox.warning.startswith("commands run unconfined: Landlock is unavailable")
    outcome = await SubprocessRunner(sandbox=sandbox).run(
        ProcessSpec(f"echo x > {outside}/written.txt", cwd=str(workspace), timeout=30)
    )
    assert outcome.unwrap().exit_code == 0 and (outside / "written.txt").exists()


ROOT = os.geteuid() == 0
TEMPORARY_FOLDERS = {"workspace": ".", "/tmp": "/tmp", "its temporary folder": '"${TMPDIR:-/tmp}"'}


@pytest.fixture
def loop_device() -> Iterator[tuple[int, int, Path]]:
    """A real block device (a loop device over a file under /var/tmp): its major and
    minor numbers and the file a write through it would change."""
    if not ROOT:
        pytest.skip("making device nodes needs root")
    backing = Path(tempfile.mkstemp(prefix="treadle-loop-", dir="/var/tmp")[1])
    backing.write_bytes(b"\0" * 65536)
    attached = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], capture_output=True, text=True, check=False
    ) if shutil.which("losetup") else None  # fmt: skip
    if attached is None or attached.returncode != 0:
        # No loop device here: loop0's numbers still name a block device the kernel
        # knows, and mknod is what is refused.
        yield 7, 0, backing
    else:
        device = attached.stdout.strip()
        numbers = os.stat(device).st_rdev
        yield os.major(numbers), os.minor(numbers), backing
        subprocess.run(["losetup", "--detach", device], check=False)
    backing.unlink()


@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
@pytest.mark.parametrize("place", list(TEMPORARY_FOLDERS), ids=list(TEMPORARY_FOLDERS))
async def test_a_command_run_as_root_cannot_make_a_device_node_in_any_folder_it_may_write(
    places, loop_device, mode: SandboxMode, place: str
) -> None:
    workspace, _ = places
    major, minor, backing = loop_device
    folder = TEMPORARY_FOLDERS[place]
    name = f"treadle-node-{os.urandom(4).hex()}"
    result = await run(
        f"cd {folder} && pwd && mknod {name}-char c 1 3; mknod {name}-block b {major} {minor}; "
        f"printf escaped > {name}-block; ls -l {name}-* 2>&1; rm -f {name}-*",
        workspace,
        mode,
    )
    where = result.output.splitlines()[0]
    assert result.output.count("mknod: ") == 2, result.output  # both refused
    assert "Operation not permitted" in result.output or DENIED in result.output
    assert not any(Path(where).glob(f"{name}-*")), result.output  # noqa: ASYNC240
    assert b"escaped" not in backing.read_bytes()  # the disk is untouched


def test_a_session_builds_its_ruleset_once_and_again_for_a_folder_made_anew(places) -> None:
    workspace, outside = places
    extra = outside / "extra"
    extra.mkdir()
    sandbox = Sandbox("workspace-write", str(workspace), writable=[str(extra)])
    first, second = (sandbox.launch().unwrap().ruleset for _ in range(2))
    assert first is not None and first is second and first.fd >= 0
    extra.rmdir()
    extra.mkdir()  # another inode: the rule for the old one would not let it be written
    third = sandbox.launch().unwrap().ruleset
    assert third is not None and third is not first and first.fd == -1
    assert sandbox.launch().unwrap().ruleset is third


async def test_a_folder_made_anew_between_two_commands_can_still_be_written(places) -> None:
    workspace, outside = places
    extra = outside / "extra"
    extra.mkdir()
    sandbox = Sandbox("workspace-write", str(workspace), writable=[str(extra)])
    runner = SubprocessRunner(sandbox=sandbox)
    write = ProcessSpec(f"echo ok > {extra}/f", cwd=str(workspace), timeout=30)
    assert (await runner.run(write)).unwrap().exit_code == 0
    shutil.rmtree(extra)
    extra.mkdir()
    done = (await runner.run(write)).unwrap()
    assert done.exit_code == 0, done.output


@pytest.mark.skipif(native_spawner() is None, reason="the native spawner is not built (make)")
def test_the_native_spawner_given_a_descriptor_that_is_no_ruleset_refuses_to_run() -> None:
    spawner = native_spawner()
    assert spawner is not None
    reading, writing = os.pipe()
    done = subprocess.run(
        [spawner, PROTOCOL, str(writing), "0", "-1", "on", "-1", "0", "--", "/bin/echo", "ran"],
        stdin=subprocess.DEVNULL, pass_fds=(writing,), capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    os.close(writing)
    with os.fdopen(reading, "rb") as status:
        said = status.read().decode()
    assert done.returncode == 126 and "ran" not in done.stdout
    assert done.stderr.startswith("treadle sandbox: landlock_restrict_self:")
    assert said == done.stderr


async def test_a_spawner_that_does_not_run_here_leaves_commands_to_the_python_helper(
    places, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, outside = places
    foreign = tmp_path / "treadle-spawn"  # built for another machine, or another protocol
    foreign.write_text('#!/bin/sh\nexec "$@"\n')
    foreign.chmod(0o755)
    source = tmp_path / "spawn.c"
    source.write_text("")
    os.utime(source, (0, 0))
    monkeypatch.setattr(spawner, "SPAWNER", str(foreign))
    monkeypatch.setattr(spawner, "SOURCE", str(source))
    native_spawner.cache_clear()
    try:
        assert native_spawner() is None
        result = await run(f"echo in > in.txt; echo out > {outside}/out.txt", workspace)
    finally:
        native_spawner.cache_clear()
    assert DENIED in result.output
    assert (workspace / "in.txt").exists() and not (outside / "out.txt").exists()
