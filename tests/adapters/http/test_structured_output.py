"""The output schema goes to a provider that constrains its answer to one: Chat
Completions' response_format, the Responses API's text.format, Anthropic's
output_config.format; a local OpenAI-compatible server is spared it."""

from __future__ import annotations

from treadle.adapters.http_model.anthropic import messages_request_body
from treadle.adapters.http_model.endpoint import ModelOptions
from treadle.adapters.http_model.openai_chat import chat_request_body
from treadle.adapters.http_model.openai_responses import responses_request_body
from treadle.domain.values.conversation import Message
from treadle.domain.values.model import ModelRequest

SCHEMA = {"type": "object", "properties": {"count": {"type": "integer"}}}


def request(schema: object = SCHEMA) -> ModelRequest:
    return ModelRequest("sys", [Message.user("x")], (), 100, output_schema=schema)  # type: ignore[arg-type]


def test_chat_completions_asks_for_a_json_schema_response_format_on_the_hosted_api() -> None:
    body = chat_request_body(request(), model="gpt-5", hosted=True)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "final_answer", "schema": SCHEMA, "strict": False},
    }
    assert "response_format" not in chat_request_body(request(), model="m", hosted=False)
    assert "response_format" not in chat_request_body(request(None), model="gpt-5", hosted=True)


def test_the_responses_api_asks_for_a_json_schema_text_format() -> None:
    body = responses_request_body(request(), model="gpt-5", hosted=True)
    assert body["text"]["format"] == {
        "type": "json_schema",
        "name": "final_answer",
        "schema": SCHEMA,
        "strict": False,
    }
    assert "text" not in responses_request_body(request(None), model="gpt-5", hosted=True)


def test_anthropic_asks_for_an_output_config_format_beside_its_effort() -> None:
    body = messages_request_body(request(), model="claude-x", options=ModelOptions(effort="high"))
    assert body["output_config"] == {
        "effort": "high",
        "format": {"type": "json_schema", "schema": SCHEMA},
    }
    assert "output_config" not in messages_request_body(request(None), model="claude-x")
