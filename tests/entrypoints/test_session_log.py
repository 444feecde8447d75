"""The session's treadle.log: a bug ends the turn with its line, the log keeps the rest."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from dependency_injector import providers

from treadle.adapters.fakes import (
    FakeClock,
    FakeRunner,
    RecordingTerminal,
    ScriptedModel,
    ScriptedResponse,
)
from treadle.adapters.secrets.redact import Redactor
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.outcome import FailureKind, OutcomeKind
from treadle.domain.values.tools import Access, ToolOutcome
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.container import Container

SECRET = "s3cr3t-value-of-the-key-123"


class ExplodingTool:
    spec = ToolSpec("explode", "raises", {"type": "object", "properties": {}})
    access: Access = "none"

    def describe(self, arguments: object) -> str:
        return "boom"

    async def run(self, arguments: object, context: object) -> ToolOutcome:
        return explode_with_the_key()


def explode_with_the_key() -> ToolOutcome:
    raise RuntimeError(f"could not use {SECRET}")


def session(tmp_path: Path, script: list[ScriptedResponse], **config: str) -> Container:
    clock = FakeClock()
    container = Container()
    app = AppConfig(model="demo", workspace=str(tmp_path), **config)  # type: ignore[arg-type]
    container.app.override(providers.Object(app))
    container.session_dir.override(providers.Object(str(tmp_path / "sessions" / "s1")))
    container.clock.override(providers.Object(clock))
    container.model.override(providers.Object(ScriptedModel(script, clock)))
    container.runner.override(providers.Object(FakeRunner(clock)))
    container.terminal.override(providers.Object(RecordingTerminal()))
    container.tools.override(providers.Object([ExplodingTool()]))
    container.redactor.override(providers.Object(Redactor([SECRET])))
    return container


async def test_a_tool_that_raises_fails_the_turn_and_leaves_its_traceback_redacted_in_the_log(
    tmp_path: Path,
) -> None:
    container = session(tmp_path, [ScriptedResponse.calling("explode")])
    try:
        outcome = await container.agent().run_turn("go")
    finally:
        container.shutdown_resources()
    log = tmp_path / "sessions" / "s1" / "treadle.log"
    assert (outcome.kind, outcome.reason) == (OutcomeKind.FAILED, FailureKind.INTERNAL)
    assert outcome.screen_line.startswith("Turn failed: InternalError: RuntimeError: could not")
    assert outcome.screen_line.endswith(f"(traceback in {log})")
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert "explode_with_the_key" in text  # the frame that raised
    assert SECRET not in text and "[redacted]" in text
    screen = container.terminal()
    assert isinstance(screen, RecordingTerminal)
    assert all(SECRET not in repr(event) for event in screen.events)


async def test_debug_adds_each_request_and_tool_to_the_log(tmp_path: Path) -> None:
    container = session(
        tmp_path,
        [ScriptedResponse.calling("bash", command="true"), ScriptedResponse.saying("done")],
        log_level="debug",
    )
    from treadle.domain.loop.turn import core_tools

    container.tools.override(providers.Object(core_tools()))
    try:
        outcome = await container.agent().run_turn("go")
    finally:
        container.shutdown_resources()
    assert outcome.kind is OutcomeKind.FINISHED
    text = (tmp_path / "sessions" / "s1" / "treadle.log").read_text()
    assert "main request 1 attempt 1 ended after" in text
    assert "tool bash started: true" in text


async def test_without_debug_a_turn_that_goes_well_writes_no_log(tmp_path: Path) -> None:
    container = session(tmp_path, [ScriptedResponse.saying("done")])
    try:
        await container.agent().run_turn("go")
    finally:
        container.shutdown_resources()
    assert not (tmp_path / "sessions" / "s1" / "treadle.log").exists()
    assert logging.getLogger("treadle").handlers == [
        h for h in logging.getLogger("treadle").handlers if isinstance(h, logging.NullHandler)
    ]


@pytest.fixture(autouse=True)
def _quiet_root_logger(caplog: pytest.LogCaptureFixture) -> None:
    """pytest's own capture handler sits on the root logger; nothing here needs it."""
    caplog.set_level(logging.CRITICAL + 1)
