"""The Responses adapter as a whole model at a server, not only its stream: what the turn
asks it before the first request (the window) and what it sends with that question."""

from __future__ import annotations

import pytest

from tests.adapters.http.local_server import llama_routes
from tests.adapters.http.server import ScriptedServer
from tests.adapters.http.support import KEY
from treadle.adapters.http_model import OpenAIResponsesModel
from treadle.domain.values.model import ContextWindow

pytestmark = pytest.mark.slow


async def test_a_responses_server_is_asked_its_window_with_the_key(
    server: ScriptedServer,
) -> None:
    server.routes.update(llama_routes())
    model = OpenAIResponsesModel(model="gpt-oss", base_url=f"{server.base_url}/v1", api_key=KEY)
    facts = await model.facts()
    assert facts.window == ContextWindow(2048, "llama.cpp /props default_generation_settings.n_ctx")
    assert {seen.headers.get("authorization") for seen in server.probes} == {f"Bearer {KEY}"}


async def test_a_hosted_responses_model_takes_its_window_from_the_table() -> None:
    hosted = OpenAIResponsesModel(model="gpt-4.1", api_key=KEY)  # never reached
    assert (await hosted.facts()).window == ContextWindow(1_047_576, "known model family gpt-4.1")
