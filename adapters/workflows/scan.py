"""Finding a team's skills, slash commands and named sub-agents on disk (issue 23).

Where each is looked for, in the order that decides which of two of the same name
counts (the first found):

- the user's folders first — ``skills/``, ``commands/`` and ``agents/`` in treadle's
  configuration folder, then ``~/.agents/skills``, ``~/.claude/skills``,
  ``~/.claude/commands``, ``~/.claude/agents`` — so that a cloned repository cannot
  take the place of a skill or command of the user's own;
- then the project's, from the workspace up to the project root (the nearer folder
  first): ``.agents/skills``, ``.claude/skills``, ``.treadle/skills``;
  ``.claude/commands``, ``.treadle/commands``; ``.claude/agents``, ``.treadle/agents``.

A project's file that is a link leading out of the project is not read (its text would
go to the model). Example::

    found = scan_workflows("/repo/pkg", config_folder="/home/me/.config/treadle", home="/home/me")
    found.skills, found.commands, found.agents, found.problems
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

from treadle.adapters.instructions import instruction_folders, project_root
from treadle.adapters.workflows.front_matter import FrontMatterError, read_front_matter
from treadle.domain.rules.skills import check_skill
from treadle.domain.rules.workflows import check_agent, check_command
from treadle.domain.values.workflows import (
    AgentDefinition,
    Origin,
    Problem,
    PromptCommand,
    Skill,
    Workflows,
)

SKILL_FILE = "SKILL.md"
PROJECT_FOLDERS = {
    "skills": (".agents/skills", ".claude/skills", ".treadle/skills"),
    "commands": (".claude/commands", ".treadle/commands"),
    "agents": (".claude/agents", ".treadle/agents"),
}
HOME_FOLDERS = {
    "skills": (".agents/skills", ".claude/skills"),
    "commands": (".claude/commands",),
    "agents": (".claude/agents",),
}
FILE_MOST = 256 * 1024
"""A definition longer than this is read no further (its body is cut there)."""
FILES_LISTED = 200
"""At most this many files of a skill's folder are listed."""


def places(
    kind: str, workspace: str, config_folder: str | None, home: str | None
) -> list[tuple[str, Origin, str]]:
    """Each folder to look in for ``kind`` (``skills``, ``commands``, ``agents``), in
    order, with whose it is and the tree its links must stay in ("" : anywhere)."""
    return _places(kind, _chain(workspace), config_folder, home)


def _chain(workspace: str) -> tuple[str, list[str]]:
    """The project root, and the folders from it down to the workspace."""
    chain = [folder for folder, mine in instruction_folders(workspace, None) if not mine]
    return project_root(workspace), chain


def _places(
    kind: str, chain: tuple[str, list[str]], config_folder: str | None, home: str | None
) -> list[tuple[str, Origin, str]]:
    found: list[tuple[str, Origin, str]] = []
    if config_folder:
        found.append((os.path.join(config_folder, kind), "user", ""))
    if home:
        found += [(os.path.join(home, sub), "user", "") for sub in HOME_FOLDERS[kind]]
    root, folders = chain
    for folder in reversed(folders):  # the workspace first: the nearer one wins
        found += [(os.path.join(folder, sub), "project", root) for sub in PROJECT_FOLDERS[kind]]
    return found


def scan_workflows(
    workspace: str, *, config_folder: str | None = None, home: str | None = None
) -> Workflows:
    """Every skill, command and agent found for a session in ``workspace``."""
    chain = _chain(workspace)
    problems: list[Problem] = []
    shadowed: list[str] = []
    scanned: list[str] = []

    def first_of_each(items: Iterator[Skill | PromptCommand | AgentDefinition]) -> list:  # type: ignore[type-arg]
        kept: dict[str, Skill | PromptCommand | AgentDefinition] = {}
        for item in items:
            if item.name in kept:
                shadowed.append(item.path)
            else:
                kept[item.name] = item
        return list(kept.values())

    def walk(kind: str) -> Iterator[tuple[str, Origin, str]]:
        for folder, origin, tree in _places(kind, chain, config_folder, home):
            if os.path.isdir(folder):
                scanned.append(folder)
                yield folder, origin, tree

    skills = first_of_each(
        skill
        for folder, origin, tree in walk("skills")
        for skill in _skills_in(folder, origin, tree, problems)
    )
    commands = first_of_each(
        command
        for folder, origin, tree in walk("commands")
        for command in _commands_in(folder, origin, tree, problems)
    )
    agents = first_of_each(
        agent
        for folder, origin, tree in walk("agents")
        for agent in _agents_in(folder, origin, tree, problems)
    )
    return Workflows(
        tuple(skills),
        tuple(commands),
        tuple(agents),
        tuple(shadowed),
        tuple(problems),
        scanned=tuple(scanned),
    )


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError:
        return []


def _skills_in(folder: str, origin: Origin, tree: str, problems: list[Problem]) -> Iterator[Skill]:
    for entry in _entries(folder):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        path = os.path.join(entry.path, SKILL_FILE)
        try:
            size, text = read_definition(path, tree)
            front, _ = read_front_matter(text)
        except FileNotFoundError:
            continue
        except (OSError, FrontMatterError) as error:
            problems.append(Problem(path, _why(error)))
            continue
        fields = check_skill(front, entry.name)
        if isinstance(fields, str):
            problems.append(Problem(path, fields))
            continue
        yield Skill(
            fields.name, fields.description, path, size, origin, allowed_tools=fields.allowed_tools
        )


def _markdown_in(
    folder: str, tree: str, problems: list[Problem]
) -> Iterator[tuple[str, str, dict[str, object], str]]:
    """Each ``*.md`` file of ``folder``: its name without ``.md``, path, front matter, body."""
    for entry in _entries(folder):
        if not entry.name.endswith(".md") or entry.name.startswith("."):
            continue
        try:
            if not entry.is_file():
                continue
            _, text = read_definition(entry.path, tree)
            front, body = read_front_matter(text)
        except (OSError, FrontMatterError) as error:
            problems.append(Problem(entry.path, _why(error)))
            continue
        yield entry.name[:-3], entry.path, front, body


def _commands_in(
    folder: str, origin: Origin, tree: str, problems: list[Problem]
) -> Iterator[PromptCommand]:
    for name, path, front, body in _markdown_in(folder, tree, problems):
        fields = check_command(front, name)
        if isinstance(fields, str):
            problems.append(Problem(path, fields))
            continue
        yield PromptCommand(
            name, fields.description, path, origin, body, fields.argument_hint, fields.model
        )


def _agents_in(
    folder: str, origin: Origin, tree: str, problems: list[Problem]
) -> Iterator[AgentDefinition]:
    for name, path, front, body in _markdown_in(folder, tree, problems):
        fields = check_agent(front, name, body)
        if isinstance(fields, str):
            problems.append(Problem(path, fields))
            continue
        yield AgentDefinition(
            fields.name, fields.description, path, origin, body.strip(), fields.tools, fields.model
        )


def read_definition(path: str, tree: str) -> tuple[int, str]:
    """The size of the file at ``path`` and its text (at most :data:`FILE_MOST` bytes).
    A link leading out of ``tree`` (the project) is not followed; "" : anywhere.

    Most files are no link: the first open refuses to follow one, and only a link
    costs the lookups that resolve it (400 files are read at every start)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags | os.O_NOFOLLOW)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        real = os.path.realpath(path)
        if tree and os.path.commonpath([real, tree]) != tree:
            raise OSError(errno.EACCES, f"it leads outside {tree} (to {real}); not read") from None
        descriptor = os.open(real, flags)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(errno.EINVAL, "not a regular file; not read")
        wanted = min(status.st_size, FILE_MOST)  # a buffer of FILE_MOST costs 10 µs a file
        data = os.read(descriptor, wanted)
        while len(data) < wanted:  # a short read
            more = os.read(descriptor, wanted - len(data))
            if not more:
                break
            data += more
    finally:
        os.close(descriptor)
    return status.st_size, data.decode("utf-8", "replace")


def skill_files(skill: Skill) -> tuple[str, ...]:
    """The files of a skill's folder besides SKILL.md, relative to it (at most
    :data:`FILES_LISTED`; hidden files and folders left out)."""
    found: list[str] = []
    for here, folders, files in os.walk(skill.folder):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            relative = os.path.relpath(os.path.join(here, name), skill.folder)
            if relative != SKILL_FILE and not name.startswith("."):
                found.append(relative)
                if len(found) >= FILES_LISTED:
                    return tuple(found)
    return tuple(found)


def _why(error: Exception) -> str:
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return str(error)
