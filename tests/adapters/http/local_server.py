"""What the test server plays to be a local model server: llama-server's ``/props`` and
``/v1/models``, its refusal of broken tool arguments, and each provider's refusal of a
request too long for a window.

Example::

    server.routes.update(llama_routes())            # /props and /v1/models as recorded
    server.guard = refusing = Refusing(refuses_bad_arguments)  # like llama-server
    ...
    assert refusing.given == []
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.adapters.http.server import Reply, SeenRequest
from treadle.adapters.fakes.refusals import Provider, refusal_body, refuses

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


class Refusing:
    """A server's guard (see :mod:`server`) that keeps the refusals it gave."""

    def __init__(self, guard: Callable[[SeenRequest], Reply | None]) -> None:
        self.guard = guard
        self.given: list[Reply] = []

    def __call__(self, seen: SeenRequest) -> Reply | None:
        reply = self.guard(seen)
        if reply is not None:
            self.given.append(reply)
        return reply


def recorded(name: str) -> bytes:
    """A recorded answer: ``recorded("servers/llamacpp_props.json")``."""
    return (FIXTURES / name).read_bytes()


def recorded_json(name: str) -> Any:
    return json.loads(recorded(name))


def llama_routes(
    props: str = "servers/llamacpp_props.json", models: str = "servers/llamacpp_v1_models.json"
) -> dict[str, Reply]:
    """llama-server's answers about itself, as recorded (``-c 2048``, a template that
    does not support tools)."""
    return {
        "/props": Reply.raw(200, recorded(props)),
        "/v1/models": Reply.raw(200, recorded(models)),
    }


def refuses_bad_arguments(seen: SeenRequest) -> Reply | None:
    """llama-server with a template that reads tool arguments as objects: a history
    holding arguments that are not a JSON object is a 500, as recorded."""
    for message in seen.json().get("messages", []):
        for call in message.get("tool_calls") or []:
            arguments = call.get("function", {}).get("arguments")
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                return Reply.raw(500, recorded("refusals/llamacpp_bad_args.json"))
    return None


def body_tokens(body: dict[str, Any]) -> int:
    """A server's count of a request's prompt: four characters of its text a token."""
    texts: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        texts.append(system)
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        for block in content if isinstance(content, list) else []:
            texts.append(json.dumps(block))
        for call in message.get("tool_calls") or []:
            texts.append(json.dumps(call))
    texts.extend(json.dumps(tool) for tool in body.get("tools", []))
    return sum(len(text) for text in texts) // 4


def refuses_past(window: int, like: Provider) -> Callable[[SeenRequest], Reply | None]:
    """A server of ``window`` tokens that refuses as ``like`` does what does not fit."""

    def guard(seen: SeenRequest) -> Reply | None:
        body = seen.json()
        prompt = body_tokens(body)
        budget = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        if not refuses(like, prompt=prompt, window=window, max_tokens=budget):
            return None
        status, payload = refusal_body(like, prompt=prompt, window=window, max_tokens=budget)
        return Reply.error(status, payload)

    return guard
