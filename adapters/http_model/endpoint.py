"""What every model adapter is: a model at a server, a key, and one new connection per
attempt. A protocol says only what it posts (a :class:`Post`: its path, its headers,
its body and its reader); :func:`exchange` makes the attempt. The seed's retries are
the loop's (``Responder``), for every protocol alike."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import ClassVar

import httpx
from returns.result import Result

from treadle.adapters.http_model.exchange import Attempt, Post, exchange, failing
from treadle.adapters.http_model.server_facts import ProbeTarget, server_facts
from treadle.adapters.http_model.transport import Connection, StreamLimits, checked_base_url
from treadle.domain.values.model import (
    CredentialsRejected,
    ModelError,
    ModelRequest,
    ServerFacts,
    StreamEvent,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class ModelOptions:
    """What a session asks of its model beyond each request; a protocol takes what it
    knows of them.

    ``effort`` is the reasoning effort (``low``, ``high``…; "" sends none). ``session``
    is the session's id, OpenAI's ``prompt_cache_key`` on its own API. ``prompt_cache``
    puts Anthropic's ``cache_control`` breakpoints in. ``reasoning_echo`` sends
    ``reasoning_content`` back on Chat Completions messages that called tools (DeepSeek
    refuses a tool loop without it; a server that refuses the field can be spared it).
    """

    effort: str = ""
    session: str = ""
    prompt_cache: bool = True
    reasoning_echo: bool = True


class HttpModel:
    """The Model port over HTTP, streamed; one attempt per :meth:`stream` call, each on a
    new connection (the turn loop decides about retries). ``options`` are the
    session's wishes beyond each request (:class:`ModelOptions`).

    ``api_key`` is the key itself (the caller reads it from ``key_env``, which is only
    named here to say what to set). The hosted API (``HOSTED_URL``) needs one; a server
    at another ``base_url`` gets one only if it is given. ``transport`` is for tests and
    benchmarks: the adapter then uses it as lent, and never closes it.
    """

    HOSTED_URL: ClassVar[str]
    KEY_ENV: ClassVar[str]

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None,
        base_url: str | None = None,
        key_env: str | None = None,
        connect_timeout: float = 10,
        read_timeout: float = 120,
        transport: httpx.AsyncBaseTransport | None = None,
        limits: StreamLimits | None = None,
        options: ModelOptions | None = None,
    ) -> None:
        self.model = model
        self.options = options or ModelOptions()
        self.base_url = self.normalized_base_url(checked_base_url(base_url or self.HOSTED_URL))
        self.key_env = key_env or self.KEY_ENV
        self.hosted = self.base_url == self.HOSTED_URL
        self._key = api_key or None
        self._connection = Connection(
            connect_timeout, read_timeout, transport, limits or StreamLimits()
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def normalized_base_url(self, base_url: str) -> str:
        return base_url

    async def facts(self) -> ServerFacts:
        """The ModelServer port: what the server says of its window (a hosted API is not
        asked; the table of known models answers for it)."""
        return await server_facts(
            self.probe_target(),
            hosted=self.hosted,
            connect_timeout=self._connection.connect_timeout,
        )

    def probe_target(self) -> ProbeTarget:
        """Where the server is asked about the model, with the protocol's key headers."""
        base = self.base_url
        return ProbeTarget(
            root=base.removesuffix("/v1"),
            models_url=f"{base}/models",
            model=self.model,
            headers=self.key_headers(self._key),
        )

    def key_headers(self, key: str | None) -> dict[str, str]:
        """The headers that carry ``key`` (none without one)."""
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        if self._key is None and self.hosted:
            return failing(CredentialsRejected(f"no API key: set {self.key_env}"))
        post = self.protocol(request, self._key)
        attempt = Attempt(
            f"{self.base_url}{post.path}",
            {
                "content-type": "application/json",
                "accept": "text/event-stream",
                # An uncompressed stream: one that expands is bounded (body.py), but
                # there is nothing to gain from it either.
                "accept-encoding": "identity",
                **post.headers,
            },
            post.body,
            post.reader,
            self._key,
            self.key_env,
        )
        return exchange(attempt, self._connection)

    def protocol(self, request: ModelRequest, key: str | None) -> Post:
        """What the protocol posts for ``request``: its path, its own headers, the
        body's bytes and a new reader of its stream."""
        raise NotImplementedError


class OpenAIModel(HttpModel):
    """The base of OpenAI's two protocols (Chat Completions and Responses): its hosted
    API, its key variable and its bearer key; a server at another URL needs no key."""

    HOSTED_URL = OPENAI_BASE_URL
    KEY_ENV = "OPENAI_API_KEY"

    def key_headers(self, key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"} if key is not None else {}
