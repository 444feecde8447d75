"""A server's form and its request for a completion, as plain values: the fields a
schema describes, how a typed answer reads, what the policy says, how a form is
filled in one question at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from treadle.domain.loop.server_requests import Ask, fill_form
from treadle.domain.rules.elicitation import field_question, form_fields, read_action, read_field
from treadle.domain.rules.sampling import decide_sampling, sampling_budget
from treadle.domain.values.server_requests import FieldKind, FormField, FormRequest

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ratio": {"type": "number", "default": 0.5},
        "agree": {"type": "boolean"},
        "pet": {"type": "string", "enum": ["cat", "dog"], "enumNames": ["Cats", "Dogs"]},
        "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
        "tools": {"type": "array", "items": {"enum": ["saw", "drill"]}},
    },
    "required": ["name"],
}


def test_a_schema_gives_one_field_per_property_of_its_kind_in_order() -> None:
    fields = form_fields(SCHEMA)
    assert [f.key for f in fields] == ["name", "age", "ratio", "agree", "pet", "hero", "tools"]
    assert [f.kind for f in fields] == [
        FieldKind.STRING,
        FieldKind.INTEGER,
        FieldKind.NUMBER,
        FieldKind.BOOLEAN,
        FieldKind.CHOICE,
        FieldKind.CHOICE,
        FieldKind.CHOICES,
    ]
    assert fields[0].required and not fields[1].required
    assert fields[4].labels == ("Cats", "Dogs") and fields[5].choices == ("h1",)


def test_a_schema_without_properties_has_no_fields() -> None:
    assert form_fields({"type": "object"}) == ()


@pytest.mark.parametrize(
    ("key", "typed", "value"),
    [
        ("name", " Ada ", "Ada"),
        ("age", "42", 42),
        ("ratio", "", 0.5),
        ("ratio", "2.5", 2.5),
        ("agree", "Yes", True),
        ("agree", "n", False),
        ("pet", "2", "dog"),
        ("pet", "cats", "cat"),
        ("hero", "Superman", "h1"),
        ("tools", "1, drill", ["saw", "drill"]),
        ("age", "", None),
    ],
)
def test_a_typed_answer_reads_as_its_fields_value(key: str, typed: str, value: object) -> None:
    field = next(f for f in form_fields(SCHEMA) if f.key == key)
    assert read_field(field, typed) == (value, "")


@pytest.mark.parametrize(
    ("key", "typed", "why"),
    [
        ("name", "", "an answer is required"),
        ("age", "4.5", "answer with a whole number"),
        ("age", "200", "at most 150"),
        ("age", "nan", "answer with a number"),
        ("agree", "maybe", "answer yes or no"),
        ("pet", "3", "choose from 1 to 2"),
    ],
)
def test_an_answer_that_does_not_read_says_why(key: str, typed: str, why: str) -> None:
    field = next(f for f in form_fields(SCHEMA) if f.key == key)
    assert read_field(field, typed) == (None, why)


def test_a_fields_question_says_its_kind_its_choices_and_its_default() -> None:
    pet = FormField("pet", FieldKind.CHOICE, "Pet", "your pet", True, "cat", ("cat",), ("Cats",))
    assert field_question(pet) == "Pet — your pet (one of 1) Cats, required) [Enter: cat]"


def test_yes_accepts_no_declines_anything_else_dismisses_and_nobody_declines() -> None:
    assert [read_action(t) for t in ("y", "accept", "N", "", "later", None)] == [
        "accept",
        "accept",
        "decline",
        "cancel",
        "cancel",
        "decline",
    ]


def test_the_policy_decides_a_completion_and_its_budget_is_bounded() -> None:
    assert [decide_sampling(p) for p in ("ask", "auto", "read-only")] == [
        "ask",
        "allow",
        "decline",
    ]
    assert (sampling_budget(0), sampling_budget(100), sampling_budget(10**9)) == (1, 100, 8192)


def answering(answers: Sequence[str | None]) -> tuple[Ask, list[str]]:
    queue = list(answers)
    asked: list[str] = []

    async def ask(question: str) -> str | None:
        asked.append(question)
        return queue.pop(0) if queue else None

    return ask, asked


def test_a_form_is_filled_in_field_by_field_and_a_bad_answer_is_asked_again() -> None:
    ask, asked = answering(["y", "Ada", "old", "36", "", "", "", "", ""])
    answer = asyncio.run(fill_form(FormRequest("s", "Who are you?", form_fields(SCHEMA)), ask))
    assert answer.action == "accept"
    assert answer.content == {"name": "Ada", "age": 36, "ratio": 0.5}
    assert asked[3].endswith("— answer with a number")


def test_a_person_who_leaves_mid_form_dismisses_it() -> None:
    ask, _ = answering(["y", "Ada"])
    answer = asyncio.run(fill_form(FormRequest("s", "Who?", form_fields(SCHEMA)), ask))
    assert answer.action == "cancel" and answer.content == {}


def test_an_address_to_visit_is_asked_once_and_names_the_address() -> None:
    ask, asked = answering(["y"])
    request = FormRequest("s", "Sign in", url="https://example.com/auth")
    assert asyncio.run(fill_form(request, ask)).action == "accept"
    assert "https://example.com/auth" in asked[0] and len(asked) == 1


def test_the_sampling_question_says_the_budget_kept_and_how_much_the_server_sends() -> None:
    # hostile2: a server asking for 10**9 tokens with 10,000 messages was put to the
    # person as "at most 1000000000 tokens" and its last message only
    from treadle.domain.rules.sampling import sampling_summary
    from treadle.domain.values.server_requests import SamplingMessage, SamplingRequest

    many = tuple(SamplingMessage("user", "x" * 100) for _ in range(10_000))
    line = sampling_summary(
        SamplingRequest("srv", (*many, SamplingMessage("user", "sum up")), "", 10**9)
    )
    assert line.startswith(
        "srv asks the model (10001 messages, 1000006 characters; at most 8192 tokens): "
    )
    assert line.endswith(": sum up")
    one = sampling_summary(SamplingRequest("srv", (SamplingMessage("user", "hi"),), "", 100))
    assert one == "srv asks the model (at most 100 tokens): hi"


def test_a_choice_of_ten_thousand_long_labels_is_asked_on_a_bounded_line() -> None:
    # hostile2: an enum of 10,000 values of 1,000 characters was one question of 10 MB
    values = [f"v{i}-" + "x" * 1000 for i in range(10_000)]
    (field,) = form_fields({"properties": {"pick": {"type": "string", "enum": values}}})
    question = field_question(field)
    assert len(question) < 4000
    assert "1) v0-" in question and "9970 more" in question
    assert read_field(field, "10000") == (values[-1], "")  # every one can still be chosen
