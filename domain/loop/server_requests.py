"""What the loop does when a tool's server asks something mid-call: a form asked of
the person one field at a time through the Terminal port, and a completion from the
session's model. The decisions are in :mod:`~treadle.domain.rules.elicitation` and
:mod:`~treadle.domain.rules.sampling`; this drives them.

Example::

    answer = await fill_form(FormRequest("everything", "Your name?", fields), ask)
    answer.action, answer.content      # ('accept', {'name': 'Ada'})
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from returns.result import Failure, Success

from treadle.domain.rules.elicitation import ATTEMPTS, field_question, read_action, read_field
from treadle.domain.rules.sampling import sampling_budget
from treadle.domain.values.conversation import Message, Usage
from treadle.domain.values.model import ModelRequest, StreamEnd, TextDelta, UsageReported
from treadle.domain.values.server_requests import (
    FormAnswer,
    FormRequest,
    FormValue,
    SamplingReply,
    SamplingRequest,
)
from treadle.ports.model import Model

Ask = Callable[[str], Awaitable[str | None]]


def opening_question(request: FormRequest) -> str:
    """The first question: the server's message, and how to answer it."""
    said = f"MCP server {request.server} asks: {request.message.strip()}"
    if request.url:
        return f"{said}\nOpen {request.url} ? (y: yes, once done · n: no · Enter: dismiss)"
    count = len(request.fields)
    return (
        f"{said}\nFill in its form of {count} field{'s' * (count != 1)}? (y · n · Enter: dismiss)"
    )


async def fill_form(request: FormRequest, ask: Ask) -> FormAnswer:
    """Ask the form of the person: accept, decline or dismiss, then each field.

    Nobody to answer (``ask`` gives None: a headless run) declines. A field whose
    answer does not read is asked again, with why, up to :data:`ATTEMPTS` times; a
    person who then answers nothing usable, or leaves mid-form, dismisses it.
    """
    action = read_action(await ask(opening_question(request)))
    if action != "accept" or request.url:
        return FormAnswer(action)
    content: dict[str, FormValue] = {}
    for field in request.fields:
        question = field_question(field)
        for _ in range(ATTEMPTS):
            typed = await ask(question)
            if typed is None:
                return FormAnswer("cancel")
            value, why = read_field(field, typed)
            if not why:
                break
            question = f"{field_question(field)} — {why}"
        else:
            return FormAnswer("cancel")
        if value is not None:
            content[field.key] = value
    return FormAnswer("accept", content)


async def complete(model: Model, request: SamplingRequest) -> tuple[SamplingReply, Usage]:
    """One answer of ``model`` to a server's messages, without tools, and its tokens."""
    messages = [
        Message.user(m.text) if m.role == "user" else Message.assistant(m.text)
        for m in request.messages
    ]
    asked = ModelRequest(
        system=request.system,
        messages=messages,
        tools=(),
        max_tokens=sampling_budget(request.max_tokens),
        tools_allowed=False,
    )
    text: list[str] = []
    usage = Usage()
    stop: SamplingReply | None = None
    async for item in model.stream(asked):
        match item:
            case Success(TextDelta(text=delta)):
                text.append(delta)
            case Success(UsageReported(usage=reported)):
                usage = reported
            case Success(StreamEnd(stop_reason=reason)):
                cut = reason in ("max_tokens", "context_full")
                stop = SamplingReply("".join(text), stop_reason="maxTokens" if cut else "endTurn")
            case Failure(error):
                return SamplingReply(why=f"the model failed: {error.describe()}"), usage
    if stop is None:
        return SamplingReply(why="the model's answer ended without its end"), usage
    return stop, usage
