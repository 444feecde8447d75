"""What confines a command, decided on plain values."""

from __future__ import annotations

from treadle.domain.rules.sandbox import (
    Blocked,
    Confine,
    SandboxSupport,
    Unconfined,
    cache_environment,
    decide_sandbox,
    writable_folders,
)

LANDLOCK = SandboxSupport(7)
NONE = SandboxSupport(0, "Landlock is unavailable: not enabled at boot")


def test_a_kernel_with_landlock_confines_every_mode_but_off() -> None:
    assert decide_sandbox("workspace-write", False, LANDLOCK) == Confine("workspace-write")
    assert decide_sandbox("read-only", True, LANDLOCK) == Confine("read-only")
    assert decide_sandbox("off", True, LANDLOCK) == Unconfined("")


def test_an_explicit_sandbox_the_kernel_cannot_give_blocks_naming_why() -> None:
    decision = decide_sandbox("workspace-write", True, NONE)
    assert decision == Blocked(
        "sandbox = workspace-write was asked for, but Landlock is unavailable: not enabled at boot"
    )


def test_the_default_without_landlock_warns_and_runs_unconfined() -> None:
    decision = decide_sandbox("workspace-write", False, NONE)
    assert isinstance(decision, Unconfined)
    assert decision.warning.startswith("commands run unconfined: Landlock is unavailable")
    assert decide_sandbox("off", False, NONE) == Unconfined("")  # off says nothing


def test_workspace_write_lets_commands_write_the_workspace_temp_extra_and_cache() -> None:
    folders = writable_folders(
        "workspace-write", "/src", temporary=("/tmp", "/tmp"), extra=("/opt/x",), cache="/c"
    )
    assert folders == ("/src", "/tmp", "/opt/x", "/c")


def test_read_only_lets_commands_write_only_their_own_scratch_folder() -> None:
    assert writable_folders("read-only", "/src", temporary=("/tmp",), scratch="/tmp/s1") == (
        "/tmp/s1",
    )
    assert writable_folders("read-only", "/src") == ()
    assert writable_folders("off", "/src", temporary=("/tmp",)) == ()


def test_package_caches_point_into_treadles_folder_unless_the_user_chose_theirs() -> None:
    variables = cache_environment("/state/cache/ab", ["PIP_CACHE_DIR", "PATH"])
    assert "PIP_CACHE_DIR" not in variables
    assert variables["npm_config_cache"] == "/state/cache/ab/npm"
    assert variables["XDG_CACHE_HOME"] == "/state/cache/ab/xdg"
