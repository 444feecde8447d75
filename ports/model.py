"""The Model port: one streamed answer per request, failures as values.

Example::

    async for item in model.stream(request):
        match item:
            case Success(TextDelta(text)): print(text, end="")
            case Failure(error): print("failed:", error.describe())
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from returns.result import Result

from treadle.domain.values.model import ModelError, ModelRequest, ServerFacts, StreamEvent


class Model(Protocol):
    """A language model that answers one request as a stream.

    The stream yields ``Success(event)`` items and ends after a ``StreamEnd``, or
    yields one ``Failure(error)`` and ends. A stream that ends with neither is
    treated as malformed. Cancelling the iteration closes the connection.
    """

    def stream(self, request: ModelRequest) -> AsyncIterator[Result[StreamEvent, ModelError]]: ...


@runtime_checkable
class ModelServer(Protocol):
    """What the model's server says about it: its context window, and what it cannot do.

    Asked at the start of each main turn, so it must be quick: a local server answers
    one small request (``/props``, ``/v1/models``); a hosted API is not asked at all,
    and its window comes from a table of known models. A server that cannot be asked,
    or says nothing, gives empty facts: the window is then learned from a refusal.

    Example::

        facts = await server.facts()
        facts.window   # ContextWindow(tokens=32768, origin='llama.cpp /props n_ctx')
    """

    async def facts(self) -> ServerFacts: ...
