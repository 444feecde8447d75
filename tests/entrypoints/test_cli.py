"""The ``treadle`` command, run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import run_treadle, treadle_env, write_script


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    return treadle_env(tmp_path)


def test_version_loads_no_http_stack_terminal_library_or_container(tmp_path):
    code = (
        "import sys\n"
        "from treadle.entrypoints.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('httpx', 'blessed', 'dependency_injector') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=treadle_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.splitlines() == ["treadle 0.1.0", "[]"]


def test_the_container_loads_without_the_integrations_dependency_injector_probes_for():
    code = (
        "import sys, importlib.util\n"
        "import treadle.entrypoints.container\n"
        "names = ('pydantic', 'starlette', 'yaml')\n"
        "print(sorted(n for n in names if n in sys.modules))\n"
        "for n in names:\n"
        "    if importlib.util.find_spec(n) is not None:\n"
        "        __import__(n)\n"
        "        print(n)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=treadle_env(), capture_output=True, text=True, check=True
    )
    loaded, *importable_after = result.stdout.splitlines()
    assert loaded == "[]"
    # The test environment has all three (the MCP SDK and Ray bring them): each still
    # imports afterwards, for whoever needs it.
    assert importable_after == ["pydantic", "starlette", "yaml"]


@pytest.mark.parametrize(
    ("first", "loaded"),
    [
        ({"text": ["hello"]}, "False"),
        ({"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]}, "True"),
    ],
)
def test_the_process_adapters_load_with_the_first_command(tmp_path, home, first, loaded):
    script = write_script(tmp_path, first, {"text": ["done"]})
    code = (
        "import sys\n"
        "from treadle.entrypoints.cli import main\n"
        f"try:\n    main(['--print', '--model', 'script:{script}', 'hi'])\n"
        "except SystemExit as done:\n    assert done.code == 0, done.code\n"
        "print('treadle.adapters.process' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=home, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["Turn finished", loaded]


def test_help_names_the_options_of_the_spec(tmp_path, home):
    result = run_treadle("--help", cwd=tmp_path, env=home)
    for option in (
        "--model",
        "--base-url",
        "--approval",
        "--workspace",
        "--print",
        "--json",
        "--resume",
        "--version",
    ):
        assert option in result.stdout


def test_no_model_configured_blocks_the_turn_with_exit_3(tmp_path, home):
    result = run_treadle("do something", cwd=tmp_path, env=home)
    assert result.returncode == 3
    assert result.stdout.strip().splitlines()[-1].startswith("Turn blocked: no model configured")


def test_a_scripted_turn_runs_real_bash_and_finishes(tmp_path, home):
    script = tmp_path / "turn.json"
    script.write_text(
        json.dumps(
            {
                "responses": [
                    {
                        "tool_calls": [
                            {"name": "bash", "arguments": {"command": "echo made > out.txt"}}
                        ]
                    },
                    {"text": ["Wrote ", "out.txt."]},
                ]
            }
        )
    )
    result = run_treadle(
        "--model", f"script:{script}", "--print", "write a file", cwd=tmp_path, env=home
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.txt").read_text() == "made\n"
    lines = result.stdout.splitlines()
    assert lines[0] == "Task: write a file"
    assert "Wrote out.txt." in result.stdout
    assert lines[-1] == "Turn finished"
    assert "\x1b" not in result.stdout


@pytest.mark.slow
def test_the_demo_shows_every_behaviour_of_the_loop_and_finishes(tmp_path, home):
    (tmp_path / "a.py").write_text("print('hi')\n")
    result = run_treadle("--model", "demo", "--approval", "auto", "show me", cwd=tmp_path, env=home)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for shown in (
        "Task: show me",
        "Plan:",
        "→ bash: ls -la",
        "retrying in 1 s — connection reset by peer, attempt 2 of 3",
        "[agent-1] started",
        "[agent-1] running bash: sleep 30",
        "[agent-1] deadline",
        "answer cut at 40 of its 8,192 tokens, not by the context window; continuing",
        "it was stopped at its deadline and reported back",
    ):
        assert shown in out, shown
    assert out.splitlines()[-1] == "Turn finished"
