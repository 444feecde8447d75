"""The model providers, one row each: the only place a provider's name is spelled.

The command line's ``--help``, the configuration's checks, ``treadle config`` and the
wiring all read :data:`PROVIDERS`; adding a provider is adding a row::

    provider, name = resolve("anthropic:claude-sonnet-4-5")
    provider.key_env                     # 'ANTHROPIC_API_KEY'
    resolve("claude-sonnet-4-5")[0].name # 'anthropic': the family names its provider

Only the standard library is imported here: each row's adapter is imported by its
``build`` when that provider is the one used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing itself is not imported either: see Provider
if TYPE_CHECKING:
    from typing import Literal

    from treadle.adapters.http_model.endpoint import HttpModel
    from treadle.entrypoints.model_choice import ModelChoice
    from treadle.ports.model import Model

    Takes = Literal["NAME", "PATH", ""]


class ModelNotConfigured(Exception):
    """No model, or one treadle does not know: the turn is blocked before it starts."""


class Provider:
    """One way to reach a model: ``name:`` before the model's own name (``takes``:
    NAME, PATH, or "" for a model named by the provider alone, as ``demo``).

    ``key_env`` is the variable that holds the key for ``default_url`` ("": none is
    needed). ``default_url`` is the hosted API, used when ``base_url`` is not set; the
    adapter asks a server at another ``base_url`` for its window (llama.cpp's /props,
    /v1/models, Ollama, LiteLLM), never the hosted API, whose window is the known
    models'. ``families`` are the bare names it claims: ``claude`` claims ``claude-…``.

    A plain class, not a dataclass: ``treadle --version`` reads this table for its
    ``--help``, and dataclasses would import inspect and typing first.
    """

    __slots__ = ("about", "build", "default_url", "families", "key_env", "name", "takes")

    def __init__(
        self,
        name: str,
        build: Callable[[ModelChoice], Model],
        about: str,
        *,
        takes: Takes = "NAME",
        key_env: str = "",
        default_url: str = "",
        families: tuple[str, ...] = (),
    ) -> None:
        self.name, self.build, self.about, self.takes = name, build, about, takes
        self.key_env, self.default_url, self.families = key_env, default_url, families

    def __repr__(self) -> str:
        return f"Provider({self.name!r})"

    @property
    def usage(self) -> str:
        """``openai:NAME``, ``script:PATH``, ``demo``."""
        return f"{self.name}:{self.takes}" if self.takes else self.name

    def claims(self, bare: str) -> bool:
        return any(bare == family or bare.startswith(family + "-") for family in self.families)


def _demo(choice: ModelChoice) -> Model:
    from treadle.adapters.demo import demo_model

    return demo_model(choice.clock)


def _script(choice: ModelChoice) -> Model:
    from treadle.adapters.fakes.model import ScriptedModel

    try:
        return ScriptedModel.from_json(choice.name, choice.clock)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ModelNotConfigured(f"cannot load the script {choice.name}: {error}") from None


def _openai(choice: ModelChoice) -> Model:
    if choice.api == "responses":
        return _openai_responses(choice)
    from treadle.adapters.http_model.openai_chat import OpenAIChatModel

    return _http(OpenAIChatModel, choice)


def _openai_responses(choice: ModelChoice) -> Model:
    from treadle.adapters.http_model.openai_responses import OpenAIResponsesModel

    return _http(OpenAIResponsesModel, choice)


def _anthropic(choice: ModelChoice) -> Model:
    from treadle.adapters.http_model.anthropic import AnthropicModel

    return _http(AnthropicModel, choice)


def _http(adapter: type[HttpModel], choice: ModelChoice) -> Model:
    from treadle.adapters.http_model.endpoint import ModelOptions
    from treadle.adapters.http_model.transport import StreamLimits

    try:
        return adapter(
            model=choice.name,
            base_url=choice.base_url or None,
            api_key=choice.api_key,
            key_env=choice.key_env or None,
            connect_timeout=choice.connect_timeout,
            read_timeout=choice.read_timeout,
            limits=StreamLimits(choice.answer_limit, choice.event_limit),
            options=ModelOptions(
                effort=choice.effort, session=choice.session, reasoning_echo=choice.reasoning_echo
            ),
        )
    except ValueError as error:  # checked in the configuration already; this is the last word
        raise ModelNotConfigured(str(error)) from None


OPENAI_URL = "https://api.openai.com/v1"
PROVIDERS: dict[str, Provider] = {
    row.name: row
    for row in (
        Provider(
            "openai",
            _openai,
            'Chat Completions (or the Responses API with api = "responses"); any '
            "OpenAI-compatible server with --base-url",
            key_env="OPENAI_API_KEY",
            default_url=OPENAI_URL,
            families=("gpt", "chatgpt", "o1", "o3", "o4", "codex"),
        ),
        Provider(
            "openai-responses",
            _openai_responses,
            "OpenAI's Responses API",
            key_env="OPENAI_API_KEY",
            default_url=OPENAI_URL,
        ),
        Provider(
            "anthropic",
            _anthropic,
            "Anthropic's Messages API",
            key_env="ANTHROPIC_API_KEY",
            default_url="https://api.anthropic.com",
            families=("claude",),
        ),
        Provider("demo", _demo, "the built-in scripted model: no key, no network", takes=""),
        Provider("script", _script, "a scripted model from a JSON file", takes="PATH"),
    )
}
HTTP_PROVIDERS = tuple(name for name, row in PROVIDERS.items() if row.default_url)
"""The providers that speak to a server: what ``provider`` may set for a bare name."""
USAGES = ", ".join(row.usage for row in PROVIDERS.values())
"""``openai:NAME, openai-responses:NAME, anthropic:NAME, demo, script:PATH``."""


def resolve(model: str) -> tuple[Provider, str]:
    """The provider ``model`` names and the model's own name; ModelNotConfigured for a
    model no row takes (a bare name is taken by the provider whose family it is).

    >>> resolve("openai:gpt-4.1")[1]
    'gpt-4.1'
    """
    prefix, colon, name = model.partition(":")
    row = PROVIDERS.get(prefix)
    if row is not None and (bool(colon and name) if row.takes else not colon):
        return row, name
    if not colon:
        for row in PROVIDERS.values():
            if row.claims(model):
                return row, model
        raise ModelNotConfigured(
            f"unknown model {model!r}: name its provider, one of {USAGES}"
            if model
            else f"no model configured: pass --model ({USAGES})"
        )
    raise ModelNotConfigured(f"unknown model {model!r}: use {USAGES}")


def key_needed(model: str, base_url: str, key_env: str, environ: Mapping[str, str]) -> str:
    """The variable to set when the model's hosted API needs a key and it is not set;
    "" when all is well (a server at another ``base_url`` may need none)."""
    try:
        row, _ = resolve(model)
    except ModelNotConfigured:
        return ""
    hosted = not base_url or _root(base_url) == _root(row.default_url)
    variable = key_env or row.key_env
    if not row.key_env or not hosted or environ.get(variable):
        return ""
    return variable


def _root(url: str) -> str:
    """The address without its version: ``…/v1`` and ``…`` are the same hosted API."""
    return url.rstrip("/").removesuffix("/v1")
