"""A team's workflow, as it keeps it in files (issue 23): skills, slash commands and
named sub-agents, each read from the project or from the user's folders.

These are the nouns; :mod:`treadle.domain.rules.skills` and
:mod:`treadle.domain.rules.workflows` decide over them, and
:mod:`treadle.adapters.workflows` reads them from disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Origin = Literal["project", "user"]
"""Who wrote it: the repository (read everywhere, trusted for nothing risky unless its
folder is) or the user."""


@dataclass(frozen=True, slots=True)
class Skill:
    """A folder holding ``SKILL.md``: its name and description are offered to the model
    in every request; its body is what the ``skill`` tool returns.

    ``path`` is the SKILL.md file; ``size`` its bytes; ``files`` the other files of its
    folder, relative to it; ``allowed_tools`` what its front matter lists (advisory:
    see :func:`treadle.domain.rules.skills.allowed_tools_note`).
    """

    name: str
    description: str
    path: str
    size: int
    origin: Origin
    files: tuple[str, ...] = ()
    allowed_tools: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        return self.path.rsplit("/", 1)[0]


@dataclass(frozen=True, slots=True)
class PromptCommand:
    """A markdown prompt file, invoked as ``/name args``; ``body`` is the prompt with
    ``$ARGUMENTS`` and ``$1``… still in it. ``model`` is the model it asks for (only
    in a trusted folder, for a project's)."""

    name: str
    description: str
    path: str
    origin: Origin
    body: str
    argument_hint: str = ""
    model: str = ""


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """A named sub-agent: its body is its system prompt; ``tools`` the names it may
    call (None: all of its caller's); ``model`` the model it runs on ("" : its
    caller's)."""

    name: str
    description: str
    path: str
    origin: Origin
    prompt: str
    tools: tuple[str, ...] | None = None
    model: str = ""


@dataclass(frozen=True, slots=True)
class Problem:
    """A file that was found and not taken, and why (in one line)."""

    path: str
    why: str


@dataclass(frozen=True, slots=True)
class Workflows:
    """Everything a session found: the skills, commands and agents that count (the
    first of each name, nearest the workspace first), those shadowed by an earlier one
    of the same name, the files not taken, and the line saying what trust left out."""

    skills: tuple[Skill, ...] = ()
    commands: tuple[PromptCommand, ...] = ()
    agents: tuple[AgentDefinition, ...] = ()
    shadowed: tuple[str, ...] = ()
    """Paths of definitions another one of the same name hides."""
    problems: tuple[Problem, ...] = ()
    ignored: str = ""
    """What an untrusted folder's definitions asked for and did not get ("" : nothing)."""
    scanned: tuple[str, ...] = field(default=())
    """The folders looked in, in order."""

    def skill(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def command(self, name: str) -> PromptCommand | None:
        return next((c for c in self.commands if c.name == name), None)

    def agent(self, name: str) -> AgentDefinition | None:
        return next((a for a in self.agents if a.name == name), None)
