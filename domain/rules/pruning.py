"""Pruning: old tool results replaced by a short stub that says what they were.

The stub keeps the result's slot (same call id, same place), so every call still has
its result and the conversation stays valid for both protocols; it names the tool,
the command or path, the size, how it began and where the full text is kept. The
newest part of the conversation is never pruned, except as a last resort.

Example::

    >>> call = ToolCall("c1", "bash", '{"command": "pytest -q"}')
    >>> stub_for(Message.tool("c1", "Exit code 1.\\n" + "x" * 900), call).text[:52]
    '[pruned to save context] bash `pytest -q` gave 913 c'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.rules.tokens import Measure, as_is, message_tokens
from treadle.domain.values.conversation import Message, ToolCall

STUB_MARK = "[pruned to save context]"
STUB_WORTH = 200
"""Results of fewer tokens are left as they are: a stub would save next to nothing."""
_SUMMARY_KEYS = ("command", "path", "pattern", "query", "url", "task")
_SAVED_COPY = re.compile(r"The full output is in (\S+?)\.?(?:\s|$)")


def describe_call(call: ToolCall | None) -> str:
    """The tool and what it was called on: ``bash `pytest -q```, ``read_file src/a.py``."""
    if call is None:
        return "a tool"
    try:
        arguments = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        arguments = None
    if isinstance(arguments, dict):
        for key in _SUMMARY_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                shown = " ".join(value.split())
                shown = shown if len(shown) <= 80 else shown[:79] + "…"
                return f"{call.name} `{shown}`" if key == "command" else f"{call.name} {shown}"
    return call.name


def is_stub(message: Message) -> bool:
    return message.role == "tool" and message.text.startswith(STUB_MARK)


def stub_for(result: Message, call: ToolCall | None) -> Message:
    """The stub that stands for ``result`` (the answer to ``call``).

    It says where the full text is: the file a cut output was saved to, if any, and the
    session's transcript, which keeps every message. It names no path of the machine
    but the one the result itself named, so that a replay elsewhere sends the same.
    """
    first = next((line.strip() for line in result.text.splitlines() if line.strip()), "")
    first = first if len(first) <= 100 else first[:99] + "…"
    began = f', beginning "{first}"' if first else ""
    saved = _SAVED_COPY.search(result.text)
    where = "the session's transcript"
    kept = (
        f"The full text is kept in {saved.group(1)} and {where}"
        if saved
        else f"The full text is kept in {where}"
    )
    text = (
        f"{STUB_MARK} {describe_call(call)} gave {len(result.text):,} characters{began}. "
        f"{kept}; run the call again if you need it."
    )
    return Message.tool(result.tool_call_id or "", text, is_error=result.is_error)


def recent_start(
    messages: Sequence[Message], keep_tokens: int, measure: Measure = message_tokens
) -> int:
    """Where the newest part of ``messages`` that holds about ``keep_tokens`` begins:
    at least the last message, and never between a call and its results."""
    start, total = len(messages), 0
    while start > 0:
        cost = measure(messages[start - 1])
        if total + cost > keep_tokens and start < len(messages):
            break
        total += cost
        start -= 1
    while 0 < start < len(messages) and messages[start].role == "tool":
        start -= 1
    return start


def prune(
    messages: Sequence[Message],
    *,
    keep_tokens: int,
    all_but_newest: bool = False,
    newest_bytes: int = 0,
    start: int = 0,
    measure: Measure = message_tokens,
    recorded: Callable[[Message], Message] = as_is,
) -> tuple[tuple[int, ...], tuple[Message, ...]]:
    """The positions of the results to prune, and their stubs.

    Results in the newest ``keep_tokens`` are kept. ``all_but_newest`` is the last
    resort, when the newest part alone does not fit: every result but the very last
    becomes a stub, and the last is cut to ``newest_bytes`` (head and tail) if it is
    longer (it came before the window was known, or is the window's whole). ``start``
    skips what an earlier pruning left with nothing to prune (a hint: the same results
    come out from 0, only slower). ``measure`` estimates a message; stubs and cuts are
    made from a result as ``recorded`` makes it (as the transcript keeps it: a replay,
    which has only that, makes the same ones).
    """
    if all_but_newest:
        newest = max((i for i, m in enumerate(messages) if m.role == "tool"), default=-1)
        protected_from, start = len(messages), 0
    else:
        newest, protected_from = -1, recent_start(messages, keep_tokens, measure)
    positions: list[int] = []
    stubs: list[Message] = []
    for index in range(start, protected_from):
        message = messages[index]
        if index == newest:
            cut = _cut(recorded(message), newest_bytes)
            if cut is not None:
                positions.append(index)
                stubs.append(cut)
            continue
        if message.role != "tool" or is_stub(message):
            continue
        if measure(message) <= STUB_WORTH:
            continue
        positions.append(index)
        call = _call_of(messages, index)
        recorded_call = recorded(Message.assistant("", (call,))).tool_calls[0] if call else None
        stubs.append(stub_for(recorded(message), recorded_call))
    return tuple(positions), tuple(stubs)


def _call_of(messages: Sequence[Message], index: int) -> ToolCall | None:
    """The call the result at ``index`` answers: in the assistant message before it."""
    result = messages[index]
    for before in range(index - 1, -1, -1):
        if messages[before].role == "assistant":
            return next(
                (c for c in messages[before].tool_calls if c.id == result.tool_call_id), None
            )
    return None


def _cut(result: Message, limit: int) -> Message | None:
    """``result`` cut to ``limit`` bytes, head and tail; None if it is not longer."""
    raw = result.text.encode("utf-8", "surrogatepass")
    if limit <= 0 or len(raw) <= limit:
        return None
    text = OutputBound.of(raw, limit).text(
        "cut to fit the context window; the full text is in the session's transcript"
    )
    return Message.tool(result.tool_call_id or "", text, is_error=result.is_error)


def with_stubs(
    messages: Sequence[Message], positions: Sequence[int], stubs: Sequence[Message]
) -> list[Message]:
    """``messages`` with the results at ``positions`` replaced by their stubs.

    A position that no longer holds the result its stub answers (a transcript edited
    by hand) is left as it is: the conversation must stay valid above all.
    """
    result = list(messages)
    for index, stub in zip(positions, stubs, strict=True):
        if 0 <= index < len(result) and result[index].tool_call_id == stub.tool_call_id:
            result[index] = stub
    return result
