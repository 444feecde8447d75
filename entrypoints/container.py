"""The composition root: one container wiring adapters to ports.

Tests and library users override a provider to swap an adapter::

    container = Container()
    container.model.override(providers.Object(ScriptedModel([...])))
"""

from __future__ import annotations

import os
from typing import Any

from dependency_injector import containers, providers

from treadle.adapters.jsonl_transcript import JsonlTranscript
from treadle.adapters.plain_terminal import JsonLinesTerminal, PlainTerminal
from treadle.adapters.system_clock import SystemClock
from treadle.domain.approval import POLICIES
from treadle.domain.settings import SubAgentClocks, TurnSettings
from treadle.domain.truncation import TokenBudget
from treadle.domain.turn import Agent, TurnPorts, core_tools
from treadle.entrypoints.config import AppConfig
from treadle.ports.clock import Clock
from treadle.ports.model import Model
from treadle.ports.process import ProcessRunner
from treadle.ports.tools import Tool, ToolLimits


class ModelNotConfigured(Exception):
    """No model, or one treadle does not know: the turn is blocked before it starts."""


def build_model(app: AppConfig, clock: Clock) -> Model:
    """The model adapter ``app.model`` names: ``demo``, ``script:PATH``, ``openai:NAME``…"""
    provider, _, name = app.model.partition(":")
    if provider == "demo":
        from treadle.adapters.demo import demo_model

        return demo_model(clock)
    if provider == "script" and name:
        from treadle.adapters.fakes.model import ScriptedModel

        return ScriptedModel.from_json(name, clock)
    if provider in ("openai", "anthropic") and name:
        return _http_model(provider, name, app)
    if not app.model:
        raise ModelNotConfigured(
            "no model configured: pass --model (openai:NAME, anthropic:NAME or demo)"
        )
    raise ModelNotConfigured(
        f"unknown model {app.model!r}: use openai:NAME, anthropic:NAME, demo or script:PATH"
    )


def _http_model(provider: str, name: str, app: AppConfig) -> Model:
    if provider == "openai":
        from treadle.adapters.http_model.openai_chat import OpenAIChatModel

        key_env = app.key_env or "OPENAI_API_KEY"
        return OpenAIChatModel(
            model=name,
            base_url=app.base_url or "https://api.openai.com/v1",
            api_key=os.environ.get(key_env) or None,
            key_env=key_env,
        )
    from treadle.adapters.http_model.anthropic import AnthropicModel

    key_env = app.key_env or "ANTHROPIC_API_KEY"
    return AnthropicModel(
        model=name,
        base_url=app.base_url or "https://api.anthropic.com",
        api_key=os.environ.get(key_env) or None,
        key_env=key_env,
    )


def build_runner(app: AppConfig) -> ProcessRunner:
    from treadle.adapters.process import SubprocessRunner

    return SubprocessRunner(passthrough_env=app.env_passthrough)


def build_tools() -> list[Tool]:
    from treadle.adapters.tools import file_tools

    return core_tools() + file_tools()


def build_terminal(mode: str, resume_hint: str) -> Any:
    if mode == "json":
        return JsonLinesTerminal(resume_hint=resume_hint)
    return PlainTerminal(resume_hint=resume_hint)


def build_settings(app: AppConfig, session_dir: str, interactive: bool) -> TurnSettings:
    approval = app.approval or ("ask" if interactive else "auto")
    if approval not in POLICIES:
        raise ValueError(f"approval must be one of {', '.join(POLICIES)}, not {approval!r}")
    return TurnSettings(
        workspace=os.path.realpath(app.workspace),
        session_dir=session_dir,
        budget=TokenBudget(app.max_tokens, app.token_growth, app.max_tokens_cap, app.continuations),
        approval=approval,
        allowed_prefixes=app.allowed_prefixes,
        limits=ToolLimits(
            default_timeout=app.tool_timeout,
            max_timeout=app.tool_timeout_max,
            output_limit=app.output_limit,
            passthrough_env=app.env_passthrough,
        ),
        subagents=SubAgentClocks(app.subagent_check_interval, app.subagent_deadline),
    )


class Container(containers.DeclarativeContainer):
    """Production defaults; every provider can be overridden."""

    app = providers.Object(AppConfig())
    mode = providers.Object("plain")
    interactive = providers.Object(False)
    session_dir = providers.Object("")
    resume_hint = providers.Object("")

    clock = providers.Singleton(SystemClock)
    model = providers.Singleton(build_model, app, clock)
    runner = providers.Singleton(build_runner, app)
    terminal = providers.Singleton(build_terminal, mode, resume_hint)
    transcript = providers.Singleton(
        lambda session_dir: (
            JsonlTranscript(os.path.join(session_dir, "transcript.jsonl")) if session_dir else None
        ),
        session_dir,
    )
    tools = providers.Singleton(build_tools)
    settings = providers.Singleton(build_settings, app, session_dir, interactive)
    ports = providers.Singleton(
        TurnPorts,
        model=model,
        clock=clock,
        runner=runner,
        terminal=terminal,
        transcript=transcript,
    )
    agent = providers.Singleton(Agent, ports=ports, settings=settings, tools=tools)
