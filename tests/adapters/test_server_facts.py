"""Reading a server's answers about its window, on recorded and documented bodies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from treadle.adapters.http_model.server_facts import (
    OLLAMA_DEFAULT,
    drops_tools,
    litellm_window,
    models_window,
    ollama_ps_window,
    ollama_show_window,
    props_window,
)
from treadle.adapters.known_windows import known_window
from treadle.domain.values.model import ContextWindow

SERVERS = Path(__file__).resolve().parents[1] / "fixtures" / "servers"


def recorded(name: str) -> Any:
    return json.loads((SERVERS / name).read_text())


def test_llama_cpp_props_give_the_window_of_one_slot() -> None:
    origin = "llama.cpp /props default_generation_settings.n_ctx"
    assert props_window(recorded("llamacpp_props.json")) == ContextWindow(2048, origin)
    assert props_window(recorded("llamacpp_np2_props.json")) == ContextWindow(2048, origin)
    assert props_window({"n_ctx": 4096}) == ContextWindow(4096, "llama.cpp /props n_ctx")
    assert props_window({"default_generation_settings": {}}) is None
    assert props_window(None) is None


def test_llama_cpp_props_say_when_the_template_drops_the_tools() -> None:
    assert drops_tools(recorded("llamacpp_props.json"))
    assert not drops_tools(recorded("llamacpp_qwen3coder_props.json"))
    assert not drops_tools({"default_generation_settings": {"n_ctx": 1}})
    assert not drops_tools(None)


def test_the_models_list_gives_llama_cpps_window_never_its_training_length() -> None:
    window = models_window(recorded("llamacpp_v1_models.json"), "whatever-name")
    assert window == ContextWindow(2048, "the server's /v1/models meta.n_ctx")
    assert models_window({"data": [{"id": "m", "meta": {"n_ctx_train": 32768}}]}, "m") is None


def test_the_models_list_gives_vllms_and_others_windows_for_the_model_asked() -> None:
    vllm = {
        "data": [
            {"id": "Qwen/Qwen3-Coder", "owned_by": "vllm", "max_model_len": 65536},
            {"id": "other", "max_model_len": 4096},
        ]
    }
    assert models_window(vllm, "Qwen/Qwen3-Coder") == ContextWindow(
        65536, "the server's /v1/models max_model_len"
    )
    assert models_window(vllm, "absent") is None  # more than one, and none is the model
    router = {"data": [{"id": "a/b", "top_provider": {"context_length": 131072}}]}
    assert models_window(router, "a/b") == ContextWindow(
        131072, "the server's /v1/models context_length"
    )
    assert models_window(recorded("litellm_v1_models.json"), "gemma") is None


def test_ollama_says_the_window_of_a_loaded_model_and_its_default_otherwise() -> None:
    ps = {"models": [{"name": "qwen3:8b", "context_length": 8192}, {"name": "x:latest"}]}
    assert ollama_ps_window(ps, "qwen3:8b") == ContextWindow(8192, "Ollama /api/ps context_length")
    assert ollama_ps_window(ps, "other") is None
    show = {"parameters": "num_ctx 32768\nstop <end>", "model_info": {}}
    assert ollama_show_window(show) == ContextWindow(32768, "Ollama /api/show num_ctx")
    trained = {"model_info": {"general.architecture": "llama", "llama.context_length": 131072}}
    default = ollama_show_window(trained)
    assert default is not None and default.tokens == OLLAMA_DEFAULT
    assert "OLLAMA_CONTEXT_LENGTH" in default.origin


def test_litellm_says_the_window_only_when_its_configuration_does() -> None:
    assert litellm_window(recorded("litellm_model_info.json"), "gemma") is None
    configured = {"data": [{"model_name": "local", "model_info": {"max_input_tokens": 32768}}]}
    assert litellm_window(configured, "local") == ContextWindow(
        32768, "LiteLLM /v1/model/info max_input_tokens"
    )


def test_hosted_model_families_have_known_windows() -> None:
    assert known_window("gpt-4.1-mini") == ContextWindow(1_047_576, "known model family gpt-4.1")
    assert known_window("gpt-4o-2024-08-06") == ContextWindow(128_000, "known model family gpt-4o")
    assert known_window("claude-sonnet-4-5") == ContextWindow(200_000, "known model family claude")
    assert known_window("openai/gpt-4o") is not None  # a proxy's provider prefix
    assert known_window("qwen2.5-coder:7b") is None  # local: the server says, not a table
