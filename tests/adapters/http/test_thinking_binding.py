"""Thinking blocks bound to their prefix (Anthropic's "preserved thinking"): treadle
edits what it sends back (pruned results, compactions), so it asks the API to drop a
block whose prefix changed, for the models known to bind and for any that refuses."""

from __future__ import annotations

from tests.adapters.http.server import Reply, ScriptedServer
from tests.adapters.http.support import KEY, anthropic_text_stream
from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal
from treadle.adapters.http_model import AnthropicModel
from treadle.adapters.http_model.anthropic import BINDING_BETA
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.values.outcome import OutcomeKind

BOUND = (
    "messages.5.content.0: Invalid `signature` in `thinking` block. The block is bound to a"
    " different conversation. Remove the block, or set"
    ' `thinking.block_binding.prefix_mismatch_behavior` to "drop_block". That setting'
    " requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` header."
)
REFUSAL = {"type": "error", "error": {"type": "invalid_request_error", "message": BOUND}}
DROP = {"prefix_mismatch_behavior": "drop_block"}


def agent_on(server: ScriptedServer, model: str) -> Agent:
    claude = AnthropicModel(model=model, base_url=server.base_url, api_key=KEY)
    clock = FakeClock()
    ports = TurnPorts(claude, clock, FakeRunner(clock), RecordingTerminal())
    return Agent(ports, TurnSettings(), core_tools())


def binding(server: ScriptedServer, index: int) -> tuple[object, str | None]:
    seen = server.requests[index]
    return seen.json().get("thinking", {}).get("block_binding"), seen.headers.get("anthropic-beta")


async def test_a_refusal_of_a_bound_block_is_answered_by_the_same_request_asking_to_drop_it(
    server: ScriptedServer,
) -> None:
    server.add(
        Reply.error(400, REFUSAL),
        Reply.sse(anthropic_text_stream(["Done."])),
        Reply.sse(anthropic_text_stream(["Again."])),
    )
    agent = agent_on(server, "claude-sonnet-5-5")
    assert (await agent.run_turn("go")).kind is OutcomeKind.FINISHED
    assert binding(server, 0) == (None, None)
    assert server.requests[1].json()["messages"] == server.requests[0].json()["messages"]
    assert binding(server, 1) == (DROP, BINDING_BETA)
    # The rest of the session asks so from the start: no second refusal.
    assert (await agent.run_turn("and again")).kind is OutcomeKind.FINISHED
    assert binding(server, 2) == (DROP, BINDING_BETA)
    assert len(server.requests) == 3


async def test_a_model_known_to_bind_its_blocks_is_asked_from_the_first_request(
    server: ScriptedServer,
) -> None:
    server.add(Reply.sse(anthropic_text_stream(["Done."])))
    agent = agent_on(server, "claude-fable-5-1")
    assert (await agent.run_turn("go")).kind is OutcomeKind.FINISHED
    assert binding(server, 0) == (DROP, BINDING_BETA)


async def test_a_refusal_that_persists_with_the_setting_fails_the_turn_once(
    server: ScriptedServer,
) -> None:
    server.add(Reply.error(400, REFUSAL), Reply.error(400, REFUSAL))
    outcome = await agent_on(server, "claude-sonnet-5-5").run_turn("go")
    assert outcome.kind is OutcomeKind.FAILED and "bound to a different" in outcome.detail
    assert len(server.requests) == 2  # asked once more, with the setting; not again


async def test_other_refusals_and_other_models_are_sent_as_they_were(
    server: ScriptedServer,
) -> None:
    other = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    server.add(Reply.error(400, other))
    outcome = await agent_on(server, "claude-sonnet-4-5").run_turn("go")
    assert outcome.kind is OutcomeKind.FAILED
    assert len(server.requests) == 1 and binding(server, 0) == (None, None)
