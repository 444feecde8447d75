"""Recognising a refusal for length: each provider's words for "the prompt is longer than
my context window", as one domain error with the figures the server named.

The rules are data, tried in order: structured fields first (llama.cpp's
``exceed_context_size_error`` with ``n_ctx`` and ``n_prompt_tokens``, OpenAI's
``context_length_exceeded`` code), then the messages of each provider (which also give
the figures), then phrases that name no figure. A proxy such as LiteLLM wraps the
upstream text verbatim, so the same rules find it inside its message.

Every adapter runs its error answers through :func:`context_refusal`: the HTTP error
bodies of Chat Completions and Messages, their in-stream error events, and — for the
Responses API adapter to come — the ``error`` of a ``response.failed`` event or an
``error`` event (``{"code": "context_length_exceeded", "message": …}``, flat or nested),
which this function takes as it is.

Example::

    >>> context_refusal({"error": {"type": "exceed_context_size_error",
    ...     "message": "request (3624 tokens) exceeds the available context size (2048 tokens)",
    ...     "n_ctx": 2048, "n_prompt_tokens": 3624}})
    ContextExceeded(detail='request (3624 tokens) exceeds …', window=2048, prompt_tokens=3624, …)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from treadle.domain.values.model import ContextExceeded

_N = r"(\d[\d,]*)"
_DETAIL_LIMIT = 500


@dataclass(frozen=True, slots=True)
class _Rule:
    """A provider's message: which groups are the prompt, the output and the window.

    The pattern stays text until a refusal is read (``re`` compiles it then, once):
    most sessions never read one, and compiling them all would slow every start."""

    provider: str
    pattern: str
    groups: tuple[str, ...]
    output_too: bool = False


def _rule(provider: str, pattern: str, *groups: str, output_too: bool = False) -> _Rule:
    return _Rule(provider, pattern, groups, output_too)


RULES: tuple[_Rule, ...] = (
    # llama.cpp since 2025-10 (and Ollama's native API, which wraps it)
    _rule(
        "llama.cpp",
        rf"request \({_N} tokens\) exceeds the available context size \({_N} tokens\)",
        "prompt",
        "window",
    ),
    _rule(
        "llama.cpp",
        rf"input \({_N} tokens\) is larger than the max context size \({_N} tokens\)",
        "prompt",
        "window",
    ),
    # Anthropic
    _rule("Anthropic", rf"prompt is too long: {_N} tokens > {_N} maximum", "prompt", "window"),
    _rule(
        "Anthropic",
        rf"input length and `?max_tokens`? exceed context limit: {_N} \+ {_N} > {_N}",
        "prompt",
        "output",
        "window",
        output_too=True,
    ),
    # vLLM up to 0.14: the prompt fits, the prompt and max_tokens do not
    _rule(
        "vLLM",
        rf"'max_tokens' or 'max_completion_tokens' is too large: {_N}\. This model's maximum "
        rf"context length is {_N} tokens and your request has {_N} input tokens",
        "output",
        "window",
        "prompt",
        output_too=True,
    ),
    _rule(
        "vLLM",
        rf"(?:max_tokens|max_completion_tokens)={_N} cannot be greater than max_model_len={_N}",
        "output",
        "window",
        output_too=True,
    ),
    # vLLM 0.33, vLLM up to 0.14 and gateways, OpenAI (old and current), DeepSeek, OpenRouter
    _rule(
        "vLLM",
        rf"maximum context length is {_N} tokens\. However, your prompt contains "
        rf"(?:at least )?{_N} input tokens",
        "window",
        "prompt",
    ),
    _rule(
        "vLLM",
        rf"maximum context length is {_N} tokens\. However, your request has {_N} input tokens",
        "window",
        "prompt",
    ),
    _rule(
        "OpenAI",
        rf"maximum context length is {_N} tokens\. However, you requested (?:about )?{_N} "
        rf"tokens \({_N} (?:in the messages|of text input), {_N} in the (?:completion|output)",
        "window",
        "total",
        "prompt",
        "output",
        output_too=True,
    ),
    _rule(
        "OpenAI",
        rf"maximum context length is {_N} tokens\. However, you requested (?:about )?{_N} tokens",
        "window",
        "prompt",
    ),
    _rule(
        "OpenAI",
        rf"maximum context length is {_N} tokens\. However, your messages resulted in {_N} tokens",
        "window",
        "prompt",
    ),
    _rule(
        "vLLM",
        rf"prompt \(length {_N}\).*?longer than the maximum model length of {_N}",
        "prompt",
        "window",
    ),
    _rule(
        "vLLM",
        rf"Input length \({_N}\) exceeds model's maximum context length \({_N}\)",
        "prompt",
        "window",
    ),
    _rule("any", rf"maximum context length is {_N} tokens", "window"),
)

PHRASES = (
    "your input exceeds the context window of this model",  # OpenAI, newer models
    "the request exceeds the available context size",  # llama.cpp 2025-09
    "the input length exceeds the context length",  # Ollama
    "the prompt is longer than the context length",  # Ollama, shift=false
    "contextwindowexceedederror",  # LiteLLM
    "context_length_exceeded",
    "exceed context limit",
    "context window exceeded",
    "prompt is too long",  # Anthropic, wording without figures
    "context size has been exceeded",  # llama.cpp and LM Studio, the window filled mid-answer
    "context length exceeded",  # gateways and small servers, in so many words
    "maximum context length",  # vLLM and OpenAI, wordings without a figure
)


def context_refusal(body: Any) -> ContextExceeded | None:
    """The refusal for length in an error answer (a body's bytes or text, its decoded
    JSON, or an in-stream error's object), or None when it is some other error.

    The words decide, whatever the HTTP status: llama.cpp's first version of its error
    was a 500, and a proxy may pass a refusal on with a status of its own.
    """
    error, message = _error_of(body)
    if error.get("type") == "exceed_context_size_error":
        return ContextExceeded(
            _detail(message), _figure(error.get("n_ctx")), _figure(error.get("n_prompt_tokens"))
        )
    for rule in RULES:
        found = re.search(rule.pattern, message, re.IGNORECASE | re.DOTALL)
        if found is None:
            continue
        figures = {
            name: _figure(value) for name, value in zip(rule.groups, found.groups(), strict=True)
        }
        window, prompt = figures.get("window"), figures.get("prompt")
        # The output budget is at fault only if the prompt alone would fit.
        alone_fits = window is None or prompt is None or prompt < window
        return ContextExceeded(
            _detail(message),
            window=window,
            prompt_tokens=prompt,
            output_too=rule.output_too and alone_fits and figures.get("output") != 0,
        )
    lowered = message.lower()
    if error.get("code") == "context_length_exceeded" or any(p in lowered for p in PHRASES):
        return ContextExceeded(_detail(message))
    return None


def _error_of(body: Any) -> tuple[dict[str, Any], str]:
    """The error object of an answer, and the text to search."""
    if isinstance(body, bytes | bytearray):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        text = body.strip().removeprefix("data:").strip()
        try:
            body = json.loads(text)
        except ValueError:
            return {}, text
    if not isinstance(body, dict):
        return {}, str(body)
    error = body.get("error", body)
    if isinstance(error, str):
        # Ollama's native API: {"error": "<string>"}, the string itself llama-server's JSON.
        inner, text = _error_of(error) if error.lstrip().startswith("{") else ({}, error)
        return inner, text
    if not isinstance(error, dict):
        return {}, json.dumps(body)
    message = error.get("message")
    return error, message if isinstance(message, str) else json.dumps(error)


def _figure(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.replace(",", "").isdigit():
        return int(value.replace(",", ""))
    return None


def _detail(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= _DETAIL_LIMIT else line[: _DETAIL_LIMIT - 1] + "…"
