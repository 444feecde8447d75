"""The pure rules of slash commands and named sub-agents (issue 23)."""

from __future__ import annotations

from treadle.domain.rules.workflows import (
    AgentFields,
    CommandFields,
    agent_tools,
    apply_trust,
    check_agent,
    check_command,
    command_entries,
    expand,
    prompt_command,
    unknown_agent,
)
from treadle.domain.values.workflows import AgentDefinition, PromptCommand, Skill, Workflows


def test_arguments_fill_the_placeholders() -> None:
    assert expand("Fix issue $1 in $2.", "42 parser") == "Fix issue 42 in parser."
    assert expand("Do: $ARGUMENTS", "  a b  ") == "Do: a b"
    assert expand("$1|$2|$3", '"two words" x') == "two words|x|"
    assert expand("$1 then $ARGUMENTS", "it's") == "it's then it's"  # an unpaired quote
    assert expand("Cost $5 and $10", "a b c d e f g h i j") == "Cost e and j"


def test_arguments_with_no_placeholder_go_after_the_prompt() -> None:
    assert expand("Tidy up.", "src/") == "Tidy up.\n\nARGUMENTS: src/"
    assert expand("Tidy up.\n", "") == "Tidy up."


def test_a_command_s_fields_are_all_optional() -> None:
    assert check_command({}, "review") == CommandFields("", "", "")
    assert check_command(
        {"description": "d", "argument-hint": "[file]", "model": "inherit"}, "r"
    ) == (CommandFields("d", "[file]", ""))
    assert check_command({"model": "openai:gpt-4.1"}, "r").model == "openai:gpt-4.1"  # type: ignore[union-attr]
    assert "must be text" in str(check_command({"description": ["x"]}, "r"))
    assert "cannot be a command's name" in str(check_command({}, "has space"))


def test_an_agent_needs_a_description_and_a_prompt() -> None:
    assert check_agent({"description": "Reviews."}, "reviewer", "Be careful.") == AgentFields(
        "reviewer", "Reviews.", None, ""
    )
    fields = check_agent({"name": "r", "description": "d", "tools": "Read, Grep"}, "x", "p")
    assert fields == AgentFields("r", "d", ("Read", "Grep"), "")
    assert check_agent({"description": "d", "tools": []}, "x", "p") == AgentFields("x", "d", (), "")
    assert "description is missing" in str(check_agent({}, "x", "p"))
    assert "system prompt, is empty" in str(check_agent({"description": "d"}, "x", " \n"))
    assert "tools must be" in str(check_agent({"description": "d", "tools": 5}, "x", "p"))


def test_an_agent_s_tools_are_its_caller_s_that_it_names() -> None:
    available = ["bash", "read_file", "search", "find_files", "agent"]
    assert agent_tools(None, available) == (tuple(available), ())
    assert agent_tools(["Read", "Grep", "Glob"], available) == (
        ("read_file", "search", "find_files"),
        (),
    )
    assert agent_tools(["Bash(git:*)", "bash", "WebFetch"], available) == (("bash",), ("WebFetch",))
    assert agent_tools([], available) == ((), ())


def project_command(name: str, model: str = "") -> PromptCommand:
    return PromptCommand(name, "d", f"/r/.claude/commands/{name}.md", "project", "b", model=model)


def test_trust_keeps_a_repository_s_models_only_in_a_trusted_folder() -> None:
    mine = PromptCommand("mine", "d", "/home/me/commands/mine.md", "user", "b", model="openai:o3")
    agent = AgentDefinition("a", "d", "/r/.claude/agents/a.md", "project", "p", ("Read",), "x:y")
    found = Workflows(
        commands=(project_command("fast", "openai:gpt-4.1"), project_command("plain"), mine),
        agents=(agent,),
    )
    assert apply_trust(found, trusted=True) == found
    held = apply_trust(found, trusted=False)
    assert [c.model for c in held.commands] == ["", "", "openai:o3"]
    assert held.agents[0].model == "" and held.agents[0].tools == ("Read",)
    assert held.ignored == "model of command /fast, agent a"
    assert apply_trust(Workflows(commands=(project_command("plain"),)), trusted=False).ignored == ""


def test_help_rows_say_where_each_command_came_from_and_leave_built_ins_alone() -> None:
    skill = Skill("pdf", "Fills forms.\nMore.", "/r/.claude/skills/pdf/SKILL.md", 10, "project")
    found = Workflows(
        skills=(skill,), commands=(project_command("review"), project_command("diff"))
    )
    rows = command_entries(found, taken={"/diff"})
    assert [(r.name, r.summary) for r in rows] == [
        ("/review", "d  [project: /r/.claude/commands/review.md]"),
        ("/pdf", "skill: Fills forms.  [project: /r/.claude/skills/pdf/SKILL.md]"),
    ]


def test_a_skill_stands_in_for_a_command_of_its_name() -> None:
    skill = Skill("pdf", "Fills forms.", "/r/.claude/skills/pdf/SKILL.md", 10, "project")
    command = prompt_command(Workflows(skills=(skill,)), "pdf")
    assert command is not None and "skill tool with name 'pdf'" in command.body
    assert prompt_command(Workflows(skills=(skill,)), "nope") is None


def test_an_unknown_agent_s_error_lists_the_known_ones() -> None:
    agent = AgentDefinition("reviewer", "d", "/r/a.md", "project", "p")
    assert "the named agents are: reviewer" in unknown_agent("x", [agent])
    assert "none are defined" in unknown_agent("x", [])
