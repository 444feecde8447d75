"""What a server sends, made readable to the SDK before the SDK sees it.

The SDK drops a message it cannot read, and a call waiting for that answer waits for
its whole deadline; it refuses a tool list as a whole when one tool in it is
malformed, and with it the server. So:

- a line from a stdio server has its strings made well-formed (a lone surrogate, a
  byte that is not UTF-8 becomes U+FFFD), and an answer still not JSON-RPC becomes
  an error answer to the request it names, which fails that call at once
  (:func:`message_of`). Over streamable HTTP, the SDK's own transport parses, and
  answers a request whose answer it cannot parse with the same error;
- an answer to ``tools/list`` is mended tool by tool on its way to the SDK
  (:class:`ToolListRepair`): a tool whose input schema is not an object is offered
  taking no arguments, one that is not a tool at all is left out, and each is noted.

Example: the line ``{"jsonrpc": "2.0", "id": 7, "result": {"text": "a \\udc80"}}``
becomes a response whose text ends in U+FFFD; ``{"jsonrpc": "2.0", "id": 7, "result":
[]}`` becomes an error answer to request 7, and that call fails at once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as mcp
from mcp.client._transport import TransportStreams
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import methods
from pydantic import ValidationError
from returns.result import Failure, Success

from treadle.domain.rules.arguments import load_json

MAX_DEPTH = 200
"""How deeply a message may nest: as deep as the SDK's own JSON parser reads."""

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}
_JSON_KINDS = {type(None): "null", list: "a list", str: "a string", bool: "a boolean"}


def message_of(line: bytes) -> SessionMessage | Exception:
    """One line from a server as the SDK reads it, or the exception the session is
    given for a line that is not JSON at all."""
    try:
        return SessionMessage(mcp.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        pass  # the SDK's parser refuses lone surrogates and bad bytes: Python's does not
    match load_json(line.decode("utf-8", "replace"), MAX_DEPTH):
        case Failure(problem):
            return ValueError(f"a line that is not JSON ({problem})")
        case Success(value):
            pass
    try:
        return SessionMessage(mcp.jsonrpc_message_adapter.validate_python(value, by_name=False))
    except ValidationError as error:
        answered = _answered(value)
        if answered is None:
            return error
        unreadable = mcp.ErrorData(
            code=mcp.PARSE_ERROR, message=f"not JSON-RPC: {_answer_problem(value, error)}"
        )
        return SessionMessage(mcp.JSONRPCError(jsonrpc="2.0", id=answered, error=unreadable))


def _answered(value: object) -> int | str | None:
    """The id of the request ``value`` answers, if it is an answer that names one."""
    if not isinstance(value, dict) or "method" in value:
        return None
    answered = value.get("id")
    return answered if isinstance(answered, int | str) and not isinstance(answered, bool) else None


def _answer_problem(value: dict[str, Any], error: ValidationError) -> str:
    """What is wrong with an answer, as an answer (not as the request it is not)."""
    kind = mcp.JSONRPCError if "error" in value else mcp.JSONRPCResponse
    try:
        kind.model_validate(value, by_name=False)
    except ValidationError as as_answer:
        return first_problem(as_answer)
    return first_problem(error)


def first_problem(error: ValidationError, within: int = 0) -> str:
    """Where the first problem pydantic found is (less the first ``within`` steps of
    the path), and what it is, on one line."""
    problems = error.errors(include_url=False, include_input=False)
    if not problems:
        return str(error).splitlines()[0]
    where = ".".join(str(part) for part in problems[0]["loc"][within:])
    return f"{where}: {problems[0]['msg']}" if where else str(problems[0]["msg"])


class ToolListRepair:
    """Between a transport and the session: answers to ``tools/list`` mended so that
    one malformed tool never fails the listing. ``notes`` says what was mended.

    Example::

        repair = ToolListRepair()
        session = ClientSession(*repair.around(await transport_streams), ...)
        await session.list_tools()     # repair.notes: ["tool 'n1' has no input schema …"]
    """

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.version = "2025-11-25"
        """The protocol version agreed at ``initialize`` (the SDK's own default until then)."""
        self._asked: set[str] = set()  # ids as text: the SDK matches "1" with 1 too

    def around(self, streams: TransportStreams) -> TransportStreams:
        read, write = streams
        return _Answers(read, self), _Requests(write, self)

    def asked(self, message: mcp.JSONRPCMessage) -> None:
        if isinstance(message, mcp.JSONRPCRequest) and message.method == "tools/list":
            self._asked.add(str(message.id))

    def answered(self, message: mcp.JSONRPCMessage) -> None:
        if isinstance(message, mcp.JSONRPCResponse) and str(message.id) in self._asked:
            self._asked.discard(str(message.id))
            message.result = self.mended(message.result)

    def mended(self, result: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/list`` result with every tool the SDK would refuse mended or left out."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return result  # nothing to mend one by one: the listing fails, and says why
        return {
            **result,
            "tools": [tool for at, raw in enumerate(tools) if (tool := self._tool(at, raw))],
        }

    def _tool(self, at: int, raw: object) -> dict[str, Any] | None:
        if not isinstance(raw, dict):
            self.notes.append(f"tool {at + 1} of its list is not an object; it is left out")
            return None
        name = _shown(raw.get("name", f"#{at + 1}"))
        schema = raw.get("inputSchema")
        if not isinstance(schema, Mapping):
            what = _JSON_KINDS.get(type(schema), "not an object") if "inputSchema" in raw else ""
            self.notes.append(
                f"tool {name}: its inputSchema is {what or 'missing'}; "
                "it is offered taking no arguments"
            )
            raw = {**raw, "inputSchema": dict(NO_ARGUMENTS)}
        elif schema.get("type") != "object":
            # Every tool takes an object (the providers are offered one whatever it says).
            raw = {**raw, "inputSchema": {**schema, "type": "object"}}
        problem = self._problem(raw)
        if problem:
            self.notes.append(f"tool {name} cannot be read ({problem}); it is left out")
            return None
        return raw

    def _problem(self, tool: dict[str, Any]) -> str:
        """What the SDK would refuse in ``tool``, under the protocol version agreed."""
        try:
            methods.validate_server_result("tools/list", self.version, {"tools": [tool]})
        except ValidationError as error:
            return first_problem(error, within=2)
        except (KeyError, ValueError):  # a version it has no rules for: its own model's
            try:
                mcp.Tool.model_validate(tool, by_name=False)
            except ValidationError as error:
                return first_problem(error)
        return ""


class _Wrapping:
    """A stream around the transport's: closed when it is, and closing it."""

    _inner: ReadStream[Any] | WriteStream[Any]

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _Answers(_Wrapping):
    """The transport's read stream, with each answer to ``tools/list`` mended."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], repair: ToolListRepair):
        self._inner: ReadStream[SessionMessage | Exception] = inner
        self._repair = repair

    @property
    def last_context(self) -> object:
        """The sender's context, which the SDK's HTTP streams carry with each message."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        if isinstance(item, SessionMessage):
            self._repair.answered(item.message)
        return item

    def __aiter__(self) -> _Answers:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _Requests(_Wrapping):
    """The transport's write stream, remembering which requests ask for ``tools/list``."""

    def __init__(self, inner: WriteStream[SessionMessage], repair: ToolListRepair):
        self._inner: WriteStream[SessionMessage] = inner
        self._repair = repair

    async def send(self, item: SessionMessage, /) -> None:
        self._repair.asked(item.message)
        await self._inner.send(item)


def _shown(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return json.dumps(text[:80] + ("…" if len(text) > 80 else ""), ensure_ascii=False)
