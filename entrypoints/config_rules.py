"""The rules across configuration keys, checked once every layer has had its say: a
budget cap below the budget, a thinking budget with no room for the answer, a server
table that cannot start, a price table without its two prices, a model no provider
takes. Each problem is a ConfigError naming the origins of both keys::

    check_together(app)   # ConfigError: user file …: max_tokens_cap: 100 is less than …
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from treadle.domain.rules.truncation import MIN_THINKING_BUDGET
from treadle.entrypoints.config_check import shown, table_problem
from treadle.entrypoints.config_schema import DEFAULT_MAX_TOKENS, AppConfig, ConfigError
from treadle.entrypoints.providers import ModelNotConfigured, resolve

if TYPE_CHECKING:
    from treadle.adapters.mcp.config import McpServerConfig


def check_together(app: AppConfig) -> AppConfig:
    """Checks across keys (ConfigError naming both origins), and ``provider`` + a bare
    model name into ``PROVIDER:NAME``."""
    for check in (_budgets, _servers, _thinking, _prices, _max_cost):
        check(app)
    if app.provider and app.model and ":" not in app.model and app.model != "demo":
        app = replace(app, model=f"{app.provider}:{app.model}")
    if app.model:
        try:
            resolve(app.model)
        except ModelNotConfigured as problem:
            raise ConfigError(f"{app.origin('model')}: model: {problem}") from None
    return app


def _max_tokens(app: AppConfig) -> int:
    return app.max_tokens if app.max_tokens is not None else DEFAULT_MAX_TOKENS


def _budgets(app: AppConfig) -> None:
    max_tokens = _max_tokens(app)
    if app.max_tokens_cap < max_tokens:
        raise ConfigError(
            f"{app.origin('max_tokens_cap')}: max_tokens_cap: {app.max_tokens_cap} is less than "
            f"max_tokens {max_tokens} (from {app.origin('max_tokens')})"
        )
    if app.tool_timeout_max < app.tool_timeout:
        raise ConfigError(
            f"{app.origin('tool_timeout_max')}: tool_timeout_max: {app.tool_timeout_max:g} is "
            f"less than tool_timeout {app.tool_timeout:g} (from {app.origin('tool_timeout')})"
        )


def _servers(app: AppConfig) -> None:
    if not app.mcp_servers:
        return
    from treadle.adapters.mcp.config import TableProblem, server_config

    for name, table in app.mcp_servers.items():
        try:
            server_config(name, table)
        except TableProblem as problem:
            origin = app.origin(f"mcp_servers.{name}")
            raise ConfigError(f"{origin}: mcp_servers.{table_problem(name, problem)}") from None


def _thinking(app: AppConfig) -> None:
    max_tokens, budget, origin = (
        _max_tokens(app),
        app.thinking_budget,
        app.origin("thinking_budget"),
    )
    if budget and budget >= max_tokens:
        raise ConfigError(
            f"{origin}: thinking_budget: {budget} is not less than max_tokens {max_tokens} "
            f"(from {app.origin('max_tokens')}): the thinking counts inside the budget, and "
            "the answer needs room too"
        )
    if 0 < budget < MIN_THINKING_BUDGET:
        raise ConfigError(
            f"{origin}: thinking_budget: {budget} is less than {MIN_THINKING_BUDGET}, the "
            "least Anthropic takes (0 turns thinking off)"
        )


def _prices(app: AppConfig) -> None:
    for model, table in app.prices.items():
        missing = [kind for kind in ("input", "output") if kind not in table]
        if missing:
            raise ConfigError(
                f"{app.origin('prices')}: prices.{shown(model)}: no {missing[0]} price "
                "(input and output are needed; the cache prices default to input)"
            )


def _max_cost(app: AppConfig) -> None:
    """A cost limit needs the model's prices: treadle does not guess them."""
    if app.max_cost is None:
        return
    name = app.model.partition(":")[2] or app.model
    if not (app.prices.get(app.model) or app.prices.get(name)):
        raise ConfigError(
            f"{app.origin('max_cost')}: max_cost: the prices of {app.model or 'the model'} "
            f'are not known (set them as [prices."{app.model}"] input and output)'
        )


def mcp_server_configs(app: AppConfig) -> tuple[McpServerConfig, ...]:
    """The configured MCP servers, in the order their tables came."""
    if not app.mcp_servers:
        return ()
    from treadle.adapters.mcp.config import server_config

    return tuple(server_config(name, table) for name, table in app.mcp_servers.items())
