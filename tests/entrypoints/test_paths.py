"""Where treadle keeps its own files, and the one log's name inside and outside a session."""

from __future__ import annotations

from pathlib import Path

import pytest

from treadle.entrypoints import cli, paths


def test_the_folders_come_from_the_environment_when_it_names_them(tmp_path: Path) -> None:
    environ = {"TREADLE_STATE_DIR": str(tmp_path / "s"), "TREADLE_CONFIG_DIR": str(tmp_path / "c")}
    assert paths.state_dir(environ) == tmp_path / "s"
    assert paths.sessions_dir(environ) == tmp_path / "s" / "sessions"
    assert paths.user_config_path(environ) == tmp_path / "c" / "config.toml"
    assert paths.trusted_folders_path(environ) == tmp_path / "c" / "trusted-folders"
    assert paths.cache_dir("", "k") == ""


def test_a_bug_outside_a_session_leaves_its_traceback_in_the_state_folders_treadle_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TREADLE_STATE_DIR", str(tmp_path))
    code = 0
    try:
        raise RuntimeError("a bug at start-up")
    except RuntimeError as bug:
        code = cli._bug_outside_a_turn(bug)
    assert code == 1
    log = tmp_path / "treadle.log"
    assert "RuntimeError: a bug at start-up" in log.read_text()
    assert f"(traceback in {log})" in capsys.readouterr().err
