"""Skills (issue 23): which are offered to the model, in what words, and what a
SKILL.md's front matter must hold.

The list (each skill's name and description) goes with every request after the
project's instructions, marked as the repository's. It is capped at about 2 % of the
context window (:data:`SHARE`; 128,000 tokens assumed while the window is unknown):
the skills that do not fit are left out, last first, and the list says so, as does the
notice that says what was offered.

>>> entry = Skill("pdf", "Fill PDF forms.", "/r/.claude/skills/pdf/SKILL.md", 90, "project")
>>> offered = offer_skills((entry,), window=100_000)
>>> offered.listed, offered.left_out
(('pdf',), ())
>>> check_skill({"name": "pdf", "description": "Fill PDF forms."}, "pdf")
SkillFields(name='pdf', description='Fill PDF forms.', allowed_tools=())
>>> check_skill({"name": "PDF tool"}, "pdf")
'name must be lowercase letters, digits and hyphens (at most 64), not \\'PDF tool\\''
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from treadle.domain.rules.tokens import BYTES_PER_TOKEN
from treadle.domain.values.workflows import Skill

SHARE = 0.02
"""The part of the context window the list of skills may take."""
ASSUMED_WINDOW = 128_000
"""The window the cap is a share of until the model's is known."""
NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*\Z")
NAME_MOST = 64
DESCRIPTION_MOST = 1024
"""The Agent Skills standard's limits for a skill's name and description."""
LISTED_DESCRIPTION_MOST = 250
"""A description longer than this is cut in the list (the skill tool has it whole)."""

HEADING = """\
# Skills from the repository and the user

These skills were written by the repository's authors or the user, not by the person \
typing: they are offered, not commanded. When a task matches a skill's description, \
call the `skill` tool with its name to read its instructions before you start."""


@dataclass(frozen=True, slots=True)
class SkillFields:
    """What a valid SKILL.md front matter says."""

    name: str
    description: str
    allowed_tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SkillOffer:
    """The list sent (``text``, "" when there are no skills), the names in it, those the
    cap left out, and the cap in bytes."""

    text: str
    listed: tuple[str, ...]
    left_out: tuple[str, ...]
    cap: int

    def line(self) -> str:
        """What the person is told of the offer, in one line."""
        if not self.listed and not self.left_out:
            return ""
        names = ", ".join(self.listed) or "none"
        said = f"skills offered to the model: {names}"
        if self.left_out:
            said += (
                f"; {len(self.left_out)} left out by the cap of {self.cap:,} bytes "
                f"(2% of the window): {', '.join(self.left_out)}"
            )
        return said


def cap_bytes(window: int | None) -> int:
    """The bytes the list may take: 2 % of the window's tokens, as bytes."""
    return int((window or ASSUMED_WINDOW) * SHARE * BYTES_PER_TOKEN)


def offer_skills(skills: Sequence[Skill], window: int | None) -> SkillOffer:
    """The list of ``skills`` as it fits 2 % of ``window`` (tokens; None: unknown)."""
    cap = cap_bytes(window)
    if not skills:
        return SkillOffer("", (), (), cap)
    lines: list[str] = []
    used = len(HEADING) + 200  # the heading, and room for the line that says the cap bit
    listed: list[str] = []
    for index, skill in enumerate(skills):
        line = _entry(skill)
        if used + len(line.encode()) + 1 > cap:
            left_out = tuple(s.name for s in skills[index:])
            lines.append(
                f"[... {len(left_out)} more skill{'s' if len(left_out) > 1 else ''} left out: "
                f"the list is capped at 2% of the context window ({cap:,} bytes); the "
                "skill tool still loads any skill by name ...]"
            )
            return SkillOffer("\n".join([HEADING, "", *lines]), tuple(listed), left_out, cap)
        used += len(line.encode()) + 1
        lines.append(line)
        listed.append(skill.name)
    return SkillOffer("\n".join([HEADING, "", *lines]), tuple(listed), (), cap)


def _entry(skill: Skill) -> str:
    about = " ".join(skill.description.split())
    if len(about) > LISTED_DESCRIPTION_MOST:
        about = about[: LISTED_DESCRIPTION_MOST - 1] + "…"
    mark = " (the user's)" if skill.origin == "user" else ""
    return f"- {skill.name}{mark}: {about}"


def check_skill(front: Mapping[str, object], folder: str) -> SkillFields | str:
    """The fields of a SKILL.md front matter, or why it is not a skill.

    A missing ``name`` is the folder's; ``description`` is required (without it the
    model could never know when to load it); ``allowed-tools`` is a list or a string
    of names separated by commas or spaces.
    """
    name = front.get("name", folder)
    if not isinstance(name, str) or not NAME.match(name) or len(name) > NAME_MOST:
        return (
            f"name must be lowercase letters, digits and hyphens (at most {NAME_MOST}), "
            f"not {name!r}"
        )
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        return "description is missing: the model could not know when to use it"
    if len(description) > DESCRIPTION_MOST:
        return f"description is {len(description):,} characters (at most {DESCRIPTION_MOST:,})"
    tools = tool_names(front.get("allowed-tools"))
    if tools is None:
        return "allowed-tools must be a list of tool names or a string of them"
    return SkillFields(name, description.strip(), tools)


def tool_names(value: object) -> tuple[str, ...] | None:
    """``allowed-tools`` / ``tools`` as names: a list, or a string split at commas and
    spaces (``Read, Grep`` or ``Read Grep``); None for anything else."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(part for part in re.split(r"[,\s]+", value) if part)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value if item.strip())
    return None


ALLOWED_TOOLS_MEANING = (
    "allowed-tools is read and shown, and changes nothing: treadle neither restricts "
    "the tools while a skill is in use (a repository's text must not quietly take tools "
    "away) nor approves them in advance (it must not quietly grant them either); the "
    "approval policy decides every call as usual."
)


def allowed_tools_note(skill: Skill) -> str:
    """What the ``skill`` tool says of a skill's ``allowed-tools`` ("" : it lists none)."""
    if not skill.allowed_tools:
        return ""
    return f"This skill lists allowed-tools: {', '.join(skill.allowed_tools)}. " + (
        ALLOWED_TOOLS_MEANING
    )


def skill_result(skill: Skill, body: str, files_most: int = 50) -> str:
    """What the ``skill`` tool returns: where it lives, its body, its other files."""
    parts = [f"# Skill {skill.name} ({skill.path})", "", body.strip("\n")]
    if skill.files:
        shown = skill.files[:files_most]
        parts += [
            "",
            f"Files beside it, in {skill.folder} (read one with the skill tool's file "
            "argument, or with read_file inside the workspace):",
        ]
        parts += [f"- {name}" for name in shown]
        if len(skill.files) > files_most:
            parts.append(f"- … {len(skill.files) - files_most} more")
    note = allowed_tools_note(skill)
    return "\n".join([*parts, "", note] if note else parts)
