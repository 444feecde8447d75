"""``notify = ["cmd", "args"]`` (issue 23): the command runs when a turn ends, with the
event as JSON for its last argument, as Codex runs one; notification hooks fire too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.entrypoints.test_workflow_skills import session, user_folders
from treadle.adapters.fakes import ScriptedModel, ScriptedResponse
from treadle.entrypoints.container import end_session, start_session

__all__ = ["user_folders"]  # autouse: the user's folders are the test's own


async def test_a_notify_command_gets_the_turn_s_end_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-4f8a9c2e71")
    workspace = tmp_path / "work"
    workspace.mkdir()
    out = workspace / "event.json"
    command = ("sh", "-c", f'printf %s "$0" > {out}')
    hook = f"cat > {workspace / 'hook.json'}"
    hooks = {"Notification": [{"matcher": "", "hooks": [{"type": "command", "command": hook}]}]}
    model = ScriptedModel([ScriptedResponse.saying("Done. Used tok-4f8a9c2e71.")])
    container, _ = session(workspace, model, notify=command, hooks=hooks)
    agent = await start_session(container)
    await agent.run_turn("go")
    await agent.hooks.settle()
    await end_session(container)
    event = json.loads(out.read_text())
    assert event["type"] == "agent-turn-complete" and event["treadle-event"] == "turn_ended"
    assert event["message"] == "Turn finished"
    assert "tok-4f8a9c2e71" not in out.read_text()  # redacted, as on the screen
    assert event["last-assistant-message"].startswith("Done. Used ")
    told = json.loads((workspace / "hook.json").read_text())
    assert told["hook_event_name"] == "Notification"
    assert told["notification_type"] == "turn_ended"


async def test_notify_false_starts_nothing(tmp_path: Path) -> None:
    container, _ = session(tmp_path, ScriptedModel([]), notify=False)
    assert container.notifier() is None
    container, _ = session(tmp_path, ScriptedModel([]))
    assert container.notifier() is None  # headless: no terminal to ring
