"""Every bound the README states holds, within its own slack, when something tries to
exceed it (issue 20: "no bound in the README is off by more than its own slack in any
test that tries to exceed it").

Each row is one bound: the README's words for it (checked to be in the README, so a
bound the README changes fails here until the row follows), the figure, the slack and
why there is one, and a probe that feeds the real code more than the bound and says
how much came out. Slack is never a proportion: it is what the README itself allows
past the figure (the line that says what was left out, the kill that follows a
deadline), stated in bytes, characters, lines or seconds.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.processes import ROOT
from treadle.adapters.fakes import (
    FakeClock,
    FakeProcess,
    FakeRunner,
    FakeWindow,
    ScriptedModel,
    SilentTerminal,
)
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.http_model.body import BodyTooLarge, BoundedBody
from treadle.adapters.http_model.openai_responses import responses_input
from treadle.adapters.http_model.sse import EventTooLong, SseParser
from treadle.adapters.instructions import read_instructions
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.process.spill import settle
from treadle.adapters.secrets.redact import EventRedactor, Redactor
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.rules.diffs import bounded_diff
from treadle.domain.rules.history import History
from treadle.domain.rules.limits import SpendingLimits
from treadle.domain.values.conversation import Message, Reasoning, ToolCall
from treadle.domain.values.events import AnswerDelta
from treadle.domain.values.model import ModelRequest
from treadle.domain.values.process import ProcessSpec
from treadle.domain.values.tools import ToolLimits
from treadle.entrypoints.config_schema import AppConfig

README = (ROOT / "README.md").read_text(encoding="utf-8")
DEFAULTS = AppConfig()
MiB = 1 << 20


@dataclass(frozen=True)
class Bound:
    """One bound of the README: its words there, its figure, its slack and why."""

    words: str
    figure: float
    slack: float
    why: str
    probe: Callable[[Path], float]
    """Feeds more than the bound through the real code; how much came out."""


# The probes --------------------------------------------------------------------------


def _last_tool_result(model: ScriptedModel) -> str:
    results = [m for m in model.requests[-1].messages if m.role == "tool"]
    return results[-1].text


def _turn(tmp_path: Path, call: R, runner: object, limits: ToolLimits) -> ScriptedModel:
    clock = FakeClock()
    model = ScriptedModel([call, R.saying("done")], clock)
    ports = TurnPorts(model, clock, runner, SilentTerminal())  # type: ignore[arg-type]
    settings = TurnSettings(workspace=str(tmp_path), session_dir=str(tmp_path), limits=limits)
    outcome = asyncio.run(Agent(ports, settings, core_tools(), subagents=False).run_turn("go"))
    assert outcome.exit_code == 0, outcome.screen_line
    return model


def command_output_the_model_reads(tmp_path: Path) -> float:
    """A command printing 2 MB (of bytes that are not UTF-8: each could become three),
    through the bash tool and the real runner: the bytes of the result the model reads."""
    limits = ToolLimits(output_limit=DEFAULTS.output_limit)
    call = R.calling("bash", command="head -c 2000000 /dev/urandom")
    model = _turn(tmp_path, call, SubprocessRunner(), limits)
    return len(_last_tool_result(model).encode())


def deadline_a_command_may_ask_for(tmp_path: Path) -> float:
    """A call asking for a deadline of a billion seconds: the deadline it runs with."""
    clock = FakeClock()
    runner = FakeRunner(clock)
    limits = ToolLimits(DEFAULTS.tool_timeout, DEFAULTS.tool_timeout_max)
    _turn(tmp_path, R.calling("bash", command="sleep 1", timeout=10**9), runner, limits)
    return runner.specs[0].timeout


def seconds_past_a_deadline(tmp_path: Path) -> float:
    """A command that ignores SIGTERM and sleeps past a 0.3 s deadline: how long after
    the deadline its run ended."""
    deadline = 0.3
    spec = ProcessSpec("trap '' TERM; sleep 30", cwd=str(tmp_path), timeout=deadline)
    started = time.monotonic()
    result = asyncio.run(SubprocessRunner(grace=0.5).run(spec)).unwrap()
    assert result.timed_out
    return time.monotonic() - started - deadline


def saved_output(tmp_path: Path) -> float:
    """A command printing 66 MiB: the bytes of its saved output."""
    spec = ProcessSpec(
        "head -c 69206016 /dev/zero | tr '\\0' x",
        cwd=str(tmp_path),
        timeout=60,
        spill_dir=str(tmp_path),
    )
    result = asyncio.run(SubprocessRunner().run(spec)).unwrap()
    settle()
    assert result.full_output_path is not None and result.omitted_bytes > 0
    return os.path.getsize(result.full_output_path)


def _held_back(redactor: Redactor, text: str, piece: int = 7) -> int:
    """The most characters a stream of ``text`` (in pieces) held back at once."""
    redacting = EventRedactor(redactor)
    fed = shown = most = 0
    for at in range(0, len(text), piece):
        fed += len(text[at : at + piece])
        for event in redacting.process(AnswerDelta(text[at : at + piece])):
            assert isinstance(event, AnswerDelta)
            shown += len(event.text)
        most = max(most, fed - shown)
    return most


def held_back_of_a_stream(tmp_path: Path) -> float:
    """Answers whose end keeps looking like the start of a key shape or of a URL's
    password, 3,000 characters long: the most held back."""
    redactor = Redactor.from_environ({})
    key_like = "see sk-" + "a" * 3000 + " done"
    password_like = "https://bob:" + "p" * 3000 + "@host"
    return max(_held_back(redactor, key_like), _held_back(redactor, password_like))


def held_back_of_a_long_secret(tmp_path: Path) -> float:
    """An answer that repeats the first 1,500 characters of a 2,000-character secret:
    held back beyond 512 (a secret is never shown in part), by at most the secret."""
    secret = "Z9" * 1000
    redactor = Redactor.from_environ({"MY_TOKEN": secret})
    return _held_back(redactor, "here: " + secret[:1500] + ".") - len(secret)


def project_instructions(tmp_path: Path) -> float:
    """400 nested folders, each with a 2-byte AGENTS.md (their paths alone pass the
    cap; deeper would be more than a recursive removal of the folder can take): the
    bytes of the text sent, paths and heading included."""
    (tmp_path / ".git").mkdir()
    folder = tmp_path
    for _ in range(400):
        folder = folder / "d"
        folder.mkdir()
        (folder / "AGENTS.md").write_text("x\n")
    instructions = read_instructions(str(folder), user_folder=None)
    assert len(instructions.files) == 400  # every file was found, whatever was sent
    return len(instructions.text.encode())


def encrypted_reasoning_sent_back(tmp_path: Path) -> float:
    """Twelve answers with 300 kB of encrypted reasoning each: the bytes of it that the
    next Responses request sends back."""
    history = History()
    history.append(Message("user", "go"))
    for number in range(12):
        item = {"type": "reasoning", "id": f"r{number}", "summary": []}
        item["encrypted_content"] = "e" * 300_000
        reasoning = Reasoning("reasoning_item", seal=json.dumps(item))
        call = ToolCall(f"c{number}", "bash", '{"command": "true"}')
        history.append(Message("assistant", tool_calls=(call,), reasoning=(reasoning,)))
        history.append(Message("tool", "ok", tool_call_id=f"c{number}"))
    body = responses_input(ModelRequest("", history.messages, (), 100))
    return sum(len(json.dumps(i)) for i in body if i.get("type") == "reasoning")


def decoded_answer(tmp_path: Path) -> float:
    """A gzip body of a few kilobytes that expands past 64 MiB: the bytes decoded
    before the answer is stopped."""
    bomb = gzip.compress(b"data: " + b"x" * (DEFAULTS.answer_limit + MiB) + b"\n\n")
    body = BoundedBody("gzip", DEFAULTS.answer_limit)
    decoded = 0
    try:
        for at in range(0, len(bomb), 16_384):
            for piece in body.feed(bomb[at : at + 16_384]):
                decoded += len(piece)
    except BodyTooLarge:
        return decoded
    raise AssertionError("the answer was never stopped")


CHUNK = 65_536
"""The most a read from the server's socket gives at once (the slack of event_limit)."""


def one_event(tmp_path: Path) -> float:
    """A stream whose one event grows past 16 MiB without ending: the bytes held when
    it is stopped."""
    parser = SseParser(max_event=DEFAULTS.event_limit)
    line = b"data: " + b"y" * CHUNK
    held = 0
    try:
        while held < 2 * DEFAULTS.event_limit:
            held += CHUNK  # held by the parser once fed
            parser.feed(line[:CHUNK])
    except EventTooLong:
        return held
    raise AssertionError("the event was never stopped")


def diff_kept(tmp_path: Path) -> float:
    """A diff of 6,000 lines: the lines kept with the tool's result."""
    diff = "".join(f"+line {n}\n" for n in range(6000))
    return len(bounded_diff(diff).splitlines())


def diff_line_kept(tmp_path: Path) -> float:
    """A diff line of 50,000 characters (a minified file): the characters kept of it."""
    diff = "+" + "z" * 50_000 + "\n"
    return max(map(len, bounded_diff(diff).splitlines()))


WINDOW = 16_384


def result_on_a_small_window(tmp_path: Path) -> float:
    """A command printing 140 kB on a 16,384-token window: the bytes of its result."""
    clock = FakeClock()
    log = "2025-01-01 12:00:00 service=api status=ok latency=12ms path=/v1/things\n" * 2000
    script = [R.calling("bash", command="cat app.log"), R.saying("done")]
    model = ScriptedModel(script, clock, window=FakeWindow(WINDOW))
    runner = FakeRunner(clock, lambda command: FakeProcess(log))
    ports = TurnPorts(model, clock, runner, SilentTerminal(), server=model)
    outcome = asyncio.run(
        Agent(ports, TurnSettings(), core_tools(), subagents=False).run_turn("go")
    )
    assert outcome.exit_code == 0, outcome.screen_line
    return len(_last_tool_result(model).encode())


def requests_of_a_limited_turn(tmp_path: Path) -> float:
    """A model that calls a tool in every answer, under ``--max-requests 3``: the
    requests sent."""
    clock = FakeClock()
    model = ScriptedModel([R.calling("bash", command="true")] * 10 + [R.saying("done")], clock)
    ports = TurnPorts(model, clock, FakeRunner(clock), SilentTerminal())
    settings = TurnSettings(spending=SpendingLimits(requests=3))
    outcome = asyncio.run(Agent(ports, settings, core_tools(), subagents=False).run_turn("go"))
    assert outcome.screen_line.startswith("Turn blocked: spending limit reached")
    return len(model.requests)


BOUNDS = {
    "output_limit": Bound(
        "output_limit = 30000              # bytes of a command's output the model sees",
        DEFAULTS.output_limit,
        400,
        "the lines that say how the command ended and how much was left out",
        command_output_the_model_reads,
    ),
    "tool_timeout_max": Bound(
        "tool_timeout_max = 600            # and the most it may ask for",
        DEFAULTS.tool_timeout_max,
        0,
        "none: a longer deadline asked for is the most",
        deadline_a_command_may_ask_for,
    ),
    "deadline": Bound(
        "At their deadline, on Esc, or when a\ncaller stops, the whole tree goes "
        "(SIGTERM, then SIGKILL)",
        0.5,
        0.5,
        "the figure is the runner's grace between SIGTERM and SIGKILL (0.5 s here); the "
        "slack, the kill and the reaping of a loaded machine",
        seconds_past_a_deadline,
    ),
    "saved output": Bound(
        "the whole output (up to\n64 MiB, secrets redacted",
        64 * MiB,
        0,
        "none: the saved copy stops at the cap",
        saved_output,
    ),
    "held back": Bound(
        "could be the start of a secret, of a key shape or of a URL's password (at most 512\n"
        "characters",
        512,
        0,
        "none",
        held_back_of_a_stream,
    ),
    "held back, a longer secret": Bound(
        "or the secret's length, for a longer secret",
        0,
        0,
        "none: the figure is the secret's length, less nothing",
        held_back_of_a_long_secret,
    ),
    "project_instructions_limit": Bound(
        "heading included, is capped at 32 KiB (`project_instructions_limit`)",
        32 * 1024,
        0,
        "none: the note of what was left out is inside the cap",
        project_instructions,
    ),
    "encrypted reasoning": Bound(
        "a conversation sends back at most 1 MiB of them",
        MiB,
        0,
        "none: an item that does not fit is not sent",
        encrypted_reasoning_sent_back,
    ),
    "answer_limit": Bound(
        "`answer_limit`",
        DEFAULTS.answer_limit,
        0,
        "none: the piece that crosses the limit is never handed on",
        decoded_answer,
    ),
    "event_limit": Bound(
        "`event_limit`",
        DEFAULTS.event_limit,
        CHUNK,
        "one read from the socket: an event is measured as it grows",
        one_event,
    ),
    "a result's share of the window": Bound(
        "most 15 % of the window, counted at 4 bytes of output a token",
        0.15 * WINDOW * 4,
        400,
        "the lines that say how the command ended and how much was left out",
        result_on_a_small_window,
    ),
    "--max-requests": Bound(
        "`--max-requests N` (`max_requests`) | requests to the model",
        3,
        0,
        "none: the answer whose request reaches the limit ends the turn",
        requests_of_a_limited_turn,
    ),
    "diff lines": Bound(
        "2,000 lines\nat most and 2,000 characters of a line, with a line saying what is left out",
        2000,
        1,
        "the line saying what is left out",
        diff_kept,
    ),
    "diff line width": Bound(
        "2,000 characters of a line",
        2000,
        80,
        "the words saying how much of the line was cut",
        diff_line_kept,
    ),
}


def test_answer_limit_and_event_limit_default_to_what_the_hardening_said() -> None:
    """The README names the two stream bounds without their figures (issue 15 set them):
    64 MiB decompressed, 16 MiB an event."""
    assert (DEFAULTS.answer_limit, DEFAULTS.event_limit) == (64 * MiB, 16 * MiB)


@pytest.mark.parametrize("name", list(BOUNDS))
def test_a_bound_of_the_readme_holds_within_its_slack(name: str, tmp_path: Path) -> None:
    bound = BOUNDS[name]
    assert bound.words in README, f"the README no longer says {bound.words!r}"
    measured = bound.probe(tmp_path)
    assert measured <= bound.figure + bound.slack, (
        f"{name}: {measured:,} past {bound.figure:,} + {bound.slack:,} ({bound.why})"
    )
