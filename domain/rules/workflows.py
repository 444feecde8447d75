"""Slash commands and named sub-agents from files (issue 23): what their front matter
must hold, how a command's arguments fill its prompt, what trust leaves out, and how
``/help`` lists them.

>>> expand("Review $1 for $ARGUMENTS", 'src/app.py "thread safety"')
'Review src/app.py for src/app.py "thread safety"'
>>> expand("Fix the bug", "in parser")
'Fix the bug\\n\\nARGUMENTS: in parser'
>>> agent_tools(("Read", "Grep", "bash"), {"read_file", "search", "bash", "agent"})
(('read_file', 'search', 'bash'), ())
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from treadle.domain.rules.skills import tool_names
from treadle.domain.rules.slash_commands import SlashCommand
from treadle.domain.values.workflows import AgentDefinition, PromptCommand, Workflows

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}\Z")
"""A command's or agent's name: what may follow ``/`` on the prompt line."""
PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9][0-9]?)")
INHERIT = frozenset({"", "inherit"})
"""A ``model`` that means the caller's."""

CLAUDE_TOOL_NAMES: Mapping[str, str] = {
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "NotebookEdit": "edit_file",
    "Grep": "search",
    "Glob": "find_files",
    "LS": "find_files",
    "Bash": "bash",
    "Task": "agent",
    "Agent": "agent",
    "TodoWrite": "update_plan",
    "AskUserQuestion": "ask",
    "Skill": "skill",
}
"""Claude Code's tool names as treadle's, so that a repository's agents written for it
get the same tools here."""


@dataclass(frozen=True, slots=True)
class CommandFields:
    description: str
    argument_hint: str
    model: str


@dataclass(frozen=True, slots=True)
class AgentFields:
    name: str
    description: str
    tools: tuple[str, ...] | None
    model: str


def check_command(front: Mapping[str, object], name: str) -> CommandFields | str:
    """A command file's fields (all optional), or why it is not one."""
    if not NAME.match(name):
        return f"{name!r} cannot be a command's name (letters, digits, - _ . :)"
    values = {key: front.get(key, "") for key in ("description", "argument-hint", "model")}
    wrong = [key for key, value in values.items() if not isinstance(value, str | int | float)]
    if wrong:
        return f"{', '.join(wrong)} must be text"
    description, hint, model = (str(values[key]).strip() for key in values)
    return CommandFields(description, hint, "" if model in INHERIT else model)


def check_agent(front: Mapping[str, object], stem: str, body: str) -> AgentFields | str:
    """An agent file's fields, or why it is not one: it needs a description (the model
    chooses by it) and a body (its system prompt)."""
    name = front.get("name", stem)
    if not isinstance(name, str) or not NAME.match(name):
        return f"{name!r} cannot be an agent's name (letters, digits, - _ . :)"
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        return "description is missing: the model could not know when to use it"
    if not body.strip():
        return "its body, the agent's system prompt, is empty"
    tools = tool_names(front.get("tools")) if "tools" in front else None
    if "tools" in front and tools is None:
        return "tools must be a list of tool names or a string of them"
    model = front.get("model", "")
    if not isinstance(model, str):
        return "model must be text"
    return AgentFields(
        name, " ".join(description.split()), tools, "" if model in INHERIT else model
    )


def split_arguments(arguments: str) -> list[str]:
    """The words of ``arguments`` as a shell reads them (quotes group); plain words
    when its quotes do not pair."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def expand(body: str, arguments: str) -> str:
    """The prompt a command sends: ``$ARGUMENTS`` is everything after its name, ``$1``…
    each word (a missing one is empty). A prompt with no placeholder gets the arguments
    after it, as ``ARGUMENTS: …``, so that none is lost."""
    arguments = arguments.strip()
    words = split_arguments(arguments)

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return arguments
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    text, count = PLACEHOLDER.subn(fill, body.strip())
    if arguments and not count:
        text += f"\n\nARGUMENTS: {arguments}"
    return text


def agent_tools(
    wanted: Sequence[str] | None, available: Collection[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The tools a named sub-agent gets from ``available`` (its caller's), and the names
    of ``wanted`` that are none of them. None wanted: all of them. Claude Code's names
    are read as treadle's (``Read`` is ``read_file``)."""
    if wanted is None:
        return tuple(available), ()
    kept: list[str] = []
    unknown: list[str] = []
    for name in wanted:
        base = name.split("(", 1)[0].strip()  # Claude Code's ``Bash(git:*)`` scopes a tool
        ours = CLAUDE_TOOL_NAMES.get(base, base)
        if ours in available:
            if ours not in kept:
                kept.append(ours)
        elif name not in unknown:
            unknown.append(name)
    return tuple(kept), tuple(unknown)


def apply_trust(found: Workflows, trusted: bool) -> Workflows:
    """What counts of a project's commands and agents in a folder trusted or not.

    A ``model`` (which may send the conversation to another provider, at another price)
    counts only in a trusted folder; elsewhere it is dropped, the command or agent kept,
    and :attr:`Workflows.ignored` says which. A ``tools`` list only narrows its caller's
    tools (it can grant none), so it counts everywhere; skills are text and count
    everywhere too. The user's own files are always trusted.
    """
    if trusted:
        return found
    commands = [c.name for c in found.commands if c.origin == "project" and c.model]
    agents = [a.name for a in found.agents if a.origin == "project" and a.model]
    if not commands and not agents:
        return found
    named = [f"command /{name}" for name in commands] + [f"agent {name}" for name in agents]
    return replace(
        found,
        commands=tuple(
            replace(c, model="") if c.origin == "project" else c for c in found.commands
        ),
        agents=tuple(replace(a, model="") if a.origin == "project" else a for a in found.agents),
        ignored=f"model of {', '.join(named)}",
    )


def command_entries(found: Workflows, taken: Collection[str] = ()) -> list[SlashCommand]:
    """``/help``'s rows for the commands and skills found, each with where it came
    from; a name already ``taken`` (a built-in command's) is left out."""
    rows: list[SlashCommand] = []
    for command in found.commands:
        name = f"/{command.name}"
        if name in taken:
            continue
        hint = f" {command.argument_hint}" if command.argument_hint else ""
        about = command.description or "(no description)"
        rows.append(SlashCommand(name + hint, f"{about}  [{command.origin}: {command.path}]"))
    names = {c.name for c in found.commands}
    for skill in found.skills:
        if f"/{skill.name}" in taken or skill.name in names:
            continue
        about = skill.description.splitlines()[0]
        rows.append(
            SlashCommand(f"/{skill.name}", f"skill: {about}  [{skill.origin}: {skill.path}]")
        )
    return rows


def unknown_agent(name: str, agents: Sequence[AgentDefinition]) -> str:
    """The tool error for an agent name no definition has."""
    known = ", ".join(a.name for a in agents) or "none are defined"
    return (
        f"unknown agent {name!r}; the named agents are: {known} (leave agent out for a general one)"
    )


def prompt_command(found: Workflows, name: str) -> PromptCommand | None:
    """The command ``/name`` runs, a skill's standing in for one when no command has
    the name (its prompt: use the skill, with the arguments)."""
    command = found.command(name)
    if command is not None:
        return command
    skill = found.skill(name)
    if skill is None:
        return None
    body = (
        f"Use the skill {skill.name}: call the skill tool with name {skill.name!r} to read "
        "its instructions, then follow them."
    )
    return PromptCommand(skill.name, skill.description, skill.path, skill.origin, body)
