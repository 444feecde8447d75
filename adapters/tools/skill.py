"""The ``skill`` tool (issue 23): loads one skill's instructions, or one file beside
them, by the skill's name.

The body is read from disk when it is asked for (the list in the request holds only
names and descriptions). Each load is said in a ``skill_loaded`` notice, which the
screen shows and the transcript keeps. A file of a skill in the user's folders lies
outside the workspace, where ``read_file`` cannot reach: ``file`` reads it here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from treadle.adapters.instructions import project_root
from treadle.adapters.workflows.front_matter import FrontMatterError, read_front_matter
from treadle.adapters.workflows.scan import read_definition, skill_files
from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.rules.skills import skill_result
from treadle.domain.values.events import Notice
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.domain.values.workflows import Skill
from treadle.ports.tools import ToolContext


class SkillTool:
    """Loads a skill the request offered (or any skill found, by name)."""

    access: Access = "read"

    def __init__(self, skills: tuple[Skill, ...]) -> None:
        self._skills = {skill.name: skill for skill in skills}
        self.spec = ToolSpec(
            name="skill",
            description=(
                "Load a skill: its instructions (follow them for the task at hand) and the "
                "list of files beside them. Give file to read one of those files."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name, as listed."},
                    "file": {
                        "type": "string",
                        "description": "A file of the skill's folder, relative to it.",
                    },
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        )

    def describe(self, arguments: Mapping[str, Any]) -> str:
        name = str(arguments.get("name", ""))
        file = arguments.get("file")
        return f"{name}/{file}" if file else name

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        name = str(arguments["name"])
        skill = self._skills.get(name)
        if skill is None:
            known = ", ".join(self._skills) or "none were found"
            return ToolResult(
                f"Error: unknown skill {name!r}; the skills are: {known}",
                is_error=True,
                status="unknown skill",
            )
        tree = project_root(skill.folder) if skill.origin == "project" else ""
        file = arguments.get("file")
        if file:
            return self._file(skill, str(file), tree, context)
        try:
            _, text = read_definition(skill.path, tree)
            _, body = read_front_matter(text)
        except (OSError, FrontMatterError) as error:
            why = error.strerror if isinstance(error, OSError) else str(error)
            return ToolResult(f"Error: cannot read {skill.path}: {why}", is_error=True)
        loaded = replace(skill, files=skill_files(skill))
        context.emit(
            Notice("skill_loaded", f"skill {skill.name} loaded from {skill.path}", context.agent)
        )
        text = skill_result(loaded, body)
        bound = context.limits.output_limit
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) > bound:
            text = OutputBound.of(raw, bound).text("the skill is longer than the output bound")
        return ToolResult(text, status=f"{len(body.encode()):,} bytes")

    def _file(self, skill: Skill, file: str, tree: str, context: ToolContext) -> ToolResult:
        path = os.path.realpath(os.path.join(skill.folder, file))
        folder = os.path.realpath(skill.folder)
        if os.path.commonpath([path, folder]) != folder:
            return ToolResult(
                f"Error: {file} is outside the skill's folder {skill.folder}", is_error=True
            )
        try:
            size, text = read_definition(path, tree)
        except OSError as error:
            return ToolResult(f"Error: cannot read {file}: {error.strerror}", is_error=True)
        bound = context.limits.output_limit
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) > bound:
            text = OutputBound.of(raw, bound).text(f"{file} is longer than the output bound")
        return ToolResult(text, status=f"{size:,} bytes")
