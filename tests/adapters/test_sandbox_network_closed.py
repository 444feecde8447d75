"""A network mode the kernel cannot give: refused where asked for, a warning where only
the default. The kernel is a stand-in here (an old Landlock ABI, no seccomp), so these
run on any machine."""

from __future__ import annotations

from pathlib import Path

from treadle.adapters.process import SubprocessRunner
from treadle.adapters.sandbox import Sandbox
from treadle.domain.rules.network import NetworkPolicy
from treadle.domain.rules.sandbox import SandboxSupport
from treadle.domain.values.process import ProcessSpec


def old_kernel() -> SandboxSupport:
    return SandboxSupport(3)


def no_landlock() -> SandboxSupport:
    return SandboxSupport(0, "Landlock is unavailable: not enabled at boot")


async def test_an_explicit_network_mode_the_kernel_cannot_give_starts_nothing(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(
        "workspace-write",
        str(tmp_path),
        support=old_kernel,
        network=NetworkPolicy("off"),
        network_explicit=True,
    )
    outcome = await SubprocessRunner(sandbox=sandbox).run(
        ProcessSpec("touch ran", cwd=str(tmp_path), timeout=30)
    )
    error = outcome.failure()
    assert error.blocked
    assert error.detail == (
        "sandbox_network = off was asked for, but Landlock ABI 3 has no network rules "
        "(they need ABI 4, Linux 6.7)"
    )
    assert not (tmp_path / "ran").exists()


async def test_an_explicit_network_mode_without_a_socket_filter_starts_nothing(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(
        "off",
        str(tmp_path),
        support=lambda: SandboxSupport(7),
        seccomp=lambda: "the kernel refuses seccomp filters: Invalid argument",
        network=NetworkPolicy("allowlist", ("pypi.org",)),
        network_explicit=True,
    )
    outcome = await SubprocessRunner(sandbox=sandbox).run(
        ProcessSpec("touch ran", cwd=str(tmp_path), timeout=30)
    )
    assert outcome.failure().detail.endswith("seccomp filters: Invalid argument")
    assert not (tmp_path / "ran").exists()


def test_a_network_mode_that_is_only_a_default_warns_once_beside_the_sandbox_warning(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(
        "workspace-write", str(tmp_path), support=no_landlock, network=NetworkPolicy("off")
    )
    assert sandbox.warning == (
        "commands run unconfined: Landlock is unavailable: not enabled at boot "
        "(set sandbox = off to silence this, or an explicit sandbox to refuse commands); "
        "commands keep the network: Landlock is unavailable: not enabled at boot"
    )
    assert sandbox.launch().unwrap().network == "on"


def test_the_default_network_asks_nothing_more_of_the_kernel(tmp_path: Path) -> None:
    asked: list[str] = []

    def seccomp() -> str:
        asked.append("seccomp")
        return ""

    sandbox = Sandbox("off", str(tmp_path), support=no_landlock, seccomp=seccomp)
    assert sandbox.warning == ""
    launch = sandbox.launch().unwrap()
    assert launch.network == "on" and launch.ruleset is None and asked == []
