"""The context windows of hosted model families, for a server that does not say.

Only hosted families are listed: a local server (Ollama, llama.cpp, vLLM) runs a model
with the window it was started with, often far smaller than the model was trained
for, and says so itself (see :mod:`treadle.adapters.http_model.server_facts`). A
figure here that is too large is corrected by the server's first refusal.

Example::

    >>> known_window("gpt-4.1-mini")
    ContextWindow(tokens=1047576, origin='known model family gpt-4.1')
    >>> known_window("openai/gpt-4o") is not None     # a proxy's provider prefix
    True
"""

from __future__ import annotations

from treadle.domain.values.model import ContextWindow

KNOWN_WINDOWS: dict[str, int] = {
    # OpenAI (the GPT-5 figure is its input limit: the window less the longest answer)
    "gpt-5": 272_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "codex-mini": 200_000,
    # Anthropic
    "claude": 200_000,
    # Others' hosted APIs
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "gemini-1.5": 1_048_576,
    "gemini-2": 1_048_576,
    "mistral-large": 128_000,
    "codestral": 256_000,
}


def known_window(model: str) -> ContextWindow | None:
    """The window of the longest known family ``model`` belongs to, if any."""
    name = model.rsplit("/", 1)[-1].lower()
    families = [family for family in KNOWN_WINDOWS if name.startswith(family)]
    if not families:
        return None
    family = max(families, key=len)
    return ContextWindow(KNOWN_WINDOWS[family], f"known model family {family}")
