"""The kinds of notice: what a :class:`~treadle.domain.values.events.Notice` names, for
scripts that read ``--json`` or a transcript. Closed: a new notice adds its kind here."""

from __future__ import annotations

from typing import Literal

NoticeKind = Literal[
    "agent_named",  # a named sub-agent set up from its file (issue 23)
    "answer_ended",  # an answer ended in an unusual way (a stop the server rarely gives)
    "background_stopped",  # the session's end stopped background processes (issue 27)
    "checkpoint_partial",  # the checkpoint before the turn left some files out
    "checkpoint_skipped",  # no checkpoint before the turn
    "command_model",  # a slash command's model, for its one turn
    "command_run",  # a slash command from a file was run
    "hook_failed",  # a hook that failed, hung past its deadline or wrote nonsense (issue 23)
    "hook_refused",  # a hook refused a call, a prompt or a turn's end, and why
    "hooks_unreadable",  # hooks in a settings file that cannot be taken
    "hooks_untrusted",  # a folder not trusted brings hooks, and they do not run
    "instructions_cut",  # project instructions over their cap
    "instructions_unreadable",  # a project instructions file that cannot be read
    "mcp_server_failed",  # an MCP server did not start
    "mcp_server_stopped",  # an MCP server stopped during the session
    "mcp_tool_list_repaired",  # an MCP server's tool list needed repairs
    "mcp_question",  # an MCP server asked the person something mid-call (elicitation)
    "mcp_sampling",  # an MCP server asked the session's model for a completion
    "mcp_tools_changed",  # an MCP server's tools or resources changed mid-session
    "mcp_tools_loaded",  # tool_search loaded MCP tools into the next requests
    "sandbox_unavailable",  # commands run without the sandbox asked for
    "skill_loaded",  # the skill tool loaded a skill
    "skills_offered",  # the skills offered to the model in the request
    "spending_limit_near",  # a turn's spending is past 80 % of a limit the person set
    "tools_dropped",  # the server's chat template drops the tools
    "transcript_failed",  # the transcript could not be written
    "window_not_learned",  # a window the server named, not believed
    "workflows_unreadable",  # a skill, command or agent file that cannot be read
    "workflows_untrusted",  # what a folder not trusted brings and was ignored
]
