"""A session's skills, slash commands and named sub-agents (issue 23), as the container
builds them: read from the project and the user's folders, with what the folder's
trust allows; the skills offered in the settings, the ``skill`` tool among the tools.
"""

from __future__ import annotations

import os
from dataclasses import replace

from treadle.domain.loop.settings import TurnSettings
from treadle.domain.rules.workflows import apply_trust
from treadle.domain.values.events import Notice
from treadle.domain.values.workflows import Workflows
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.paths import config_dir
from treadle.entrypoints.trust import read_project_content, trust_state
from treadle.ports.tools import Tool

PROBLEMS_NAMED = 3


def read_workflows(app: AppConfig) -> Workflows:
    """What the session finds, the project's ``model`` fields kept only in a trusted folder."""
    from treadle.adapters.workflows.scan import scan_workflows

    found = scan_workflows(
        app.workspace,
        config_folder=str(config_dir(os.environ)),
        home=os.path.expanduser("~") if "HOME" in os.environ else None,
    )
    state = trust_state(app.workspace, read_project_content(app.workspace), os.environ)
    return apply_trust(found, state == "trusted")


def offer_skills(settings: TurnSettings, found: Workflows) -> TurnSettings:
    """The settings with the skills found offered in every request."""
    return replace(settings, skills=found.skills) if found.skills else settings


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
    from treadle.domain.rules.skills import ALLOWED_TOOLS_MEANING, ASSUMED_WINDOW
    from treadle.domain.rules.skills import offer_skills as offer

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
