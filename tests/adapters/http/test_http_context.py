"""Context windows and local servers over a real socket: refusals for length as each
provider sends them, the window read from ``/props`` and ``/v1/models``, a template that
drops the tools, a cut at the window, a proxy's in-stream error, and a server that
refuses broken tool arguments (issues 10 and 16)."""

from __future__ import annotations

import io
import json

import pytest

from tests.adapters.http.local_server import (
    Refusing,
    llama_routes,
    recorded,
    refuses_bad_arguments,
    refuses_past,
)
from tests.adapters.http.server import Reply, ScriptedServer
from tests.adapters.http.support import (
    KEY,
    a_request,
    anthropic_text_stream,
    listen,
    openai_text_stream,
    stream_file,
)
from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal
from treadle.adapters.fakes.refusals import PROVIDERS, Provider, refusal_body
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel
from treadle.adapters.terminal.plain_terminal import JsonLinesTerminal, PlainTerminal
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.rules.context_window import ContextSettings
from treadle.domain.rules.history import History
from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.events import (
    ContextPruned,
    ContextWindowKnown,
    Notice,
    RetryScheduled,
    TurnEvent,
)
from treadle.domain.values.model import ContextExceeded, ContextWindow, ServerFacts
from treadle.domain.values.outcome import FailureKind, OutcomeKind
from treadle.ports.terminal import Terminal

pytestmark = pytest.mark.slow


def openai(server: ScriptedServer, name: str = "gemma") -> OpenAIChatModel:
    return OpenAIChatModel(model=name, base_url=f"{server.base_url}/v1", api_key=None)


def agent_on(
    model: OpenAIChatModel | AnthropicModel,
    terminal: Terminal | None = None,
    history: History | None = None,
) -> tuple[Agent, FakeClock, Terminal]:
    clock = FakeClock()
    screen = terminal or RecordingTerminal()
    ports = TurnPorts(model, clock, FakeRunner(clock), screen, server=model)
    return Agent(ports, TurnSettings(), core_tools(), history=history), clock, screen


def tool_call_stream(arguments: str) -> bytes:
    """A Chat Completions answer that calls ``bash`` with ``arguments`` as written."""
    call = {"index": 0, "id": "call_x", "type": "function"}
    chunks = [
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [call | {"function": {"name": "bash"}}]}}
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]},
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9}},
    ]
    return (
        b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    )


# Refusals for length -------------------------------------------------------------------


@pytest.mark.parametrize("like", PROVIDERS)
async def test_each_providers_refusal_body_is_recognised_over_the_wire(
    server: ScriptedServer, like: Provider
) -> None:
    status, body = refusal_body(like, prompt=9000, window=8192, max_tokens=1024)
    server.add(Reply.error(status, body))
    heard = await listen(openai(server).stream(a_request()))
    assert isinstance(heard.failure, ContextExceeded)
    assert heard.failure.window == (None if like == "openai-new" else 8192)


@pytest.mark.parametrize(
    "name",
    ["llamacpp_over_ctx.json", "llamacpp_np2_over_ctx.json", "litellm_over_ctx.json"],
)
async def test_a_recorded_refusal_is_recognised_by_the_chat_adapter(
    server: ScriptedServer, name: str
) -> None:
    server.add(Reply.raw(400, recorded(f"refusals/{name}")))
    heard = await listen(openai(server).stream(a_request()))
    assert heard.failure == ContextExceeded(
        heard.failure.detail if isinstance(heard.failure, ContextExceeded) else "", 2048, 3624
    )


@pytest.mark.parametrize(
    "payload",
    [
        refusal_body("anthropic", prompt=210_000, window=200_000, max_tokens=1)[1],
        json.loads(recorded("refusals/llamacpp_messages_over_ctx.json")),  # llama-server's
    ],
)
async def test_the_messages_adapter_recognises_anthropics_and_llama_servers_refusals(
    server: ScriptedServer, payload: dict[str, object]
) -> None:
    server.add(Reply.error(400, payload))
    model = AnthropicModel(model="claude-test", base_url=server.base_url, api_key=KEY)
    heard = await listen(model.stream(a_request()))
    assert isinstance(heard.failure, ContextExceeded) and heard.failure.window is not None


async def test_a_turn_against_a_refusing_server_learns_makes_room_and_finishes(
    server: ScriptedServer,
) -> None:
    # No window said anywhere: the first refusal teaches it; the turn goes on at once.
    server.guard = refusing = Refusing(refuses_past(2_500, "llama.cpp"))
    big = "x" * 4_000
    history = [Message.user("summarise the logs")]
    for number in range(6):
        call = ToolCall(f"c{number}", "bash", json.dumps({"command": f"cat {number}.log"}))
        history += [Message.assistant("Reading.", (call,)), Message.tool(call.id, big)]
    server.add(Reply.sse(openai_text_stream(["All six logs are clean."])))
    agent, clock, terminal = agent_on(openai(server), history=History(history))
    outcome = await agent.run_turn("Continue.")
    assert outcome.screen_line == "Turn finished"
    assert isinstance(terminal, RecordingTerminal)
    assert [e.window for e in terminal.of_type(ContextWindowKnown)] == [2_500]
    [pruned] = terminal.of_type(ContextPruned)
    assert len(pruned.results) == 6 and terminal.answer_text() == "All six logs are clean."
    assert len(refusing.given) == 1 and not terminal.of_type(RetryScheduled)
    assert clock.slept == []
    assert all(
        json.loads(seen.body)["messages"][1]["content"] == "summarise the logs"
        for seen in server.requests
    )


def lying_refusal(window: int, prompt: int = 120) -> dict[str, object]:
    """OpenAI's refusal for length, naming a window that cannot be the server's."""
    return {
        "error": {
            "message": f"This model's maximum context length is {window} tokens. However, "
            f"your messages resulted in {prompt} tokens. Please reduce the length of the "
            "messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def counted_stream(text: str, prompt: int) -> bytes:
    """A Chat Completions answer of ``text`` whose prompt the server counted as ``prompt``."""
    stream = openai_text_stream([text])
    return stream.replace(b'"prompt_tokens": 9', f'"prompt_tokens": {prompt}'.encode())


@pytest.mark.parametrize("window", [0, 1])
async def test_one_lying_refusal_for_length_does_not_poison_the_session(
    server: ScriptedServer, window: int
) -> None:
    # Issue 20: a gateway said the window is 0 (or 1) tokens, once; the request is sent
    # again and answered, and the next turn is sent too.
    server.add(
        Reply.sse(counted_stream("First.", 3_000)),
        Reply.error(400, lying_refusal(window)),
        Reply.sse(openai_text_stream(["Second."])),
        Reply.sse(openai_text_stream(["Third."])),
    )
    agent, _, terminal = agent_on(openai(server))
    assert (await agent.run_turn("one")).screen_line == "Turn finished"
    outcome = await agent.run_turn("two")
    assert outcome.screen_line == "Turn finished", outcome.detail
    assert (await agent.run_turn("three")).screen_line == "Turn finished"
    assert len(server.requests) == 4
    assert isinstance(terminal, RecordingTerminal)
    assert not terminal.of_type(ContextWindowKnown)
    [said] = [n for n in terminal.of_type(Notice) if n.kind == "window_not_learned"]
    assert f"the context window is {window} tokens" in said.text and "not learned" in said.text


async def test_a_window_below_a_prompt_the_server_accepted_is_not_learned(
    server: ScriptedServer,
) -> None:
    server.add(
        Reply.sse(counted_stream("First.", 3_000)),
        Reply.error(400, lying_refusal(2_048, prompt=3_100)),
        Reply.sse(openai_text_stream(["Second."])),
    )
    agent, _, terminal = agent_on(openai(server))
    await agent.run_turn("one")
    assert (await agent.run_turn("two")).screen_line == "Turn finished"
    assert isinstance(terminal, RecordingTerminal)
    assert not terminal.of_type(ContextWindowKnown)
    [said] = [n for n in terminal.of_type(Notice) if n.kind == "window_not_learned"]
    assert "below the prompt of 3,000 tokens the server accepted" in said.text


async def test_a_configured_window_wins_over_any_refusal(server: ScriptedServer) -> None:
    server.add(
        Reply.error(400, lying_refusal(1)),
        Reply.sse(openai_text_stream(["Answered."])),
        Reply.sse(openai_text_stream(["Again."])),
    )
    terminal = RecordingTerminal()
    settings = TurnSettings(context=ContextSettings(window=ContextWindow(32_768, "configuration")))
    model = openai(server)
    clock = FakeClock()
    agent = Agent(TurnPorts(model, clock, FakeRunner(clock), terminal, server=model), settings)
    assert (await agent.run_turn("one")).screen_line == "Turn finished"
    assert (await agent.run_turn("two")).screen_line == "Turn finished"
    assert [e.window for e in terminal.of_type(ContextWindowKnown)] == [32_768]
    assert server.requests[-1].json()["max_tokens"] == 8_192


# The window from the server -----------------------------------------------------------


async def test_the_window_is_read_from_llama_cpps_props(server: ScriptedServer) -> None:
    server.routes.update(llama_routes())
    facts = await openai(server).facts()
    assert facts.window == ContextWindow(2048, "llama.cpp /props default_generation_settings.n_ctx")
    assert {seen.path for seen in server.probes} == {"/props", "/v1/models"}  # side by side


async def test_the_window_is_read_from_the_models_list(server: ScriptedServer) -> None:
    server.routes["/v1/models"] = Reply.raw(200, recorded("servers/llamacpp_v1_models.json"))
    facts = await openai(server).facts()
    assert facts.window == ContextWindow(2048, "the server's /v1/models meta.n_ctx")
    server.routes["/v1/models"] = Reply.json(
        {"object": "list", "data": [{"id": "qwen", "owned_by": "vllm", "max_model_len": 65536}]}
    )
    facts = await openai(server, "qwen").facts()
    assert facts.window == ContextWindow(65536, "the server's /v1/models max_model_len")


async def test_ollama_is_asked_about_its_loaded_model_then_its_defaults(
    server: ScriptedServer,
) -> None:
    server.routes["/v1/models"] = Reply.json({"object": "list", "data": [{"id": "qwen3:8b"}]})
    server.routes["/api/ps"] = Reply.json({"models": []})
    server.routes["/api/show"] = Reply.json({"parameters": "num_ctx 16384", "model_info": {}})
    facts = await openai(server, "qwen3:8b").facts()
    assert facts.window == ContextWindow(16384, "Ollama /api/show num_ctx")
    server.routes["/api/ps"] = Reply.json(
        {"models": [{"name": "qwen3:8b", "context_length": 8192}]}
    )
    facts = await openai(server, "qwen3:8b").facts()
    assert facts.window == ContextWindow(8192, "Ollama /api/ps context_length")


async def test_a_server_that_says_nothing_gives_no_window_and_a_dead_one_no_error() -> None:
    async with ScriptedServer.running() as silent:
        assert await openai(silent).facts() == ServerFacts()
        base = silent.base_url
    gone = OpenAIChatModel(model="m", base_url=f"{base}/v1", api_key=None)
    assert await gone.facts() == ServerFacts()


async def test_a_hosted_api_is_not_asked_its_window_comes_from_the_table() -> None:
    hosted = OpenAIChatModel(model="gpt-4.1", api_key=KEY)  # api.openai.com: never reached
    assert (await hosted.facts()).window == ContextWindow(1_047_576, "known model family gpt-4.1")
    claude = AnthropicModel(model="claude-sonnet-4-5", api_key=KEY)
    assert (await claude.facts()).window == ContextWindow(200_000, "known model family claude")


async def test_a_template_that_drops_the_tools_is_warned_about_once(server: ScriptedServer) -> None:
    server.routes.update(llama_routes())  # the Gemma template: supports_tools false
    server.add(Reply.sse(openai_text_stream(["Hi."])), Reply.sse(openai_text_stream(["Again."])))
    out = io.StringIO()
    agent, _, _ = agent_on(openai(server), JsonLinesTerminal(out))
    await agent.run_turn("hello")
    await agent.run_turn("and again")
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    notices = [r for r in records if r["type"] == "notice"]
    assert len(notices) == 1
    assert notices[0]["kind"] == "tools_dropped" and "--jinja" in notices[0]["text"]
    windows = [r for r in records if r["type"] == "context_window_known"]
    assert [(w["window"], w["origin"]) for w in windows] == [
        (2048, "llama.cpp /props default_generation_settings.n_ctx")
    ]


async def test_the_warning_shows_as_one_line_in_print_mode(server: ScriptedServer) -> None:
    server.routes.update(llama_routes())
    server.add(Reply.sse(openai_text_stream(["Hi."])))
    out = io.StringIO()
    agent, _, _ = agent_on(openai(server), PlainTerminal(out))
    await agent.run_turn("hello")
    [warning] = [line for line in out.getvalue().splitlines() if line.startswith("warning:")]
    assert "chat_template_caps.supports_tools is false" in warning


# A cut at the window (issue 16) ---------------------------------------------------------


async def test_a_length_cut_at_the_window_ends_clearly_with_no_impossible_continuation(
    server: ScriptedServer,
) -> None:
    # llama-server -c 2048: the answer filled the window (1714 + 334); a continuation
    # would carry all of it, and could never fit.
    server.routes.update(llama_routes())
    server.add(Reply.sse(stream_file("llamacpp/fill_ctx_stream.sse")))
    agent, _, terminal = agent_on(openai(server))
    outcome = await agent.run_turn("list fruit")
    assert outcome.reason is FailureKind.CONTEXT
    assert "2,048 tokens (llama.cpp /props default_generation_settings.n_ctx)" in outcome.detail
    assert "llama-server -c" in outcome.detail and "context_window" in outcome.detail
    assert len(server.requests) == 1  # nothing more was sent
    assert isinstance(terminal, RecordingTerminal)
    assert "token budget" not in " ".join(
        str(e) for e in terminal.events if type(e).__name__ == "ContinuationRequested"
    )


def cut_stream(text: str, prompt: int, answer: int) -> bytes:
    """A Chat Completions answer of ``text`` cut for length, counted as given."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
        {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": answer}},
    ]
    return (
        b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    )


async def test_a_cut_short_of_its_budget_with_no_window_known_is_continued(
    server: ScriptedServer,
) -> None:
    # Issue 20: a gateway caps answers at 12 tokens, far below the 8,192 asked; with no
    # window known that is no proof of a full one, and the answer is continued.
    server.add(
        Reply.sse(cut_stream("The first twelve tokens of the answer", 1752, 12)),
        Reply.sse(openai_text_stream([" and the rest."])),
    )
    out = io.StringIO()
    agent, _, _ = agent_on(openai(server), JsonLinesTerminal(out))
    outcome = await agent.run_turn("explain")
    assert outcome.screen_line == "Turn finished", outcome.detail
    assert len(server.requests) == 2
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [r["type"] for r in records]
    assert "window_filled" not in kinds and "context_window_known" not in kinds
    [continued] = [r for r in records if r["type"] == "continuation_requested"]
    assert (continued["cut_at"], continued["short_of"]) == (12, 8192)
    assert server.requests[1].json()["max_tokens"] == 16384


async def test_a_cut_well_below_a_known_window_is_said_as_a_cut(server: ScriptedServer) -> None:
    # Issue 20: 79 of prompt and 1 of answer on 128,000 tokens did not fill the window.
    server.add(
        Reply.sse(stream_file("openai-chat/recorded/4cc50a61.sse")),
        Reply.sse(openai_text_stream(['city": "Paris"}'])),
    )
    out = io.StringIO()
    settings = TurnSettings(context=ContextSettings(window=ContextWindow(128_000, "configuration")))
    model = openai(server)
    ports = TurnPorts(model, FakeClock(), FakeRunner(FakeClock()), PlainTerminal(out), server=model)
    outcome = await Agent(ports, settings, core_tools()).run_turn("weather as JSON")
    assert outcome.screen_line == "Turn finished", outcome.detail
    text = out.getvalue()
    assert "filled the context window" not in text
    assert "answer cut at 1 of its 8,192 tokens, not by the context window" in text
    assert len(server.requests) == 2


async def test_a_full_llama_context_unknown_is_learned_from_the_refused_continuation(
    server: ScriptedServer,
) -> None:
    # llama-server -c 2048, its /props not reachable: the answer stopped at 334 of a
    # budget of 8,192. The continuation is sent; llama-server's own refusal names the
    # window, and the turn ends naming it and the settings to change.
    server.add(
        Reply.sse(stream_file("llamacpp/fill_ctx_stream.sse")),
        Reply.raw(400, recorded("refusals/llamacpp_over_ctx.json")),
    )
    agent, _, terminal = agent_on(openai(server))
    outcome = await agent.run_turn("list fruit")
    assert outcome.reason is FailureKind.CONTEXT
    assert "2,048 tokens" in outcome.detail and "context_window" in outcome.detail
    assert len(server.requests) == 2  # the continuation, then nothing that cannot fit
    assert isinstance(terminal, RecordingTerminal)
    [known] = terminal.of_type(ContextWindowKnown)
    assert known.window == 2048


async def test_a_continuation_cut_again_at_once_with_no_room_teaches_the_window(
    server: ScriptedServer,
) -> None:
    # A server that names no window and refuses nothing: the continuation stops after
    # two tokens at the same 2,048 as the cut before it. That is a ceiling.
    server.add(
        Reply.sse(stream_file("llamacpp/fill_ctx_stream.sse")),
        Reply.sse(cut_stream(" apple", 2046, 2)),
    )
    agent, _, terminal = agent_on(openai(server))
    outcome = await agent.run_turn("list fruit")
    assert outcome.reason is FailureKind.CONTEXT
    assert "filled the context window of 2,048 tokens" in outcome.detail
    assert len(server.requests) == 2
    assert isinstance(terminal, RecordingTerminal)
    names = [type(e).__name__ for e in terminal.events]
    assert "WindowFilled" in names


# Proxies and local quirks (issue 16) ----------------------------------------------------


async def test_an_error_in_the_stream_with_a_string_code_is_retried_as_its_status(
    server: ScriptedServer,
) -> None:
    killed = stream_file("litellm/upstream_killed_midstream.sse")
    # LiteLLM's chunk comes before any answer text would be shown twice: here, first.
    error_only = killed[killed.index(b'data: {"error"') :]
    server.add(Reply.sse(error_only), Reply.sse(openai_text_stream(["Recovered."])))
    agent, clock, terminal = agent_on(openai(server))
    outcome = await agent.run_turn("go")
    assert outcome.screen_line == "Turn finished"
    assert isinstance(terminal, RecordingTerminal)
    [retry] = terminal.of_type(RetryScheduled)
    assert retry.error.startswith(
        "the server sent an error event mid-stream: litellm.APIConnectionError"
    )
    assert clock.slept == [1.0]


async def test_an_error_with_newlines_keeps_the_outcome_on_one_last_line(
    server: ScriptedServer,
) -> None:
    body = recorded("refusals/litellm_bad_args.json")  # its message ends in "\n\nLiteLLM: …"
    server.add(*[Reply.raw(500, body)] * 3)
    out = io.StringIO()
    agent, _, _ = agent_on(openai(server), PlainTerminal(out))
    outcome = await agent.run_turn("go")
    assert outcome.kind is OutcomeKind.FAILED
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("Turn failed: HttpError: HTTP 500: ")
    assert last.endswith("No fallback was attempted.")


async def test_a_malformed_tool_call_does_not_poison_the_conversation(
    server: ScriptedServer,
) -> None:
    server.guard = refusing = Refusing(refuses_bad_arguments)  # llama-server: a 500
    server.add(Reply.sse(tool_call_stream('{"command": "ls')))
    server.add(Reply.sse(openai_text_stream(["I will write valid JSON."])))
    agent, _, _ = agent_on(openai(server))
    outcome = await agent.run_turn("list the files")
    assert outcome.screen_line == "Turn finished"
    assert refusing.given == []
    second = json.loads(server.requests[1].body)["messages"]
    assert second[2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert 'what you wrote was: {"command": "ls' in second[3]["content"]
    assert agent.history.messages[1].tool_calls[0].arguments == '{"command": "ls'  # kept


async def test_a_resumed_session_holding_a_malformed_call_is_sent_repaired(
    server: ScriptedServer,
) -> None:
    server.guard = refusing = Refusing(refuses_bad_arguments)
    broken = ToolCall("call_1", "bash", '{"command": "ls')
    history = History(
        [
            Message.user("list the files"),
            Message.assistant("", (broken,)),
            Message.tool("call_1", "Error: bad arguments for bash", is_error=True),
        ]
    )
    server.add(Reply.sse(openai_text_stream(["Done now."])))
    agent, _, _ = agent_on(openai(server), history=history)
    assert (await agent.run_turn("Continue.")).screen_line == "Turn finished"
    assert refusing.given == []


async def test_the_anthropic_adapter_sends_an_object_for_arguments_that_are_not_one(
    server: ScriptedServer,
) -> None:
    server.add(Reply.sse(anthropic_text_stream(["ok"])))
    model = AnthropicModel(model="claude-test", base_url=server.base_url, api_key=KEY)
    broken = (Message.user("x"), Message.assistant("", (ToolCall("t", "bash", "[1, 2]"),)))
    await listen(model.stream(a_request(messages=(*broken, Message.tool("t", "refused")))))
    sent = server.requests[0].json()["messages"][1]["content"][0]
    assert sent == {"type": "tool_use", "id": "t", "name": "bash", "input": {}}


def _kinds(events: list[TurnEvent]) -> list[str]:
    return [type(event).__name__ for event in events]


async def test_no_probe_is_made_without_a_server_port(server: ScriptedServer) -> None:
    server.add(Reply.sse(openai_text_stream(["Hi."])))
    clock = FakeClock()
    terminal = RecordingTerminal()
    agent = Agent(TurnPorts(openai(server), clock, FakeRunner(clock), terminal), TurnSettings())
    await agent.run_turn("hello")
    assert server.probes == []
    assert "Notice" not in _kinds(terminal.events)
    assert not terminal.of_type(Notice)


async def test_the_responses_adapter_sends_an_object_for_arguments_that_are_not_one(
    server: ScriptedServer,
) -> None:
    from treadle.adapters.http_model.openai_responses import OpenAIResponsesModel

    server.add(Reply.sse(stream_file("responses/text_only.sse")))
    model = OpenAIResponsesModel(model="gpt-5", base_url=f"{server.base_url}/v1", api_key=KEY)
    broken = (Message.user("x"), Message.assistant("", (ToolCall("t", "bash", '{"a": '),)))
    await listen(model.stream(a_request(messages=(*broken, Message.tool("t", "refused")))))
    [call] = [i for i in server.requests[0].json()["input"] if i.get("type") == "function_call"]
    assert call["arguments"] == "{}"
