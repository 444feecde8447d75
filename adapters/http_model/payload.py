"""Reading the JSON of one event defensively: a field of the wrong type is treated as
absent, and only what the adapter needs is looked at (extra fields pass unnoticed)."""

from __future__ import annotations

import json
import json.scanner
from typing import Any

from returns.result import Failure, Result

from treadle.adapters.context_refusals import context_refusal
from treadle.adapters.http_model.sse import SseEvent
from treadle.domain.values.model import (
    ERROR_EVENT,
    HttpStatusError,
    MalformedStream,
    ModelError,
    StreamEvent,
)

JsonObject = dict[str, Any]

# Error kinds a server reports inside a stream, and the HTTP status each stands for,
# so that the retry rules treat "overloaded" mid-stream like a 503 before the stream.
# Anthropic's overloaded_error travels as HTTP 529, which the seed does not list; as
# "come back later" it is a 503 in all but number. Anything else ends the answer.
STATUS_OF_ERROR_KIND: dict[str, int] = {
    "api_error": 500,
    "server_error": 500,
    "internal_error": 500,
    "overloaded_error": 503,
    "overloaded": 503,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "timeout_error": 504,
}


# The C scanner behind json.loads, called directly: a stream decodes one object per
# event, and the wrapper's checks and whitespace handling cost a third of the time.
# (typeshed types its argument as another scanner; it reads a decoder's settings.)
_scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]

MAX_EVENT_DEPTH = 256
"""How deeply an event's JSON may nest. What a reader keeps of it is encoded again (a
reasoning item's seal, a request that sends it back) at a deeper point of Python's
stack than where it was read, so JSON that only just decodes would fail there."""


def load_object(event: SseEvent) -> JsonObject | MalformedStream:
    """The event's data as a JSON object, or why it is not one."""
    try:
        value = decode(event.data)
    except ValueError as problem:
        return MalformedStream(f"bad JSON in {_label(event)}: {problem}")
    if not isinstance(value, dict):
        return MalformedStream(f"{_label(event)} holds JSON that is not an object")
    return value


def _label(event: SseEvent) -> str:
    return f"the {event.name} event" if event.name else "an event"


def decode(data: str) -> Any:
    """JSON from a server (or kept from one), or a ``ValueError`` saying why it is none:
    not JSON, a number longer than Python reads, or nested deeper than
    ``MAX_EVENT_DEPTH`` (never a ``RecursionError``)."""
    try:
        value, end = _scan(data, 0)
    except (StopIteration, ValueError):
        end = -1
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if end != len(data):
        # Whitespace around it, or no JSON at all: the full decoder says which.
        try:
            value = json.loads(data)
        except RecursionError:
            raise ValueError("nested too deeply") from None
    # Nesting that deep needs as many brackets; counting them is cheap, a walk is not.
    if data.count("{") + data.count("[") > MAX_EVENT_DEPTH and _too_deep(value):
        raise ValueError("nested too deeply")
    return value


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than ``MAX_EVENT_DEPTH``: a walk with its own stack."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_EVENT_DEPTH:
                return True
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return False


def obj(value: Any) -> JsonObject:
    return value if isinstance(value, dict) else {}


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def count(value: Any) -> int:
    # bool is an int in Python, and never a token count.
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def server_error(error: Any) -> Result[StreamEvent, ModelError]:
    """An error the server sent inside the stream, as a failure the retry rules know,
    said as an error event (the response itself was 200 OK).

    A ``code`` that is a status (``500``, or ``"500"`` as LiteLLM sends it) is that
    status, a known kind the status it stands for; a refusal for length is
    :class:`ContextExceeded`; any other error ends the answer, not retried.
    """
    refusal = context_refusal(error)
    if refusal is not None:
        return Failure(refusal)
    fields = obj(error)
    status = _status(fields.get("code"))
    kind = text(fields.get("type")) or ("" if status else text(fields.get("code")))
    message = text(fields.get("message")) or text(error) or "no message"
    said = f"{kind}: {message}" if kind else message
    status = status or STATUS_OF_ERROR_KIND.get(kind, 0)
    if status:
        return Failure(HttpStatusError(status, said, mid_stream=True))
    return Failure(MalformedStream(f"{ERROR_EVENT}: {said}"))


def _status(code: Any) -> int:
    """The HTTP status a ``code`` stands for: an int, or a string of digits; else 0."""
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
        return code
    return 0
