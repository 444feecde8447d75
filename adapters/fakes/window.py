"""A scripted server's context window: what a real server does around the answer it was
going to give, when the request is long.

It counts each request's tokens its own way (four characters a token, not treadle's
estimate), reports that count as the input tokens, refuses a request that does not fit
in the words of the provider it plays (:mod:`treadle.adapters.fakes.refusals`), and
cuts an answer that would fill the window. :class:`ScriptedModel` keeps to one when
given a :class:`FakeWindow`::

    model = ScriptedModel(script, window=FakeWindow(8192, like="anthropic"))
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from treadle.adapters.fakes.refusals import PROVIDERS, Provider, refusal_error, refuses
from treadle.domain.values.conversation import Usage
from treadle.domain.values.model import (
    ContextExceeded,
    ContextWindow,
    ModelRequest,
    ServerFacts,
    StopReason,
)

if TYPE_CHECKING:
    from treadle.adapters.fakes.model import ScriptedResponse


@dataclass(frozen=True, slots=True)
class FakeWindow:
    """A context window of ``tokens`` that a scripted model keeps to, refusing like
    ``like``. ``advertised``: the model says its window when asked (as llama.cpp's
    ``/props`` does), else it must be learned from a refusal. ``chars_per_token`` is
    how the server counts: four characters a token, fewer for a denser tokenizer than
    treadle's estimate expects."""

    tokens: int
    like: Provider = "llama.cpp"
    advertised: bool = True
    chars_per_token: float = 4.0

    def __post_init__(self) -> None:
        if self.like not in PROVIDERS:
            raise ValueError(f"unknown provider {self.like!r}: one of {', '.join(PROVIDERS)}")


def server_tokens(text: str, chars_per_token: float = 4.0) -> int:
    """How the scripted server counts tokens: four characters a token, by default."""
    return math.ceil(len(text) / chars_per_token)


def request_tokens(request: ModelRequest, chars_per_token: float = 4.0) -> int:
    """The scripted server's count of a request's prompt."""
    total = server_tokens(request.system, chars_per_token) + 3
    for spec in request.tools:
        schema = json.dumps(dict(spec.parameters))
        total += server_tokens(spec.name + spec.description + schema, chars_per_token)
    for message in request.messages:
        total += 3 + server_tokens(message.text_for_model, chars_per_token)
        for call in message.tool_calls:
            total += 3 + server_tokens(call.name + call.arguments, chars_per_token)
    if request.continuation:
        total += 10 + server_tokens(request.continuation, chars_per_token)
    return total


class WindowedServer:
    """The window side of a scripted server. ``refusals`` counts the requests it refused
    for length, ``largest_prompt`` is the longest prompt it was sent."""

    def __init__(self, window: FakeWindow) -> None:
        self.window = window
        self.refusals = 0
        self.largest_prompt = 0

    def facts(self) -> ServerFacts:
        """The window, when it is one the server advertises."""
        window = self.window
        if not window.advertised:
            return ServerFacts()
        return ServerFacts(ContextWindow(window.tokens, f"the scripted server ({window.like})"))

    def count(self, request: ModelRequest) -> int:
        """The request's prompt in the server's tokens."""
        prompt = request_tokens(request, self.window.chars_per_token)
        self.largest_prompt = max(self.largest_prompt, prompt)
        return prompt

    def refusal(self, request: ModelRequest, prompt: int) -> ContextExceeded | None:
        """The refusal for length of a request of ``prompt`` tokens, if the server refuses it."""
        limits = {"prompt": prompt, "window": self.window.tokens, "max_tokens": request.max_tokens}
        if not refuses(self.window.like, **limits):
            return None
        self.refusals += 1
        return refusal_error(self.window.like, **limits)

    def keep(
        self, response: ScriptedResponse, request: ModelRequest, prompt: int
    ) -> ScriptedResponse:
        """The response as a server that keeps to its window sends it: the prompt counted
        as the input, and an answer cut where it reaches its budget or fills the window."""
        text = "".join(response.text)
        calls = "".join(c.name + c.arguments for c in response.tool_calls)
        per_token = self.window.chars_per_token
        output = server_tokens(text + calls, per_token)
        room = min(request.max_tokens, self.window.tokens - prompt)
        if output <= room:
            return replace(response, usage=Usage(prompt, output))
        fills = self.window.tokens - prompt < request.max_tokens
        stop: StopReason = (
            "context_full" if fills and self.window.like == "anthropic" else "max_tokens"
        )
        kept = text[: int(max(0, room) * per_token)]
        return replace(
            response,
            text=(kept,) if kept else (),
            tool_calls=(),
            usage=Usage(prompt, max(0, room)),
            stop=stop,
            failure=None,
            chunk_delay=0.0,
        )
