"""The approval policy: which tool calls run, which need a yes, which are refused.

Example::

    >>> decide_approval("ask", "execute", "git status", allowed=("git status",))
    Allow()
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from treadle.domain.rules.command_hazards import command_hazard
from treadle.domain.values.tools import Access, ApprovalAnswer, Declined

ApprovalPolicy = Literal["ask", "auto", "read-only"]
POLICIES: tuple[ApprovalPolicy, ...] = ("ask", "auto", "read-only")

# Programs whose first argument names what they do: "always allow git status" should
# not also allow "git push".
_TWO_WORD_PROGRAMS = frozenset(
    {
        "git",
        "npm",
        "pnpm",
        "yarn",
        "cargo",
        "go",
        "pip",
        "uv",
        "poetry",
        "make",
        "docker",
        "kubectl",
        "python",
        "python3",
    }
)
# Subcommands whose next word names what they run: "always allow npm run test" should
# not also allow "npm run deploy", nor "uv run pytest" allow "uv run rm".
_THREE_WORD_COMMANDS = frozenset(
    {"npm run", "npm run-script", "pnpm run", "yarn run", "uv run", "poetry run", "go run"}
)
# Subcommands that fetch or run any program: never a prefix.
_RUNNING_SUBCOMMANDS = frozenset({"npm exec", "pnpm exec", "pnpm dlx", "yarn exec", "yarn dlx"})
# Programs that run another command: allowing them "always" would allow anything.
_WRAPPERS = frozenset(
    {
        "npx",
        "bunx",
        "uvx",
        "env",
        "sudo",
        "doas",
        "bash",
        "sh",
        "zsh",
        "dash",
        "eval",
        "exec",
        "xargs",
        "nohup",
        "timeout",
        "time",
        "nice",
        "command",
        "builtin",
        "watch",
        "ssh",
        "su",
        "setsid",
    }
)
# A command that chains or redirects can do more than its first words say.
_SHELL_CONTROL = re.compile(r"[;&|`<>\n]|\$\(")


@dataclass(frozen=True, slots=True)
class Allow:
    pass


@dataclass(frozen=True, slots=True)
class Ask:
    """A yes is needed. ``prefix`` is what "always" would allow (empty: not offered);
    ``why`` says why no prefix covers the command, when it carries a hazard."""

    prefix: str
    why: str = ""


@dataclass(frozen=True, slots=True)
class Deny:
    why: str


def command_prefix(command: str) -> str:
    """The words an "always for this command prefix" answer would allow.

    Empty when no prefix is safe to allow: a program that runs other commands
    (``env``, ``sudo``, ``bash -c``…) or an option before git's subcommand.
    """
    words = _first_words(command)
    if not words or words[0] in _WRAPPERS or "=" in words[0]:
        return ""
    if words[0] in _TWO_WORD_PROGRAMS:
        if len(words) < 2 or words[1].startswith("-"):
            return ""
        two = " ".join(words[:2])
        if two in _RUNNING_SUBCOMMANDS:
            return ""
        if two in _THREE_WORD_COMMANDS:
            return " ".join(words[:3]) if len(words) > 2 and not words[2].startswith("-") else ""
        return two
    return words[0]


def _first_words(command: str) -> list[str]:
    """The words of the command before any chaining, as the shell reads them."""
    first = _SHELL_CONTROL.split(command, maxsplit=1)[0]
    try:
        return shlex.split(first)
    except ValueError:
        return first.split()


def prefix_hazard(command: str) -> str:
    """What in the command runs or writes beyond what its prefix says ('' if nothing):
    ``find`` allowed is not ``find -exec`` allowed (``domain/rules/command_hazards.py``)."""
    first = _SHELL_CONTROL.split(command, maxsplit=1)[0]
    return command_hazard(_first_words(command), first)


def is_allowed_by_prefix(command: str, allowed: Collection[str]) -> bool:
    """A plain command (no chaining, pipes or redirection) whose prefix was allowed,
    with nothing in it that runs or writes beyond what the prefix says."""
    if _SHELL_CONTROL.search(command) or prefix_hazard(command):
        return False
    prefix = command_prefix(command)
    return bool(prefix) and prefix in allowed


def decide_approval(
    policy: ApprovalPolicy,
    access: Access,
    subject: str,
    *,
    allowed: Collection[str] = (),
    tool: str = "",
) -> Allow | Ask | Deny:
    """Decide on one call. ``subject`` is a command for ``execute``, a path for ``write``."""
    if access in ("read", "none") or policy == "auto":
        return Allow()
    if policy == "read-only":
        return Deny(f"the read-only approval policy does not allow {tool or access} calls")
    if access == "execute":
        hazard = prefix_hazard(subject)
        prefix = command_prefix(subject)
        if hazard:  # "always" for the prefix would not cover it: not offered
            if prefix in allowed:
                return Ask("", f"the allowed prefix “{prefix}” does not cover this: {hazard}")
            return Ask("", f"no prefix can be allowed for this: {hazard}")
        if is_allowed_by_prefix(subject, allowed):
            return Allow()
        return Ask(prefix)
    if tool and tool in allowed:
        return Allow()
    return Ask(tool)


REASON_CHARACTERS = 4_000
"""The most of a person's words sent with a refusal: a line, not a pasted file."""


def declined_text(answer: ApprovalAnswer) -> str:
    """Why a call was not run, as the model reads it: that the user said no, and their
    words when they gave some (what to do instead reads best as theirs, quoted).

    Example: ``declined_text(Declined("use make test"))`` is ``'the user declined this
    call and said: "use make test"'``.
    """
    reason = answer.reason.strip() if isinstance(answer, Declined) else ""
    if not reason:
        return "the user declined this call"
    if len(reason) > REASON_CHARACTERS:
        reason = reason[:REASON_CHARACTERS] + "…"
    return f'the user declined this call and said: "{reason}"'
