"""The real Model adapters: OpenAI-compatible Chat Completions, OpenAI Responses and
Anthropic Messages, streamed over httpx, one new connection per attempt.

Importing this package loads httpx; the container imports it only when a real model
is asked for, so ``treadle --version`` and the demo model stay light.
"""

import importlib
import importlib.util
import sys
from typing import TYPE_CHECKING


def _import_httpx_without_its_command_line() -> None:
    """httpx's ``__init__`` imports its command-line client, and with it click and rich
    when they are installed: about 30 ms of every start, for a tool treadle never runs.
    The import is refused while httpx loads (it then falls back to a stub), and allowed
    again afterwards for anyone who does want ``httpx._main``."""
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    sys.modules["httpx._main"] = None  # type: ignore[assignment]
    try:
        import httpx  # noqa: F401
    finally:
        del sys.modules["httpx._main"]


def _mark_sniffio_missing() -> None:
    """httpcore imports sniffio at every connection's lock (``current_async_library``),
    some seven times a request, and falls back to asyncio when it is not installed
    (anyio no longer needs it). A module that is not installed is looked for along the
    whole of ``sys.path`` each time: marked missing once, each of those imports fails
    at once, as it would have failed anyway."""
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


_import_httpx_without_its_command_line()
_mark_sniffio_missing()

if TYPE_CHECKING:
    from treadle.adapters.http_model.anthropic import AnthropicModel
    from treadle.adapters.http_model.endpoint import ModelOptions
    from treadle.adapters.http_model.openai_chat import OpenAIChatModel
    from treadle.adapters.http_model.openai_responses import OpenAIResponsesModel

_ADAPTERS = {
    "AnthropicModel": "treadle.adapters.http_model.anthropic",
    "ModelOptions": "treadle.adapters.http_model.endpoint",
    "OpenAIChatModel": "treadle.adapters.http_model.openai_chat",
    "OpenAIResponsesModel": "treadle.adapters.http_model.openai_responses",
}
__all__ = ["AnthropicModel", "ModelOptions", "OpenAIChatModel", "OpenAIResponsesModel"]


def __getattr__(name: str) -> object:
    """Each adapter is imported when it is asked for: a run needs only its own protocol."""
    if name in _ADAPTERS:
        return getattr(importlib.import_module(_ADAPTERS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
