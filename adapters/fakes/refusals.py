"""How each provider refuses a request that does not fit its context window: the error
bodies, as the servers send them (from llama.cpp and LiteLLM recordings, and the
providers' own sources for the others; see ``tests/fixtures/refusals/SOURCES.md``).

The test HTTP server sends these over the wire. The scripted model refuses with
:func:`refusal_error`, the domain error a real adapter reads from the same body (the
fakes import no adapter; a test holds the two to agreement).

Example::

    >>> status, body = refusal_body("anthropic", prompt=210_000, window=200_000, max_tokens=8192)
    >>> body["error"]["message"]
    'prompt is too long: 210000 tokens > 200000 maximum'
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from treadle.domain.values.model import ContextExceeded

Provider = Literal[
    "openai",
    "openai-new",
    "anthropic",
    "anthropic-old",
    "llama.cpp",
    "vllm",
    "vllm-old",
    "litellm",
]
PROVIDERS: tuple[Provider, ...] = get_args(Provider)
OUTPUT_TOO: frozenset[Provider] = frozenset({"anthropic-old", "vllm-old"})
"""Providers that refuse the prompt and the output budget together over the window;
the others refuse the prompt alone, and cut an answer that fills the window."""


def refuses(like: Provider, *, prompt: int, window: int, max_tokens: int) -> bool:
    """Whether a provider refuses a request of ``prompt`` tokens asking ``max_tokens``."""
    if like in OUTPUT_TOO:
        return prompt + max_tokens > window
    return prompt >= window if like == "llama.cpp" else prompt > window


NAMES_NO_FIGURE: frozenset[Provider] = frozenset({"openai-new"})
"""Providers whose refusal says the input is too long without saying by how much."""


def refusal_error(like: Provider, *, prompt: int, window: int, max_tokens: int) -> ContextExceeded:
    """The refusal as treadle reads it from ``like``'s body: its message on one line, the
    figures it names, and whether the output budget is at fault (the prompt alone fits)."""
    _, body = refusal_body(like, prompt=prompt, window=window, max_tokens=max_tokens)
    detail = " ".join(body["error"]["message"].split())
    if like in NAMES_NO_FIGURE:
        return ContextExceeded(detail)
    output_too = like in OUTPUT_TOO and prompt < window and max_tokens != 0
    return ContextExceeded(detail, window, prompt, output_too)


def refusal_body(
    like: Provider, *, prompt: int, window: int, max_tokens: int
) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON body of ``like``'s refusal."""
    match like:
        case "openai":
            return 400, _openai(
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {prompt} tokens. Please reduce the length of the messages."
            )
        case "openai-new":
            return 400, _openai(
                "Your input exceeds the context window of this model. Please adjust your "
                "input and try again.",
                param="input",
            )
        case "anthropic":
            return 400, _anthropic(f"prompt is too long: {prompt} tokens > {window} maximum")
        case "anthropic-old":
            return 400, _anthropic(
                f"input length and `max_tokens` exceed context limit: {prompt} + {max_tokens} "
                f"> {window}, decrease input length or `max_tokens` and try again"
            )
        case "llama.cpp":
            return 400, {
                "error": {
                    "code": 400,
                    "message": f"request ({prompt} tokens) exceeds the available context size "
                    f"({window} tokens), try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt,
                    "n_ctx": window,
                }
            }
        case "vllm":
            return 400, _vllm(
                f"This model's maximum context length is {window} tokens. However, your prompt "
                f"contains {prompt} input tokens, which exceeds this limit even without any "
                f"output tokens. Please reduce the length of the input prompt. "
                f"(parameter=input_tokens, value={prompt})",
                "input_tokens",
            )
        case "vllm-old":
            if prompt >= window:
                return 400, _vllm(
                    f"This model's maximum context length is {window} tokens. However, your "
                    f"request has {prompt} input tokens. Please reduce the length of the input "
                    "messages.",
                    "input_tokens",
                )
            return 400, _vllm(
                f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This "
                f"model's maximum context length is {window} tokens and your request has "
                f"{prompt} input tokens ({max_tokens} > {window} - {prompt}).",
                "max_tokens",
            )
        case "litellm":
            upstream = (
                f"request ({prompt} tokens) exceeds the available context size ({window} "
                "tokens), try increasing it"
            )
            return 400, {
                "error": {
                    "message": "litellm.ContextWindowExceededError: litellm.BadRequestError: "
                    f"ContextWindowExceededError: OpenAIException - {upstream}\nmodel=local. "
                    "context_window_fallbacks=None. fallbacks=None.\n\nSet "
                    "'context_window_fallback' - https://docs.litellm.ai/docs/routing#fallbacks"
                    "\n\nLiteLLM: model group 'local' failed with the error above. No fallback "
                    "was attempted.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "400",
                }
            }


def _openai(message: str, param: str = "messages") -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": "context_length_exceeded",
        }
    }


def _anthropic(message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
        "request_id": "req_011CScripted",
    }


def _vllm(message: str, param: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "BadRequestError", "param": param, "code": 400}}
