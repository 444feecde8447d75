"""What the turn does with its hooks' word (issue 23): a Stop hook sends a turn on once,
and what SessionStart and UserPromptSubmit hooks add follows the person's message.
Apart from :mod:`treadle.domain.rules.hooks` (reading and matching the table), which a
session with no hook never loads.

>>> stop_goes_on(HookVerdict(blocked=True, reason="run the tests"), continued=0)
True
>>> with_context("fix it", ())
'fix it'
"""

from __future__ import annotations

from collections.abc import Sequence

from treadle.domain.values.hooks import HookVerdict

STOP_CONTINUATIONS = 1
"""How often Stop hooks may send a turn on: once, then ``stop_hook_active`` is true and
a second refusal is not obeyed (a hook that always refuses would never let it end)."""


def stop_goes_on(verdict: HookVerdict, continued: int) -> bool:
    """Whether the Stop hooks' verdict sends the turn on, after ``continued`` times."""
    return verdict.blocked and continued < STOP_CONTINUATIONS


def stop_feedback(reason: str) -> str:
    """The message that sends a turn on at a Stop hook's word."""
    return f"A Stop hook did not let the turn end yet; it says:\n{reason}"


def with_context(text: str, context: Sequence[str]) -> str:
    """A user's message with what hooks added to it, marked as theirs."""
    if not context:
        return text
    added = "\n\n".join(context)
    return f"{text}\n\n<hook-context>\n{added}\n</hook-context>"
