"""Tool loops with reasoning, end to end: the real turn loop and the real adapters
against a real server that signs its reasoning and refuses the next request unless it
comes back unchanged (Anthropic's thinking blocks, DeepSeek's ``reasoning_content``,
the Responses API's encrypted items), and that counts Anthropic's cache markers."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.adapters.http.server import ScriptedServer, SeenRequest
from tests.adapters.http.support import KEY, a_request, listen
from tests.adapters.http.thinking_server import Call, Protocol, ThinkingServer
from treadle.adapters.fakes import FakeClock, FakeProcess, FakeRunner, RecordingTerminal
from treadle.adapters.http_model import (
    AnthropicModel,
    ModelOptions,
    OpenAIChatModel,
    OpenAIResponsesModel,
)
from treadle.adapters.http_model.endpoint import HttpModel
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.truncation import TokenBudget
from treadle.domain.values.conversation import Message, Reasoning
from treadle.domain.values.events import AnswerDelta, ReasoningDelta
from treadle.domain.values.model import HttpStatusError
from treadle.domain.values.outcome import FailureKind, OutcomeKind, TurnOutcome

PROTOCOLS: list[Protocol] = ["anthropic", "chat", "responses"]
COMMANDS = {"ls": FakeProcess("a.py\n"), "cat a.py": FakeProcess("print(1)\n")}
LIST = Call("call_1", "bash", {"command": "ls"})
READ = Call("call_2", "bash", {"command": "cat a.py"})


def model_for(protocol: Protocol, base_url: str, **options: object) -> HttpModel:
    chosen = ModelOptions(**options)  # type: ignore[arg-type]
    if protocol == "anthropic":
        return AnthropicModel(model="claude-test", base_url=base_url, api_key=KEY, options=chosen)
    if protocol == "chat":
        return OpenAIChatModel(
            model="deepseek-test", base_url=base_url, api_key=KEY, options=chosen
        )
    return OpenAIResponsesModel(
        model="gpt-5.1-codex", base_url=base_url, api_key=KEY, options=chosen
    )


@dataclass
class Run:
    outcome: TurnOutcome
    agent: Agent
    terminal: RecordingTerminal


async def run_loop(model: HttpModel, task: str = "What does a.py print?") -> Run:
    clock, terminal = FakeClock(), RecordingTerminal()
    settings = TurnSettings(session_dir="", budget=TokenBudget(thinking=2048))
    agent = Agent(TurnPorts(model, clock, FakeRunner(clock, COMMANDS), terminal), settings)
    return Run(await agent.run_turn(task), agent, terminal)


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> Protocol:
    return request.param  # type: ignore[no-any-return]


async def test_a_tool_loop_goes_on_because_its_reasoning_comes_back_unchanged(
    server: ScriptedServer, protocol: Protocol
) -> None:
    thinker = ThinkingServer(protocol)
    server.guard = thinker
    server.add(
        thinker.calling("I should list the folder first.", LIST),
        thinker.calling("There is a.py; reading it.", READ),
        thinker.answering("a.py prints 1.", thought="It prints 1."),
    )
    run = await run_loop(model_for(protocol, server.base_url))
    assert run.outcome.kind is OutcomeKind.FINISHED, run.outcome.screen_line
    assert thinker.refusals == []
    assert len(server.requests) == 3 and server.unscripted == 0
    # Shown apart from the answer, and never as answer text.
    shown = [e.text for e in run.terminal.events if isinstance(e, ReasoningDelta)]
    assert "".join(shown) == (
        "I should list the folder first.There is a.py; reading it.It prints 1."
    )
    assert run.terminal.answer_text() == "a.py prints 1."
    assert not any(
        "list the folder" in e.text for e in run.terminal.events if isinstance(e, AnswerDelta)
    )
    kept = [m.reasoning for m in run.agent.history.messages if m.role == "assistant"]
    assert [len(reasoning) for reasoning in kept] == [1, 1, 1]


async def test_an_anthropic_loop_sends_redacted_thinking_back_as_it_came(
    server: ScriptedServer,
) -> None:
    thinker = ThinkingServer("anthropic")
    server.guard = thinker
    server.add(
        thinker.calling("Listing.", LIST, redacted="EmE6iFbCFNUi1OtJq/opaque=="),
        thinker.answering("One file.", thought="Done."),
    )
    run = await run_loop(model_for("anthropic", server.base_url))
    assert run.outcome.kind is OutcomeKind.FINISHED, run.outcome.screen_line
    assert thinker.refusals == []
    sent = server.requests[1].json()["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["thinking", "redacted_thinking", "tool_use"]
    assert sent[1] == {"type": "redacted_thinking", "data": "EmE6iFbCFNUi1OtJq/opaque=="}


def _altered(reasoning: Reasoning) -> Reasoning:
    if reasoning.kind == "reasoning_item":
        return dataclasses.replace(reasoning, seal=reasoning.seal.replace("gAAAAAB", "gAAAAAC"))
    return dataclasses.replace(reasoning, text=reasoning.text + " (edited)")


BREAKAGES: dict[str, Callable[[tuple[Reasoning, ...]], tuple[Reasoning, ...]]] = {
    "left out": lambda reasoning: (),
    "altered": lambda reasoning: tuple(_altered(r) for r in reasoning),
}


@pytest.mark.parametrize("breakage", BREAKAGES, ids=list(BREAKAGES))
async def test_the_server_refuses_a_loop_whose_reasoning_did_not_come_back_unchanged(
    server: ScriptedServer, protocol: Protocol, breakage: str
) -> None:
    thinker = ThinkingServer(protocol)
    server.guard = thinker
    model = model_for(protocol, server.base_url)
    server.add(thinker.calling("I should list the folder first.", LIST))
    first = await listen(model.stream(a_request(messages=[Message.user("List it.")])))
    [call] = first.calls
    reasoning = BREAKAGES[breakage](tuple(first.reasoning))
    history = [
        Message.user("List it."),
        Message.assistant("", (call,), reasoning=reasoning),
        Message.tool(call.id, "a.py"),
    ]
    second = await listen(model.stream(a_request(messages=history)))
    assert isinstance(second.failure, HttpStatusError)
    assert second.failure.status in (400, 404)
    assert len(thinker.refusals) == 1
    # Unbroken, the same request goes through: the refusal was about the reasoning.
    history[1] = Message.assistant("", (call,), reasoning=tuple(first.reasoning))
    server.add(thinker.answering("One file."))
    third = await listen(model.stream(a_request(messages=history)))
    assert third.failure is None and third.text == "One file."


async def test_deepseek_refuses_a_loop_when_reasoning_content_is_switched_off(
    server: ScriptedServer,
) -> None:
    thinker = ThinkingServer("chat")
    server.guard = thinker
    server.add(thinker.calling("Listing.", LIST), thinker.answering("never sent"))
    run = await run_loop(model_for("chat", server.base_url, reasoning_echo=False))
    assert run.outcome.kind is OutcomeKind.FAILED
    assert run.outcome.reason is FailureKind.HTTP
    assert "reasoning_content" in run.outcome.detail
    assert len(thinker.refusals) == 1


async def test_a_call_made_without_thinking_still_carries_an_empty_reasoning_content(
    server: ScriptedServer,
) -> None:
    thinker = ThinkingServer("chat")
    server.guard = thinker
    server.add(thinker.calling("", LIST), thinker.answering("One file."))
    run = await run_loop(model_for("chat", server.base_url))
    assert run.outcome.kind is OutcomeKind.FINISHED, run.outcome.screen_line
    assert server.requests[1].json()["messages"][2]["reasoning_content"] == ""


# Cache markers ------------------------------------------------------------------------


async def test_cache_markers_are_never_more_than_four_and_the_head_never_changes(
    server: ScriptedServer,
) -> None:
    thinker = ThinkingServer("anthropic")
    server.guard = thinker
    calls = [Call(f"call_{n}", "bash", {"command": "ls"}) for n in range(5)]
    server.add(*(thinker.calling(f"Step {n}.", call) for n, call in enumerate(calls)))
    server.add(thinker.answering("Done five times."))
    run = await run_loop(model_for("anthropic", server.base_url))
    assert run.outcome.kind is OutcomeKind.FINISHED, run.outcome.screen_line
    assert thinker.refusals == []
    assert len(thinker.markers) == 6 and max(thinker.markers) <= 4 and min(thinker.markers) >= 2
    assert len(set(thinker.prefixes)) == 1  # the same head, byte for byte, in all six
    # The newest user message is marked in each request, and read by the next one.
    for before, after in zip(server.requests, server.requests[1:], strict=False):
        assert _marked_tail(before) in _marked_blocks(after)


def _marked_blocks(seen: SeenRequest) -> list[str]:
    return [
        str(block)
        for message in seen.json()["messages"]
        for block in message["content"]
        if "cache_control" in block
    ]


def _marked_tail(seen: SeenRequest) -> str:
    return _marked_blocks(seen)[-1]


async def test_without_markers_the_same_loop_sends_none(server: ScriptedServer) -> None:
    thinker = ThinkingServer("anthropic")
    server.guard = thinker
    server.add(thinker.calling("Step.", LIST), thinker.answering("Done."))
    run = await run_loop(model_for("anthropic", server.base_url, prompt_cache=False))
    assert run.outcome.kind is OutcomeKind.FINISHED
    assert thinker.markers == [0, 0]


def test_the_server_refuses_a_fifth_marker_and_one_on_thinking() -> None:
    thinker = ThinkingServer("anthropic")
    marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    five = {"messages": [{"role": "user", "content": [marked] * 5}]}
    on_thinking = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s", "cache_control": {}}
                ],
            },
        ]
    }
    for body in (five, on_thinking):
        assert thinker(_seen(body)) is not None
    assert (
        thinker.refusals[0] == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )


def _seen(body: object) -> SeenRequest:
    import json

    return SeenRequest(0, "POST", "/v1/messages", {}, json.dumps(body).encode())
