"""Whether a server's request for a completion (MCP sampling) is served by the
session's model: the approval policy decides, as for a tool that writes.

Example::

    >>> decide_sampling("ask"), decide_sampling("auto"), decide_sampling("read-only")
    ('ask', 'allow', 'decline')
"""

from __future__ import annotations

from typing import Literal

from treadle.domain.rules.approval import ApprovalPolicy
from treadle.domain.values.server_requests import SamplingRequest

SamplingDecision = Literal["ask", "allow", "decline"]

SAMPLING_TOOL = "mcp_sampling"
"""The name an approval question about a completion goes by."""

MAX_SAMPLING_TOKENS = 8192
"""The most a server may ask the model to write for it, whatever it asks for."""


def decide_sampling(policy: ApprovalPolicy) -> SamplingDecision:
    """``ask`` asks the person, ``auto`` allows, ``read-only`` declines: a completion
    spends the person's tokens on a server's behalf."""
    if policy == "auto":
        return "allow"
    if policy == "read-only":
        return "decline"
    return "ask"


def sampling_summary(request: SamplingRequest, length: int = 160) -> str:
    """The approval question's line: who asks, how much it sends (when more than one
    message) and the budget it gets (not what it asked, which may be 10**9), and the
    start of its last message."""
    last = request.messages[-1].text if request.messages else ""
    line = " ".join(last[: length * 4].split())
    if len(line) > length:
        line = line[: length - 1] + "…"
    budget = f"at most {sampling_budget(request.max_tokens)} tokens"
    if len(request.messages) > 1:
        sent = sum(len(message.text) for message in request.messages) + len(request.system)
        budget = f"{len(request.messages)} messages, {sent} characters; {budget}"
    return f"{request.server} asks the model ({budget}): {line}"


def sampling_budget(asked: int) -> int:
    """The output budget of the completion: what the server asked, within bounds."""
    return max(1, min(asked, MAX_SAMPLING_TOKENS))
