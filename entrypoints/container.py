"""The composition root: one container wiring adapters to ports.

Tests and library users override a provider to swap an adapter::

    container = Container()
    container.model.override(providers.Object(ScriptedModel([...])))
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dependency_injector import containers, providers

from treadle.adapters.jsonl_transcript import JsonlTranscript
from treadle.adapters.plain_terminal import JsonLinesTerminal, PlainTerminal
from treadle.adapters.redact import RedactingTerminal, Redactor
from treadle.adapters.sessions import META, TRANSCRIPT, SessionLog, SessionStore
from treadle.adapters.system_clock import SystemClock
from treadle.domain.loop.settings import SubAgentClocks, TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.rules.approval import POLICIES
from treadle.domain.rules.truncation import TokenBudget
from treadle.domain.values.tools import ToolLimits
from treadle.entrypoints.config import RECORDED_SETTINGS, AppConfig
from treadle.ports.clock import Clock
from treadle.ports.model import Model
from treadle.ports.process import ProcessRunner
from treadle.ports.tools import Tool


class ModelNotConfigured(Exception):
    """No model, or one treadle does not know: the turn is blocked before it starts."""


def build_model(app: AppConfig, clock: Clock) -> Model:
    """The model adapter ``app.model`` names: ``demo``, ``script:PATH``, ``openai:NAME``…

    A bare name picks its provider: ``claude-…`` is Anthropic, anything else is
    OpenAI-compatible (``--model qwen2.5-coder --base-url …`` for a local server).
    """
    if not app.model:
        raise ModelNotConfigured(
            "no model configured: pass --model (openai:NAME, anthropic:NAME or demo)"
        )
    provider, _, name = app.model.partition(":")
    if provider == "demo" and not name:
        from treadle.adapters.demo import demo_model

        return demo_model(clock)
    if provider == "script" and name:
        return _scripted_model(name, clock)
    if provider in ("openai", "anthropic") and name:
        return _http_model(provider, name, app)
    if not name and provider not in ("openai", "anthropic", "script"):
        inferred = "anthropic" if provider.startswith("claude") else "openai"
        return _http_model(inferred, provider, app)
    raise ModelNotConfigured(
        f"unknown model {app.model!r}: use openai:NAME, anthropic:NAME, demo or script:PATH"
    )


def _scripted_model(path: str, clock: Clock) -> Model:
    from treadle.adapters.fakes.model import ScriptedModel

    try:
        return ScriptedModel.from_json(path, clock)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ModelNotConfigured(f"cannot load the script {path}: {error}") from None


def _http_model(provider: str, name: str, app: AppConfig) -> Model:
    from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel

    adapter = OpenAIChatModel if provider == "openai" else AnthropicModel
    key_env = app.key_env or adapter.KEY_ENV
    return adapter(
        model=name,
        base_url=app.base_url or None,
        api_key=os.environ.get(key_env) or None,
        key_env=key_env,
    )


def build_runner(app: AppConfig, redactor: Redactor) -> ProcessRunner:
    from treadle.adapters.process import SubprocessRunner

    return SubprocessRunner(passthrough_env=app.env_passthrough, redactor=redactor)


def build_tools() -> list[Tool]:
    from treadle.adapters.tools import file_tools

    return core_tools() + file_tools()


def build_terminal(mode: str, resume_hint: str) -> Any:
    if mode == "json":
        return JsonLinesTerminal(resume_hint=resume_hint)
    if mode == "tty":
        from treadle.adapters.blessed_terminal import BlessedTerminal

        return BlessedTerminal(resume_hint=resume_hint, hard_exit=exit_at_once)
    return PlainTerminal(resume_hint=resume_hint)


def exit_at_once(code: int = 130) -> None:
    """The second Ctrl-C: kill every running command, then leave without cleanup."""
    from treadle.adapters.process import kill_every_command_now

    kill_every_command_now()
    os._exit(code)


def build_redactor(app: AppConfig) -> Redactor:
    """Secrets out of transcripts and the screen: secret-looking variables and the key."""
    key_envs = [app.key_env] if app.key_env else []
    return Redactor.from_environ(os.environ, also=key_envs)


def build_session_log(app: AppConfig, session_dir: str, redactor: Redactor) -> SessionLog | None:
    """The session's transcript and record, in ``session_dir`` (created when new)."""
    if not session_dir:
        return None
    folder = Path(session_dir)
    if not (folder / META).is_file():
        SessionStore(folder.parent, redactor.redact).create(
            folder.name,
            workspace=os.path.realpath(app.workspace),
            model=app.model,
            base_url=app.base_url,
            settings={key: getattr(app, key) for key in RECORDED_SETTINGS},
        )
    transcript = JsonlTranscript(folder / TRANSCRIPT, redact=redactor)
    return SessionLog(folder, transcript, redactor.redact)


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
    terminal = providers.Singleton(build_terminal, mode, resume_hint)
    redactor = providers.Singleton(build_redactor, app)
    runner = providers.Singleton(build_runner, app, redactor)
    screen = providers.Singleton(RedactingTerminal, terminal, redactor)
    transcript = providers.Singleton(build_session_log, app, session_dir, redactor)
    # A session folder that already has a transcript is continued (--resume).
    history = providers.Singleton(
        lambda log: log.conversation_so_far() if log is not None else None, transcript
    )
    tools = providers.Singleton(build_tools)
    settings = providers.Singleton(build_settings, app, session_dir, interactive)
    ports = providers.Singleton(
        TurnPorts,
        model=model,
        clock=clock,
        runner=runner,
        terminal=screen,
        transcript=transcript,
    )
    agent = providers.Singleton(Agent, ports=ports, settings=settings, tools=tools, history=history)
