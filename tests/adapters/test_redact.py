from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treadle.adapters.fakes import RecordingTerminal
from treadle.adapters.process.environment import child_environment
from treadle.adapters.secrets.redact import (
    REDACTED,
    EventRedactor,
    RedactingTerminal,
    Redactor,
)
from treadle.adapters.transcript.jsonl_transcript import JsonlTranscript, read_transcript
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    MessageAdded,
    ReasoningDelta,
    ResponseReceived,
    ToolStarted,
)
from treadle.domain.values.tools import ApprovalRequest

SECRET = "sk-test-0123456789abcdef"


@pytest.mark.parametrize(
    ("name", "value", "redacted"),
    [
        ("MY_API_KEY", "s3cr3t-value-1", True),
        ("GITHUB_TOKEN", "tok-abcdefgh", True),
        ("DB_PASSWORD", "hunter2hunter2", True),
        ("aws_secret_access_key", "abcdefghijkl", True),
        ("TOKENIZERS_PARALLELISM", "false", False),  # too short to be a secret
        ("HOME", "/home/someone", False),  # not a secret-looking name
        ("PAGER_KEY", "1234567", False),  # seven characters: ordinary words stay
    ],
)
def test_secret_looking_variables_are_redacted_by_name_and_length(
    name: str, value: str, redacted: bool
) -> None:
    redactor = Redactor.from_environ({name: value})
    text = redactor.redact(f"before {value} after")
    assert (text == f"before {REDACTED} after") is redacted


def test_a_configured_key_variable_is_redacted_whatever_its_name() -> None:
    redactor = Redactor.from_environ({"LLM_CREDS_X": "abcdefgh12345"}, also=["LLM_CREDS_X"])
    assert redactor.redact("key abcdefgh12345") == f"key {REDACTED}"


def test_key_shaped_strings_are_redacted_without_any_variable() -> None:
    redactor = Redactor.from_environ({})
    text = redactor.redact("use sk-ant-abcdefghijklmnopqrstuvwxyz and ghp_" + "a" * 36)
    assert text == f"use {REDACTED} and {REDACTED}"


def test_a_secret_that_contains_another_is_replaced_whole() -> None:
    redactor = Redactor(["abcdefgh", "abcdefgh-longer"])
    assert redactor.redact("x abcdefgh-longer y abcdefgh") == f"x {REDACTED} y {REDACTED}"


def test_events_are_redacted_in_every_string_field() -> None:
    redactor = Redactor([SECRET])
    call = ToolCall("c1", "bash", f'{{"command": "echo {SECRET}"}}')
    event = MessageAdded(Message.assistant(f"it is {SECRET}", (call,)))
    (clean,) = EventRedactor(redactor).process(event)
    assert SECRET not in repr(clean)
    assert isinstance(clean, MessageAdded)
    assert clean.message.tool_calls[0].id == "c1"


def test_an_event_without_secrets_passes_unchanged() -> None:
    event = ToolStarted(ToolCall("c1", "bash", "{}"), "ls")
    assert EventRedactor(Redactor([SECRET])).process(event)[0] is event


def test_a_secret_split_across_answer_deltas_is_caught_whole() -> None:
    redactor = EventRedactor(Redactor([SECRET]))
    pieces = ["The key is sk-te", "st-0123", "456789abcdef.", " Done."]
    shown = [e for piece in pieces for e in redactor.process(AnswerDelta(piece))]
    shown += redactor.process(ResponseReceived(1, "", (), Usage(), "end_turn"))
    text = "".join(e.text for e in shown if isinstance(e, AnswerDelta))
    assert text == f"The key is {REDACTED}. Done."


def test_held_back_text_comes_out_before_the_agents_next_event() -> None:
    redactor = EventRedactor(Redactor([SECRET]))
    assert redactor.process(AnswerDelta("tasks")) == [AnswerDelta("task")]  # "s" may start it
    end = ResponseReceived(1, "tasks", (), Usage(), "end_turn")
    assert redactor.process(end) == [AnswerDelta("s"), end]


def test_a_secret_split_across_reasoning_deltas_is_caught_whole_and_comes_before_the_answer():
    redactor = EventRedactor(Redactor([SECRET]))
    shown = redactor.process(ReasoningDelta("It printed sk-te"))
    shown += redactor.process(ReasoningDelta("st-0123456789abcdef; s"))
    shown += redactor.process(AnswerDelta("Done."))
    assert shown == [
        ReasoningDelta("It printed "),
        ReasoningDelta(f"{REDACTED}; "),
        ReasoningDelta("s"),  # held back: it might have begun the key; out before the answer
        AnswerDelta("Done."),
    ]


def test_each_agent_has_its_own_held_back_text() -> None:
    redactor = EventRedactor(Redactor([SECRET]))
    redactor.process(AnswerDelta("main s"))
    redactor.process(AnswerDelta("sub s", "agent-1"))
    assert redactor.flush() == [AnswerDelta("s"), AnswerDelta("s", "agent-1")]


@given(st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=6))
def test_however_a_stream_is_cut_the_secret_never_shows(cuts: list[int]) -> None:
    text = f"a {SECRET} b {SECRET[:5]} c {SECRET}"
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in itertools.pairwise(points) if b > a]
    redactor = EventRedactor(Redactor([SECRET]))
    shown = [e for piece in pieces for e in redactor.process(AnswerDelta(piece))]
    shown += redactor.flush()
    joined = "".join(e.text for e in shown if isinstance(e, AnswerDelta))
    assert joined == f"a {REDACTED} b {SECRET[:5]} c {REDACTED}"
    assert all(SECRET not in e.text for e in shown if isinstance(e, AnswerDelta))


async def test_the_screen_never_shows_or_asks_about_a_secret() -> None:
    inner = RecordingTerminal(approvals=["yes"])
    screen = RedactingTerminal(inner, Redactor([SECRET]))
    screen.show(ToolStarted(ToolCall("c1", "bash", "{}"), f"curl -H {SECRET}"))
    await screen.ask_approval(ApprovalRequest("bash", f"curl -H {SECRET}", "curl"))
    await screen.ask_question(f"use {SECRET}?")
    everything = repr(inner.events) + repr(inner.approval_requests) + repr(inner.questions)
    assert SECRET not in everything
    assert screen.events == inner.events  # the rest is the inner terminal's


# One rule for secret names, shared with the commands' environment --------------------

SECRET_VARIABLES = {
    "MY_API_KEY": "s3cr3t-value-1",
    "DB_PASSWD": "pa55w0rd-long",
    "GOOGLE_CREDENTIALS": "cred-0123456789",
    "SMTP_PASS": "hunter2",
    "MYSQL_PWD": "Xy7!pq",
    "BASIC_AUTH": "user:pa55",
    "DATABASE_URL": "postgres://app:hunter3@db:5432/app",
}
PLAIN_VARIABLES = {
    "HOME": "/home/someone",
    "PWD": "/src/project",
    "PASSAGE_COUNT": "Xy7!pq-ordinary",
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "SITE_URL": "https://example.com/app",
}


@pytest.mark.parametrize("name", list(SECRET_VARIABLES))
def test_commands_never_see_what_the_redactor_hides(name: str) -> None:
    value = SECRET_VARIABLES[name]
    environment = child_environment({name: value}, passthrough=(), extra={}, run_id="r")
    shown = Redactor.from_environ({name: value}).redact(f"it is {value} here")

    assert name not in environment
    assert value not in shown


@pytest.mark.parametrize("name", list(PLAIN_VARIABLES))
def test_ordinary_variables_reach_commands_and_stay_readable(name: str) -> None:
    value = PLAIN_VARIABLES[name]
    environment = child_environment({name: value}, passthrough=(), extra={}, run_id="r")
    shown = Redactor.from_environ({name: value}).redact(f"it is {value} here")

    assert (name in environment) is (name != "PWD")  # PWD is the command's own folder
    assert shown == f"it is {value} here"


def test_the_password_of_any_url_is_redacted() -> None:
    redactor = Redactor.from_environ({})

    text = redactor.redact("clone https://bob:tok3n-xyz@git.example.com/r.git or ftp://a@b/c")

    assert text == f"clone https://bob:{REDACTED}@git.example.com/r.git or ftp://a@b/c"


# Short values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text", "shown"),
    [
        ("hunter2", "pw hunter2, not hunter22", f"pw {REDACTED}, not hunter22"),
        ("Xy7!", "login Xy7! now", f"login {REDACTED} now"),
        ("false", "parallel false", "parallel false"),  # a plain word: a setting
        ("TRUE", "is TRUE", "is TRUE"),
        ("Never", "Never mind", "Never mind"),
        ("4096", "4096 bytes", "4096 bytes"),  # a plain number
        ("ab1", "ab1 stays", "ab1 stays"),  # under four characters
    ],
)
def test_short_values_of_secret_variables_are_redacted_where_they_stand_alone(
    value: str, text: str, shown: str
) -> None:
    assert Redactor.from_environ({"APP_TOKEN": value}).redact(text) == shown


# Key shapes split across deltas --------------------------------------------------------

SHAPED = "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0k1L2"


@given(st.lists(st.integers(min_value=0, max_value=70), min_size=1, max_size=5))
def test_a_key_shape_split_anywhere_never_reaches_the_screen_whole(cuts: list[int]) -> None:
    text = f"use {SHAPED} or https://me:pa55-word@h.io/x now"
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    inner = RecordingTerminal()
    screen = RedactingTerminal(inner, Redactor.from_environ({}))
    for a, b in itertools.pairwise(points):
        if b > a:
            screen.show(AnswerDelta(text[a:b]))
    screen.show(ResponseReceived(1, text, (), Usage(), "end_turn"))
    shown = "".join(e.text for e in inner.events if isinstance(e, AnswerDelta))
    assert shown == f"use {REDACTED} or https://me:{REDACTED}@h.io/x now"


def test_a_key_shape_split_across_deltas_is_kept_out_of_the_transcript(tmp_path) -> None:
    transcript = JsonlTranscript(tmp_path / "t.jsonl", redact=Redactor.from_environ({}))
    for piece in ("the key: " + SHAPED[:9], SHAPED[9:20], SHAPED[20:] + " ok"):
        transcript.record(AnswerDelta(piece))
    transcript.record(ResponseReceived(1, "", (), Usage(), "end_turn"))
    transcript.close()

    saved = (tmp_path / "t.jsonl").read_text()
    deltas = [e.text for e in read_transcript(tmp_path / "t.jsonl") if isinstance(e, AnswerDelta)]
    assert SHAPED not in saved and SHAPED[:12] not in saved
    assert "".join(deltas) == f"the key: {REDACTED} ok"


def test_a_secret_after_an_escaped_newline_is_kept_out_of_the_transcript(tmp_path) -> None:
    redactor = Redactor.from_environ({"DB_PASS": "hunter2"})
    transcript = JsonlTranscript(tmp_path / "t.jsonl", redact=redactor)
    transcript.record(ResponseReceived(1, f"one\nhunter2\n{SHAPED}", (), Usage(), "end_turn"))
    transcript.close()

    saved = (tmp_path / "t.jsonl").read_text()
    assert "hunter2" not in saved and SHAPED not in saved


def test_a_secret_added_later_is_redacted_from_then_on_with_the_earlier_ones() -> None:
    redactor = Redactor(["first-secret-value"])
    assert redactor.redact("at-0123456789abcdef") == "at-0123456789abcdef"
    redactor.add(["at-0123456789abcdef", "first-secret-value", ""])
    assert redactor.redact("first-secret-value at-0123456789abcdef") == "[redacted] [redacted]"
    assert redactor.releasable("x at-0123") == 2  # a stream waits on its start too
