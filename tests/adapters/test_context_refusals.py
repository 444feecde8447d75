"""Each provider's refusal for length, recognised as one domain error with its figures;
everything else left to the other rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from treadle.adapters.context_refusals import context_refusal
from treadle.adapters.fakes.refusals import (
    OUTPUT_TOO,
    PROVIDERS,
    Provider,
    refusal_body,
    refusal_error,
)
from treadle.adapters.http_model.payload import server_error
from treadle.domain.values.model import ContextExceeded, HttpStatusError, MalformedStream

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def recorded(name: str) -> bytes:
    return (FIXTURES / "refusals" / name).read_bytes()


@pytest.mark.parametrize(
    ("name", "window", "prompt"),
    [
        ("llamacpp_over_ctx.json", 2048, 3624),
        ("llamacpp_messages_over_ctx.json", 2048, 3624),
        ("llamacpp_np2_over_ctx.json", 2048, 3624),
        ("litellm_over_ctx.json", 2048, 3624),  # the figures come from the wrapped text
    ],
)
def test_a_recorded_refusal_is_recognised_with_its_figures(
    name: str, window: int, prompt: int
) -> None:
    refusal = context_refusal(recorded(name))
    assert isinstance(refusal, ContextExceeded)
    assert (refusal.window, refusal.prompt_tokens, refusal.output_too) == (window, prompt, False)
    assert "exceeds the available context size" in refusal.detail
    assert "\n" not in refusal.detail  # LiteLLM's appended lines make one line


@pytest.mark.parametrize("like", PROVIDERS)
def test_each_providers_refusal_is_recognised(like: Provider) -> None:
    status, body = refusal_body(like, prompt=9000, window=8192, max_tokens=1024)
    assert status == 400
    refusal = context_refusal(json.dumps(body).encode())
    assert isinstance(refusal, ContextExceeded)
    if like == "openai-new":
        assert (refusal.window, refusal.prompt_tokens) == (None, None)  # it names none
    else:
        assert refusal.window == 8192
    if like == "vllm-old" or like not in OUTPUT_TOO:
        assert not refusal.output_too  # a prompt of 9,000 does not fit by itself


@pytest.mark.parametrize("like", PROVIDERS)
@pytest.mark.parametrize(
    ("prompt", "window", "max_tokens"),
    [(9000, 8192, 1024), (6000, 8192, 4096), (8192, 8192, 512), (131_073, 131_072, 0)],
)
def test_the_scripted_models_refusal_is_what_an_adapter_reads_from_the_body(
    like: Provider, prompt: int, window: int, max_tokens: int
) -> None:
    # The fakes import no adapter: the scripted model says its refusal in its own words,
    # and this holds them to what the recogniser makes of the provider's body.
    limits = {"prompt": prompt, "window": window, "max_tokens": max_tokens}
    _, body = refusal_body(like, **limits)
    assert refusal_error(like, **limits) == context_refusal(json.dumps(body).encode())


@pytest.mark.parametrize("like", sorted(OUTPUT_TOO))
def test_a_refusal_of_prompt_and_budget_together_says_the_prompt_fits(like: Provider) -> None:
    _, body = refusal_body(like, prompt=6000, window=8192, max_tokens=4096)
    refusal = context_refusal(body)
    assert refusal == ContextExceeded(refusal.detail if refusal else "", 8192, 6000, True)


@pytest.mark.parametrize(
    ("body", "window", "prompt", "output_too"),
    [
        # OpenAI, older models: the messages and the completion, counted apart.
        (
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens. However, you"
                    " requested 10057 tokens (57 in the messages, 10000 in the completion)."
                    " Please reduce the length of the messages or completion.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
            8192,
            57,
            True,
        ),
        # llama.cpp before 2025-10: a 500 with no figure in its words, but in its fields.
        (
            {
                "error": {
                    "code": 500,
                    "message": "the request exceeds the available context size. try increasing "
                    "the context size or enable context shift",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 5000,
                    "n_ctx": 4096,
                }
            },
            4096,
            5000,
            False,
        ),
        # Ollama's native API wraps llama-server's JSON in a string.
        (
            {
                "error": '{"error":{"code":400,"message":"request (8889 tokens) exceeds the '
                'available context size (4096 tokens), try increasing it","type":'
                '"exceed_context_size_error","n_prompt_tokens":8889,"n_ctx":4096}}'
            },
            4096,
            8889,
            False,
        ),
        # vLLM 0.33's engine, a prompt exactly at the window.
        (
            {
                "error": {
                    "message": "The decoder prompt (length 32768) plus the number of requested "
                    "output tokens (at least 1) is longer than the maximum model length of "
                    "32768.",
                    "type": "BadRequestError",
                    "code": 400,
                }
            },
            32768,
            32768,
            False,
        ),
        # OpenRouter.
        (
            {
                "error": {
                    "message": "This endpoint's maximum context length is 32768 tokens. However,"
                    " you requested about 42832 tokens (42832 of text input).",
                    "code": 400,
                }
            },
            32768,
            42832,
            False,
        ),
        # The Responses API's streamed error event, nested (the adapter to come passes it on).
        (
            {
                "type": "error",
                "sequence_number": 2,
                "error": {
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                    "message": "Your input exceeds the context window of this model.",
                    "param": "input",
                },
            },
            None,
            None,
            False,
        ),
    ],
)
def test_other_refusals_in_the_wild_are_recognised(
    body: dict[str, object], window: int | None, prompt: int | None, output_too: bool
) -> None:
    refusal = context_refusal(body)
    assert isinstance(refusal, ContextExceeded)
    assert (refusal.window, refusal.prompt_tokens, refusal.output_too) == (
        window,
        prompt,
        output_too,
    )


def test_a_flat_responses_error_and_a_plain_text_body_are_recognised() -> None:
    flat = {"code": "context_length_exceeded", "message": "Your input exceeds the context window"}
    assert context_refusal(flat) == ContextExceeded("Your input exceeds the context window")
    text = b"prompt is too long: 208310 tokens > 200000 maximum"
    assert context_refusal(text) == ContextExceeded(text.decode(), 200000, 208310)


@pytest.mark.parametrize(
    "body",
    [
        b"context length exceeded",
        b'{"error": {"message": "Context length exceeded", "type": "invalid_request_error"}}',
        b'{"error": {"code": 500, "message": "Context size has been exceeded.", "type": '
        b'"server_error"}}',
        b'{"object": "error", "message": "The prompt exceeds the maximum context length."}',
    ],
)
def test_refusals_in_so_many_words_are_recognised(body: bytes) -> None:
    # Words without figures: the window is then learned as an upper bound.
    refusal = context_refusal(body)
    assert isinstance(refusal, ContextExceeded)
    assert (refusal.window, refusal.prompt_tokens) == (None, None)


@pytest.mark.parametrize(
    "body",
    [
        recorded("llamacpp_bad_args.json"),
        recorded("litellm_bad_args.json"),
        recorded("llamacpp_loading_503.json"),
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        b'{"error":{"code":500,"message":"tools param requires --jinja flag"}}',
        b"<html><body>502 Bad Gateway</body></html>",
        b"",
    ],
)
def test_other_errors_are_not_refusals_for_length(body: bytes) -> None:
    assert context_refusal(body) is None


def test_an_error_in_the_stream_with_a_string_code_is_that_status() -> None:
    failure = server_error({"message": "upstream gone", "type": None, "code": "500"}).failure()
    assert failure == HttpStatusError(500, "upstream gone", mid_stream=True)
    rate = server_error({"message": "slow down", "code": 429}).failure()
    assert rate == HttpStatusError(429, "slow down", mid_stream=True)
    unknown = server_error({"message": "odd", "code": "abc"}).failure()
    assert isinstance(unknown, MalformedStream)


def test_a_refusal_for_length_in_the_stream_is_recognised() -> None:
    _, body = refusal_body("anthropic", prompt=300_000, window=200_000, max_tokens=1)
    failure = server_error(body["error"]).failure()
    assert failure == ContextExceeded(
        "prompt is too long: 300000 tokens > 200000 maximum", 200_000, 300_000
    )
