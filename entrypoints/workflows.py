"""A session's skills, slash commands and named sub-agents (issue 23), as the container
builds them: read from the project and the user's folders, with what the folder's
trust allows; the skills offered in the settings, the ``skill`` tool among the tools.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from returns.result import Failure, Result, Success

from treadle.adapters.workflows.scan import scan_workflows
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.stop import StopSignal
from treadle.domain.loop.turn import Agent
from treadle.domain.rules.skills import ALLOWED_TOOLS_MEANING, ASSUMED_WINDOW
from treadle.domain.rules.skills import offer_skills as offer
from treadle.domain.rules.workflows import apply_trust, expand, prompt_command
from treadle.domain.values.events import Notice
from treadle.domain.values.outcome import TurnOutcome
from treadle.domain.values.workflows import Workflows
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.paths import config_dir
from treadle.entrypoints.providers import ModelNotConfigured, resolve
from treadle.entrypoints.trust import read_project_content, trust_state
from treadle.entrypoints.wiring import build_model
from treadle.ports.clock import Clock
from treadle.ports.model import Model
from treadle.ports.tools import Tool

PROBLEMS_NAMED = 3


def read_workflows(app: AppConfig) -> Workflows:
    """What the session finds, the project's ``model`` fields kept only in a trusted folder."""
    found = scan_workflows(
        app.workspace,
        config_folder=str(config_dir(os.environ)),
        home=os.path.expanduser("~") if "HOME" in os.environ else None,
    )
    state = trust_state(app.workspace, read_project_content(app.workspace), os.environ)
    return apply_trust(found, state == "trusted")


def offer_skills(settings: TurnSettings, found: Workflows) -> TurnSettings:
    """The settings with the skills found offered in every request, and the named
    sub-agents in the ``agent`` tool."""
    if not found.skills and not found.agents:
        return settings
    return replace(settings, skills=found.skills, agents=found.agents)


def with_skill_tool(tools: list[Tool], found: Workflows) -> list[Tool]:
    """The tools, with ``skill`` when there is a skill to load."""
    if not found.skills or any(tool.spec.name == "skill" for tool in tools):
        return tools
    from treadle.adapters.tools.skill import SkillTool

    return [*tools, SkillTool(found.skills)]


def workflow_notices(found: Workflows, workspace: str) -> list[Notice]:
    """What the person hears at the start: files not taken, what trust left out."""
    notices = []
    if found.problems:
        named = "; ".join(f"{p.path}: {p.why}" for p in found.problems[:PROBLEMS_NAMED])
        more = len(found.problems) - PROBLEMS_NAMED
        notices.append(
            Notice("workflows_unreadable", named + (f"; and {more} more" if more > 0 else ""))
        )
    if found.ignored:
        folder = os.path.realpath(workspace)
        notices.append(
            Notice(
                "workflows_untrusted",
                f"{found.ignored}: ignored, as this folder is not trusted; if it is "
                f"yours: treadle trust {folder}",
            )
        )
    return notices


def skill_lines(found: Workflows, window: int | None = None) -> list[str]:
    """``treadle context``'s and ``/skills``' list: each skill with whose it is, its
    size and path, whether the cap leaves it out, and the files not taken."""
    if not found.skills:
        lines = [
            "No skills (SKILL.md in .agents/skills, .claude/skills, .treadle/skills, "
            "or the user's skills folders)."
        ]
    else:
        offered = offer(found.skills, window)
        size = len(offered.text.encode())
        of = (
            "the window"
            if window
            else f"a {ASSUMED_WINDOW:,}-token window, until the model's is known"
        )
        lines = [
            f"skills: {len(found.skills)}, offered in {size:,} bytes of at most "
            f"{offered.cap:,} (2% of {of})"
        ]
        width = max(len(s.name) for s in found.skills)
        digits = max(len(f"{s.size:,}") for s in found.skills)
        for skill in found.skills:
            notes: list[str] = [skill.origin]
            if skill.name in offered.left_out:
                notes.append("left out by the cap")
            if skill.allowed_tools:
                notes.append(f"allowed-tools: {', '.join(skill.allowed_tools)}")
            lines.append(
                f"  {skill.name:<{width}}  {skill.size:>{digits},} bytes  {skill.path}  "
                f"({'; '.join(notes)})"
            )
        if any(s.allowed_tools for s in found.skills):
            lines.append(f"  {ALLOWED_TOOLS_MEANING}")
    lines += [
        f"  shadowed by one of the same name: {path}"
        for path in found.shadowed
        if path.endswith("SKILL.md")
    ]
    lines += [
        f"  not read: {p.path}: {p.why}" for p in found.problems if p.path.endswith("SKILL.md")
    ]
    return lines


@dataclass(frozen=True, slots=True)
class CommandTurn:
    """A turn a slash command asks for: its prompt, the model it runs on ("" : the
    session's), and the notice that says which command it was."""

    task: str
    model: str
    notice: Notice | None


def command_turn(found: Workflows, name: str, arguments: str) -> CommandTurn | None:
    """The turn ``/name arguments`` runs; None when no command or skill has the name."""
    command = prompt_command(found, name.removeprefix("/"))
    if command is None:
        return None
    on = f" on {command.model}" if command.model else ""
    said = f"/{command.name} from {command.path}{on}"
    return CommandTurn(expand(command.body, arguments), command.model, Notice("command_run", said))


def unknown_command(found: Workflows, name: str) -> str:
    """The line for ``--command`` naming nothing."""
    names = [f"/{c.name}" for c in found.commands] + [f"/{s.name}" for s in found.skills]
    known = ", ".join(names) if names else "none (.claude/commands, .treadle/commands, skills)"
    return f"unknown command /{name.removeprefix('/')}; the commands are: {known}"


ModelMaker = Callable[[str], Model]
"""Builds the model a command or a named sub-agent asks for, by its name."""


def model_maker(app: AppConfig, clock: Clock, session_id: str) -> ModelMaker:
    """Another model of the session's configuration: the same server only for a model
    of the same provider (another provider's has its own URL and key)."""

    def make(name: str) -> Model:
        same = resolve(name)[0] is resolve(app.model)[0] if app.model else False
        chosen = (
            replace(app, model=name) if same else replace(app, model=name, base_url="", key_env="")
        )
        return build_model(chosen, clock, session_id)

    return make


async def run_command_turn(
    agent: Agent, turn: CommandTurn, models: ModelMaker, stop: StopSignal | None = None
) -> TurnOutcome:
    """Run a command's turn, on its model when it names one (the session's after)."""
    if turn.notice is not None:
        agent.emit(turn.notice)
    if not turn.model:
        return await agent.run_turn(turn.task, stop)
    try:
        model = models(turn.model)
    except ModelNotConfigured as error:
        agent.emit(Notice("command_model", f"{error}; the session's model answers instead"))
        return await agent.run_turn(turn.task, stop)
    kept = agent.responder.model
    agent.responder.model = model
    try:
        return await agent.run_turn(turn.task, stop)
    finally:
        agent.responder.model = kept


def models_by_name(make: ModelMaker) -> Callable[[str], Result[Model, str]]:
    """:func:`model_maker` for the loop: a model, or the line saying why there is none."""

    def build(name: str) -> Result[Model, str]:
        try:
            return Success(make(name))
        except ModelNotConfigured as error:
            return Failure(str(error))

    return build


def command_and_agent_lines(found: Workflows) -> list[str]:
    """``treadle context``'s list of the slash commands and named sub-agents found."""
    lines = [f"commands: {len(found.commands)}"]
    for command in found.commands:
        model = f"; model: {command.model}" if command.model else ""
        lines.append(f"  /{command.name}  {command.path}  ({command.origin}{model})")
    lines.append(f"agents: {len(found.agents)}")
    for agent in found.agents:
        tools = "all" if agent.tools is None else ", ".join(agent.tools) or "none"
        model = f"; model: {agent.model}" if agent.model else ""
        lines.append(f"  {agent.name}  {agent.path}  ({agent.origin}; tools: {tools}{model})")
    if found.ignored:
        lines.append(f"  ignored, as this folder is not trusted: {found.ignored}")
    lines += [
        f"  not read: {p.path}: {p.why}" for p in found.problems if not p.path.endswith("SKILL.md")
    ]
    return lines
