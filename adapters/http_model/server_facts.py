"""Asking a model server about its context window, and whether it drops the tools.

A hosted API is never asked (its start must not wait): its window comes from the
table of known models. A local server is asked with requests that each take a
millisecond, sent side by side: llama.cpp's ``/props`` (``n_ctx`` per slot, and
``chat_template_caps.supports_tools``) and the ``/v1/models`` list (llama.cpp's
``meta.n_ctx``, vLLM's ``max_model_len``, the ``context_length`` of OpenRouter and
others). Only if neither says: Ollama's ``/api/ps`` (the window of the loaded model)
and ``/api/show``, and LiteLLM's ``/v1/model/info``. A server that answers none of
these, or cannot be reached, gives no window: the table, or a refusal, will.

The readers are pure functions of the decoded JSON, tested on recorded answers.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any

import httpx

from treadle.adapters.http_model.transport import ssl_context_for
from treadle.adapters.known_windows import known_window
from treadle.domain.values.model import ContextWindow, ServerFacts
from treadle.domain.values.notices import NoticeKind

PROBE_TIMEOUT = 3.0
"""Seconds a local server has to answer each question, connecting included (at most
the configured connect timeout for the connection)."""
OLLAMA_DEFAULT = 4096
TOOLS_DROPPED: NoticeKind = "tools_dropped"
TOOLS_DROPPED_TEXT = (
    "the server's chat template does not support tools (llama.cpp /props says "
    "chat_template_caps.supports_tools is false), so the model will never call one: start "
    "llama-server with --jinja and a template that supports tools (--chat-template-file, "
    "or a model whose GGUF has one)"
)
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ProbeTarget:
    """Where to ask: the server's root (``/props``, ``/api/…``), the list of models, the
    model's name, and the headers that carry the key."""

    root: str
    models_url: str
    model: str
    headers: dict[str, str]


async def server_facts(
    target: ProbeTarget, *, hosted: bool, connect_timeout: float = PROBE_TIMEOUT
) -> ServerFacts:
    """What the server says (see the module), never an exception for what it answers."""
    if hosted:
        return ServerFacts(known_window(target.model))
    timeout = httpx.Timeout(PROBE_TIMEOUT, connect=min(connect_timeout, PROBE_TIMEOUT))
    verify = ssl_context_for(httpx.URL(target.root))
    async with httpx.AsyncClient(timeout=timeout, headers=target.headers, verify=verify) as client:
        props, models = await asyncio.gather(
            _get(client, f"{target.root}/props"), _get(client, target.models_url)
        )
        window = props_window(props) or models_window(models, target.model)
        if window is None:
            ps, info = await asyncio.gather(
                _get(client, f"{target.root}/api/ps"),
                _get(client, target.models_url.removesuffix("/models") + "/model/info"),
            )
            window = ollama_ps_window(ps, target.model) or litellm_window(info, target.model)
            if window is None and ps is not None:
                show = await _get(client, f"{target.root}/api/show", {"model": target.model})
                window = ollama_show_window(show)
    warnings = ((TOOLS_DROPPED, TOOLS_DROPPED_TEXT),) if drops_tools(props) else ()
    return ServerFacts(window or known_window(target.model), warnings)


async def _get(
    client: httpx.AsyncClient, url: str, post: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The JSON object at ``url`` (POSTed ``post``, if given), or None for anything else."""
    try:
        if post is None:
            response = await client.get(url)
        else:
            response = await client.post(url, json=post)
        if response.status_code != 200:
            return None
        value = json.loads(response.content)
    except (httpx.HTTPError, ValueError):
        return None
    return value if isinstance(value, dict) else None


# Reading the answers -----------------------------------------------------------------


def props_window(props: dict[str, Any] | None) -> ContextWindow | None:
    """llama.cpp's ``/props``: the window of one slot (older builds put it at the top)."""
    if props is None:
        return None
    settings = props.get("default_generation_settings")
    for source, where in ((settings, "default_generation_settings.n_ctx"), (props, "n_ctx")):
        tokens = _tokens(source.get("n_ctx") if isinstance(source, dict) else None)
        if tokens:
            return ContextWindow(tokens, f"llama.cpp /props {where}")
    return None


def drops_tools(props: dict[str, Any] | None) -> bool:
    """Whether llama.cpp says its chat template cannot render tools (it then drops them)."""
    caps = props.get("chat_template_caps") if props is not None else None
    return isinstance(caps, dict) and caps.get("supports_tools") is False


def models_window(models: dict[str, Any] | None, model: str) -> ContextWindow | None:
    """The ``/v1/models`` entry of ``model`` (or the only one): llama.cpp's ``meta.n_ctx``
    (never ``n_ctx_train``, the most the model could take), vLLM's ``max_model_len``,
    the ``context_length`` of OpenRouter and others."""
    entries = models.get("data") if models is not None else None
    if not isinstance(entries, list):
        return None
    entries = [entry for entry in entries if isinstance(entry, dict)]
    named = [entry for entry in entries if entry.get("id") == model]
    chosen = named[0] if named else entries[0] if len(entries) == 1 else None
    if chosen is None:
        return None
    meta = chosen.get("meta")
    top = chosen.get("top_provider")
    candidates = (
        (meta.get("n_ctx") if isinstance(meta, dict) else None, "meta.n_ctx"),
        (chosen.get("max_model_len"), "max_model_len"),
        (chosen.get("context_length"), "context_length"),
        (chosen.get("context_window"), "context_window"),
        (top.get("context_length") if isinstance(top, dict) else None, "context_length"),
    )
    for value, field in candidates:
        tokens = _tokens(value)
        if tokens:
            return ContextWindow(tokens, f"the server's /v1/models {field}")
    return None


def ollama_ps_window(ps: dict[str, Any] | None, model: str) -> ContextWindow | None:
    """Ollama's ``/api/ps``: the window of the loaded model, the one it really runs with."""
    loaded = ps.get("models") if ps is not None else None
    for entry in loaded if isinstance(loaded, list) else []:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name") or entry.get("model") or "")
        if name == model or name.removesuffix(":latest") == model:
            tokens = _tokens(entry.get("context_length"))
            if tokens:
                return ContextWindow(tokens, "Ollama /api/ps context_length")
    return None


def ollama_show_window(show: dict[str, Any] | None) -> ContextWindow | None:
    """Ollama's ``/api/show`` for a model not loaded yet: its ``num_ctx`` if its Modelfile
    sets one, else Ollama's default window (the model's own maximum, ``context_length``,
    is not what Ollama runs it with, and a prompt beyond the window is cut silently)."""
    if show is None:
        return None
    parameters = show.get("parameters")
    found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    if found:
        return ContextWindow(int(found.group(1)), "Ollama /api/show num_ctx")
    info = show.get("model_info")
    trained = 0
    if isinstance(info, dict):
        arch = info.get("general.architecture")
        trained = _tokens(info.get(f"{arch}.context_length")) or 0
    tokens = min(trained, OLLAMA_DEFAULT) if trained else OLLAMA_DEFAULT
    return ContextWindow(
        tokens, f"Ollama's default window ({tokens:,}; set OLLAMA_CONTEXT_LENGTH to change it)"
    )


def litellm_window(info: dict[str, Any] | None, model: str) -> ContextWindow | None:
    """LiteLLM's ``/v1/model/info``: ``max_input_tokens``, when its configuration says."""
    entries = info.get("data") if info is not None else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("model_name") == model:
            details = entry.get("model_info")
            tokens = _tokens(details.get("max_input_tokens") if isinstance(details, dict) else None)
            if tokens:
                return ContextWindow(tokens, "LiteLLM /v1/model/info max_input_tokens")
    return None


def _tokens(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None
