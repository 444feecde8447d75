"""What a turn needs to know besides its ports: budgets, schedules, policy, limits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from treadle.domain.loop.prompt import SYSTEM_PROMPT
from treadle.domain.rules.approval import ApprovalPolicy
from treadle.domain.rules.context_window import ContextSettings
from treadle.domain.rules.limits import SpendingLimits
from treadle.domain.rules.retry import RetrySchedule
from treadle.domain.rules.tokens import as_is
from treadle.domain.rules.truncation import TokenBudget
from treadle.domain.values.conversation import Message
from treadle.domain.values.output import OutputContract
from treadle.domain.values.prices import Prices
from treadle.domain.values.tools import ToolLimits
from treadle.domain.values.workflows import AgentDefinition, Skill


@dataclass(frozen=True, slots=True)
class SubAgentClocks:
    """A sub-agent reports every ``check_interval`` seconds and stops at ``deadline``.

    After the deadline it has ``report_grace`` seconds at most (and no longer than its
    deadline) to write its final report.
    """

    check_interval: float = 30.0
    deadline: float = 600.0
    report_grace: float = 60.0

    def __post_init__(self) -> None:
        if self.check_interval <= 0 or self.deadline <= 0 or self.report_grace < 0:
            raise ValueError("sub-agent clocks must be positive")


@dataclass(frozen=True, slots=True)
class TurnSettings:
    workspace: str = "."
    session_dir: str = ""
    system_prompt: str = SYSTEM_PROMPT
    instructions: str = ""
    """The project's own instructions (AGENTS.md…), sent after the system prompt."""
    skills: tuple[Skill, ...] = ()
    """The skills offered after them, by name and description (issue 23)."""
    agents: tuple[AgentDefinition, ...] = ()
    """The named sub-agents the ``agent`` tool offers (issue 23)."""
    budget: TokenBudget = field(default_factory=TokenBudget)
    context: ContextSettings = field(default_factory=ContextSettings)
    """How the conversation is kept within the model's context window."""
    retry: RetrySchedule = field(default_factory=RetrySchedule)
    approval: ApprovalPolicy = "auto"
    allowed_prefixes: tuple[str, ...] = ()
    limits: ToolLimits = field(default_factory=ToolLimits)
    subagents: SubAgentClocks = field(default_factory=SubAgentClocks)
    subagent_depth: int = 3
    mcp_tool_budget: float = 0.10
    """The share of the window the MCP tools' schemas may take; past it they are loaded
    on demand through ``tool_search`` (see ``domain/rules/tool_offer.py``)."""
    """How deep sub-agents may nest: the main agent's are 1 deep, theirs 2…"""
    log_path: str = ""
    """Where tracebacks go (the session's ``treadle.log``); named by a failure's line."""
    prices: Prices | None = None
    """The model's prices, where configured: a turn's end then says what it cost."""
    output: OutputContract | None = None
    """What the main agent's final answer must be (``--output-schema``); None: any text."""
    spending: SpendingLimits = field(default_factory=SpendingLimits)
    """What a turn may spend, its sub-agents included (limits the person set)."""
    recorded: Callable[[Message], Message] = as_is
    """A message as the transcript keeps it (its secrets redacted). The window's
    accounting estimates that, and a pruned result's stub is made from it: a replay,
    which has only the transcript, then estimates, sends and prunes the same."""
