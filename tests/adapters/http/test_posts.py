"""Each protocol says what it posts as one frozen value (path, headers, body, reader);
the two OpenAI protocols share one base: its hosted URL, its key variable, its key."""

from __future__ import annotations

import dataclasses
import json

import pytest

from treadle.adapters.http_model.anthropic import AnthropicModel
from treadle.adapters.http_model.endpoint import OPENAI_BASE_URL, HttpModel, OpenAIModel, Post
from treadle.adapters.http_model.openai_chat import OpenAIChatModel
from treadle.adapters.http_model.openai_responses import OpenAIResponsesModel
from treadle.domain.values.conversation import Message
from treadle.domain.values.model import ModelRequest

REQUEST = ModelRequest("be brief", [Message.user("hi")], (), 100)


@pytest.mark.parametrize(
    ("kind", "path", "key_header"),
    [
        (OpenAIChatModel, "/chat/completions", ("authorization", "Bearer k")),
        (OpenAIResponsesModel, "/responses", ("authorization", "Bearer k")),
        (AnthropicModel, "/v1/messages", ("x-api-key", "k")),
    ],
)
def test_a_protocol_posts_its_path_its_key_its_body_and_a_new_reader_each_time(
    kind: type[HttpModel], path: str, key_header: tuple[str, str]
) -> None:
    model = kind(model="m", api_key="k")
    first, second = model.protocol(REQUEST, "k"), model.protocol(REQUEST, "k")
    assert isinstance(first, Post)
    assert first.path == path
    assert key_header in first.headers.items()
    assert json.loads(first.body)["model"] == "m"
    assert first.reader is not second.reader
    assert not first.reader.ended
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.path = "/elsewhere"  # type: ignore[misc]


def test_the_two_openai_protocols_are_one_base_with_one_key_and_one_hosted_url() -> None:
    for kind in (OpenAIChatModel, OpenAIResponsesModel):
        assert issubclass(kind, OpenAIModel)
        model = kind(model="gpt-x", api_key="k")
        assert (model.base_url, model.key_env, model.hosted) == (
            OPENAI_BASE_URL,
            "OPENAI_API_KEY",
            True,
        )
        assert model.key_headers(None) == {}
    local = OpenAIResponsesModel(model="x", api_key=None, base_url="http://127.0.0.1:1/v1")
    assert "authorization" not in local.protocol(REQUEST, None).headers
