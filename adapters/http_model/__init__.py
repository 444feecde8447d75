"""The real Model adapters: OpenAI-compatible Chat Completions and Anthropic Messages,
streamed over httpx, one new connection per attempt.

Importing this package loads httpx; the container imports it only when a real model
is asked for, so ``treadle --version`` and the demo model stay light.
"""

from treadle.adapters.http_model.anthropic import AnthropicModel
from treadle.adapters.http_model.openai_chat import OpenAIChatModel

__all__ = ["AnthropicModel", "OpenAIChatModel"]
