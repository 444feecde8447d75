"""An answer that stops for a reason other than answering is said so, on a real socket."""

from __future__ import annotations

import pytest

from tests.adapters.http.server import Reply, ScriptedServer
from tests.adapters.http.support import KEY, anthropic_text_stream, openai_text_stream
from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.values.events import Notice
from treadle.domain.values.outcome import OutcomeKind
from treadle.ports.model import Model


async def notices_of(model: Model) -> list[Notice]:
    clock = FakeClock()
    terminal = RecordingTerminal()
    agent = Agent(
        TurnPorts(model, clock, FakeRunner(clock), terminal), TurnSettings(), core_tools()
    )
    outcome = await agent.run_turn("go")
    assert outcome.kind is OutcomeKind.FINISHED
    assert terminal.answer_text() == "Part of it"  # what was shown stays the answer
    return terminal.of_type(Notice)


@pytest.mark.parametrize(
    ("finish", "says"),
    [
        ("content_filter", "the model refused"),
        ("eos_but_stranger", "a reason treadle does not know (eos_but_stranger)"),
    ],
)
async def test_a_chat_answer_stopped_by_a_filter_or_an_unknown_reason_is_said_so(
    server: ScriptedServer, finish: str, says: str
) -> None:
    server.add(Reply.sse(openai_text_stream(["Part", " of it"], finish=finish)))
    model = OpenAIChatModel(model="m", base_url=f"{server.base_url}/v1", api_key=None)
    [notice] = await notices_of(model)
    assert notice.kind == "answer_ended" and says in notice.text


@pytest.mark.parametrize(
    ("stop", "says"), [("refusal", "the model refused"), ("pause_turn", "(pause_turn)")]
)
async def test_an_anthropic_answer_that_stops_unusually_is_said_so(
    server: ScriptedServer, stop: str, says: str
) -> None:
    server.add(Reply.sse(anthropic_text_stream(["Part", " of it"], stop=stop)))
    model = AnthropicModel(model="claude-test", base_url=server.base_url, api_key=KEY)
    [notice] = await notices_of(model)
    assert says in notice.text


async def test_an_answer_that_ends_as_answers_do_says_nothing_more(server: ScriptedServer) -> None:
    server.add(Reply.sse(openai_text_stream(["Part", " of it"])))
    model = OpenAIChatModel(model="m", base_url=f"{server.base_url}/v1", api_key=None)
    assert await notices_of(model) == []
