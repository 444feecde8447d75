"""The Model port: one streamed answer per request, failures as values.

Example::

    async for item in model.stream(request):
        match item:
            case Success(TextDelta(text)): print(text, end="")
            case Failure(error): print("failed:", error.describe())
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from returns.result import Result

from treadle.domain.values.model import ModelError, ModelRequest, StreamEvent


class Model(Protocol):
    """A language model that answers one request as a stream.

    The stream yields ``Success(event)`` items and ends after a ``StreamEnd``, or
    yields one ``Failure(error)`` and ends. A stream that ends with neither is
    treated as malformed. Cancelling the iteration closes the connection.
    """

    def stream(self, request: ModelRequest) -> AsyncIterator[Result[StreamEvent, ModelError]]: ...
