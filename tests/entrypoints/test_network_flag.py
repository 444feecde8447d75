"""``--network`` and the ``sandbox_network`` keys, through the real ``treadle`` command.

No traffic leaves the machine: the allowlist refuses example.com before any address is
looked up, and the blocked turn starts no command at all."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest
from dependency_injector import providers

from tests.processes import run_treadle, treadle_env, write_script
from treadle.adapters.sandbox import probe
from treadle.adapters.sandbox.landlock import probe_seccomp
from treadle.domain.rules.network import LANDLOCK_NET_ABI
from treadle.entrypoints.acp import build_parser as acp_parser
from treadle.entrypoints.config import FLAGS, AppConfig
from treadle.entrypoints.container import Container, end_session

SUPPORT = probe()
NETWORK = SUPPORT.abi >= LANDLOCK_NET_ABI and not probe_seccomp()


def bash(command: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


@pytest.mark.slow
@pytest.mark.skipif(not NETWORK, reason="Landlock network rules (ABI 4) and seccomp needed")
def test_a_host_the_allowlist_refuses_is_one_line_on_the_screen(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text('network_allow = ["pypi.org"]\n')
    work = tmp_path / "work"
    work.mkdir()
    script = write_script(
        tmp_path,
        bash("curl -sS -f --max-time 5 https://example.com/; echo curl exit $?"),
        {"text": ["done"]},
    )
    result = run_treadle(
        "--print", "--network", "allowlist", "--model", f"script:{script}", "go",
        cwd=work, env=treadle_env(home),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("network: example.com not allowed") == 1, result.stdout
    assert "curl exit 0" not in result.stdout


WITHOUT_LANDLOCK = """
import ctypes, os, sys
# A kernel without Landlock, as far as treadle can tell: landlock_create_ruleset (444 on
# every architecture) answers ENOSYS, through a seccomp filter inherited by treadle.
program = (ctypes.c_uint64 * 4)(
    0x00000000_00000020,                      # ld [0]: the system call
    0x000001BC_01000015,                      # jeq 444, +0, +1
    0x00050026_00000006,                      # ret ERRNO(ENOSYS)
    0x7FFF0000_00000006,                      # ret ALLOW
)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0
assert libc.prctl(22, 2, ctypes.byref(Fprog(4, ctypes.addressof(program))), 0, 0) == 0
os.execv(sys.executable, [sys.executable, "-m", "treadle", *sys.argv[1:]])
"""


def test_a_network_mode_the_kernel_cannot_give_blocks_the_turn_with_exit_3(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = write_script(tmp_path, bash("touch ran"), {"text": ["done"]})
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_LANDLOCK, "--print", "--network", "off",
         "--model", f"script:{script}", "go"],
        cwd=work, env=treadle_env(tmp_path), capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 3, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith(
        "Turn blocked: sandbox_network = off was asked for, but Landlock is unavailable: "
        "the kernel was built without Landlock (or a seccomp filter hides it) "
        f"(kernel {platform.release()})"
    ), last
    assert not (work / "ran").exists()


def test_a_network_flag_that_is_no_mode_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_treadle("--network", "sometimes", "hi", cwd=tmp_path, env=treadle_env(tmp_path))
    assert result.returncode == 2
    assert "--network: invalid choice: 'sometimes'" in result.stderr
    assert "Traceback" not in result.stderr


def test_treadle_acp_passes_network_through_as_the_configuration_key() -> None:
    args = acp_parser().parse_args(["--network", "allowlist", "--sandbox", "read-only"])
    assert (args.sandbox_network, args.sandbox) == ("allowlist", "read-only")
    assert "sandbox_network" in FLAGS


@pytest.mark.skipif(not NETWORK, reason="Landlock network rules (ABI 4) and seccomp needed")
async def test_the_session_end_stops_its_own_proxy_and_no_other(tmp_path: Path) -> None:
    app = AppConfig(workspace=str(tmp_path)).with_values(
        {"sandbox_network": "allowlist", "network_allow": ("pypi.org",)}, "test"
    )
    ended, going_on = Container(), Container()
    for container in (ended, going_on):
        container.app.override(providers.Object(app))
        container.state_dir.override(providers.Object(str(tmp_path / "state")))
    launches = [container.sandbox().launch().unwrap() for container in (ended, going_on)]
    proxies = [launch.proxy for launch in launches]
    assert all(proxy is not None and proxy.running for proxy in proxies)
    await end_session(ended)
    assert proxies[0] is not None and not proxies[0].running
    assert proxies[1] is not None and proxies[1].running
    await end_session(going_on)
    assert not proxies[1].running
