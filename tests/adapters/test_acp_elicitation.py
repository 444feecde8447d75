"""An MCP server's question (elicitation) through ACP: an editor that declared it can
show forms (or addresses) gets the form whole as the SDK's ``elicitation/create``
(unstable in ACP), and its answer comes back to the server, kept to the form's fields;
an editor that declared nothing gets nothing asked, and the question is declined."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from acp.schema import (
    AcceptElicitationResponse,
    CancelElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
)

from treadle.adapters.acp.terminal import AcpTerminal
from treadle.adapters.fakes import FakeClock, FakeRunner, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.secrets.redact import RedactingTerminal, Redactor
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.elicitation import form_fields, form_schema
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.server_requests import FormAnswer, FormRequest
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "default": "Ada"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "colour": {"type": "string", "enum": ["red", "green"]},
        "sure": {"type": "boolean", "description": "Really?"},
    },
    "required": ["name"],
}


class Editor:
    """An ACP client that answers a server's question with ``reply``."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.asked: list[tuple[str, Any]] = []
        self.said: list[Any] = []

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> Any:
        self.asked.append((message, mode))
        return self.reply

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.said.append(update)


class AskingTool:
    """A server's tool that asks ``request`` mid-call, and says what it was answered."""

    spec = ToolSpec("mcp__srv__book", "Books.", {"type": "object", "properties": {}})
    access: Access = "read"

    def __init__(self, request: FormRequest) -> None:
        self.request = request
        self.answers: list[FormAnswer] = []

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return ""

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        self.answers.append(await context.ask_form(self.request))
        return ToolResult(self.answers[-1].action, False, "ok")


def turn(editor: Editor, can: ElicitationCapabilities | None, request: FormRequest) -> AskingTool:
    terminal = AcpTerminal(editor, "s1", "/tmp", can)  # type: ignore[arg-type]
    screen = RedactingTerminal(terminal, Redactor(["hunter2-secret"]))
    model = ScriptedModel([R.calling("mcp__srv__book"), R.saying("Booked.")])
    clock = FakeClock()
    tool = AskingTool(request)
    agent = Agent(TurnPorts(model, clock, FakeRunner(clock), screen), TurnSettings(), [tool])
    asyncio.run(agent.run_turn("book it"))
    return tool


FORM = FormRequest("srv", "Who books? (key hunter2-secret)", form_fields(SCHEMA))
FORMS = ElicitationCapabilities(form=ElicitationFormCapabilities())


def test_an_editor_that_shows_forms_gets_the_form_whole_and_answers_it() -> None:
    content = {"name": "Grace", "age": "old", "colour": "blue", "sure": True, "extra": 1}
    editor = Editor(AcceptElicitationResponse(action="accept", content=content))
    tool = turn(editor, FORMS, FORM)
    ((message, mode),) = editor.asked
    assert message == "MCP server srv asks: Who books? (key [redacted])"
    assert mode.session_id == "s1"
    sent = mode.requested_schema.model_dump(mode="json", exclude_none=True, by_alias=True)
    assert form_fields(sent) == FORM.fields  # every field, its kind, bounds and default
    # What does not fit the form (a word for an integer, a colour not offered) is left out.
    assert tool.answers == [FormAnswer("accept", {"name": "Grace", "sure": True})]


def test_an_editor_that_dismisses_the_form_cancels_it() -> None:
    tool = turn(Editor(CancelElicitationResponse(action="cancel")), FORMS, FORM)
    assert tool.answers == [FormAnswer("cancel")]


def test_an_editor_that_declared_nothing_is_not_asked_and_the_question_is_declined() -> None:
    editor = Editor(AcceptElicitationResponse(action="accept", content={}))
    tool = turn(editor, None, FORM)
    assert editor.asked == [] and tool.answers == [FormAnswer("decline")]


def test_an_address_goes_only_to_an_editor_that_declared_addresses() -> None:
    visit = FormRequest("srv", "Sign in to pay.", url="https://pay.example/approve")
    editor = Editor(AcceptElicitationResponse(action="accept"))
    assert turn(editor, FORMS, visit).answers == [FormAnswer("decline")]
    assert editor.asked == []
    urls = ElicitationCapabilities.model_validate({"url": {}})
    tool = turn(editor, urls, visit)
    ((_, mode),) = editor.asked
    assert str(mode.url) == "https://pay.example/approve" and mode.elicitation_id
    assert tool.answers == [FormAnswer("accept")]


def test_a_forms_schema_reads_back_as_the_same_fields() -> None:
    fields = form_fields(SCHEMA)
    assert form_fields(form_schema(fields)) == fields
    choices = form_fields({"properties": {"c": {"type": "array", "items": {"enum": ["a", "b"]}}}})
    assert form_fields(form_schema(choices)) == choices
