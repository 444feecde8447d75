"""Named sub-agents (issue 23): the ``agent`` tool hands a sub-task to a sub-agent
defined in ``.claude/agents``, which runs with that prompt, only its tools and its
model, on the caller's clocks; an unknown name is a tool error listing the known ones."""

from __future__ import annotations

import json
import os
from pathlib import Path

from dependency_injector import providers

from tests.entrypoints.test_workflow_skills import repository, session, user_folders
from treadle.adapters.fakes import RecordingTerminal, ScriptedModel, ScriptedResponse
from treadle.domain.values.conversation import ToolCall, Usage
from treadle.domain.values.events import Notice, SubAgentStarted
from treadle.domain.values.model import ModelRequest
from treadle.entrypoints.container import end_session, start_session
from treadle.entrypoints.trust import trust_folder
from treadle.ports.model import Model

__all__ = ["user_folders"]  # autouse: the user's folders are the test's own

REVIEWER_PROMPT = "You are a careful code reviewer."


def call_agent(task: str, **arguments: object) -> ScriptedResponse:
    call = ToolCall("", "agent", json.dumps({"task": task, **arguments}))
    return ScriptedResponse((), (call,), Usage(10, 5))


async def run(
    repo: Path, model: ScriptedModel, other: ScriptedModel | None = None
) -> tuple[RecordingTerminal, list[str]]:
    container, terminal = session(repo, model)
    asked: list[str] = []

    def models(name: str) -> Model:
        asked.append(name)
        assert other is not None
        return other

    container.models.override(providers.Object(models))
    agent = await start_session(container)
    await agent.run_turn("go")
    await end_session(container)
    return terminal, asked


def requests_for(model: ScriptedModel, task: str) -> list[ModelRequest]:
    return [r for r in model.requests if r.messages and r.messages[0].text == task]


async def test_a_named_sub_agent_gets_its_prompt_and_only_its_tools(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    model = ScriptedModel(
        {
            "*": [
                call_agent("review app.py", agent="code-reviewer"),
                ScriptedResponse.saying("Thanks."),
            ],
            "review app.py": [ScriptedResponse.saying("No bugs.")],
        }
    )
    terminal, _ = await run(repo, model)
    (first, *_) = requests_for(model, "review app.py")
    assert REVIEWER_PROMPT in first.system
    assert first.system.index("# You are the code-reviewer agent") < first.system.index(
        REVIEWER_PROMPT
    )
    assert {spec.name for spec in first.tools} == {"read_file", "search", "find_files"}
    main = model.requests[0]
    assert REVIEWER_PROMPT not in main.system
    assert {"bash", "agent", "skill"} <= {spec.name for spec in main.tools}
    spec = next(s for s in main.tools if s.name == "agent")
    about = spec.parameters["properties"]["agent"]["description"]
    assert "one of: code-reviewer, fast-helper" in about
    assert "code-reviewer: Reviews code for bugs" in spec.description
    result = next(m for m in model.requests[-1].messages if m.role == "tool")
    assert "No bugs." in result.text and not result.is_error
    named = [e.text for e in terminal.events if isinstance(e, Notice) and e.kind == "agent_named"]
    assert named == [
        f"agent-1 is the code-reviewer agent ({repo}/.claude/agents/code-reviewer.md); "
        "tools: read_file, search, find_files"
    ]
    started = [e for e in terminal.events if isinstance(e, SubAgentStarted)]
    assert [(e.name, e.deadline) for e in started] == [("agent-1", 600.0)]  # today's clocks


async def test_an_unknown_agent_is_a_tool_error_listing_the_known_ones(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    model = ScriptedModel([call_agent("x", agent="planner"), ScriptedResponse.saying("Ok.")])
    terminal, _ = await run(repo, model)
    result = next(m for m in model.requests[-1].messages if m.role == "tool")
    assert result.is_error
    assert (
        "unknown agent 'planner'; the named agents are: code-reviewer, fast-helper" in result.text
    )
    assert not [e for e in terminal.events if isinstance(e, SubAgentStarted)]


async def test_an_agent_s_model_counts_only_in_a_trusted_folder(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    script = {
        "*": [call_agent("tidy", agent="fast-helper"), ScriptedResponse.saying("Thanks.")],
        "tidy": [ScriptedResponse.saying("Tidied.")],
    }
    untrusted = ScriptedModel({k: list(v) for k, v in script.items()})
    _, asked = await run(repo, untrusted, ScriptedModel([]))
    assert asked == [] and requests_for(untrusted, "tidy")  # the session's model did it

    trust_folder(str(repo), os.environ)
    main = ScriptedModel({"*": list(script["*"])})
    other = ScriptedModel({"tidy": [ScriptedResponse.saying("Tidied.")]})
    _, asked = await run(repo, main, other)
    assert asked == ["openai:gpt-4.1-mini"]
    assert requests_for(other, "tidy") and not requests_for(main, "tidy")
    assert "You do small chores quickly." in other.requests[0].system


async def test_without_agent_files_the_agent_tool_is_as_before(tmp_path: Path) -> None:
    repo = repository(tmp_path, "codex")
    model = ScriptedModel([ScriptedResponse.saying("Done.")])
    await run(repo, model)
    spec = next(s for s in model.requests[0].tools if s.name == "agent")
    assert "agent" not in spec.parameters["properties"]


def test_treadle_context_lists_commands_and_agents_and_what_trust_ignored(tmp_path: Path) -> None:
    import io

    from treadle.entrypoints.commands import run_subcommand

    repo = repository(tmp_path, "claude_code")
    out = io.StringIO()
    assert run_subcommand(["context", "--workspace", str(repo)], out) == 0
    lines = out.getvalue().splitlines()
    assert f"  /review  {repo}/.claude/commands/review.md  (project)" in lines
    reviewer = f"{repo}/.claude/agents/code-reviewer.md"
    assert f"  code-reviewer  {reviewer}  (project; tools: Read, Grep, Glob)" in lines
    assert (
        "  ignored, as this folder is not trusted: model of command /quick, agent fast-helper"
        in lines
    )
