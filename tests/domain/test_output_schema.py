"""A final answer held to a JSON Schema: a conforming one passes, a non-conforming one
gets exactly one corrective request, and then passes or fails OutputInvalid."""

from __future__ import annotations

from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.output_schema import output_contract
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.rules.final_answer import correction_request, read_value
from treadle.domain.rules.history import is_sendable
from treadle.domain.values.events import TurnEnded
from treadle.domain.values.outcome import FailureKind, OutcomeKind

SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}


def schema_settings() -> TurnSettings:
    return TurnSettings(output=output_contract(SCHEMA))


def test_an_answer_is_read_as_json_with_or_without_its_fence() -> None:
    assert read_value('{"count": 3}') == ({"count": 3}, "")
    assert read_value('```json\n{"count": 3}\n```') == ({"count": 3}, "")
    assert read_value("It is 3.")[1].startswith("the answer is not JSON: Expecting value")


def test_the_correction_shows_the_errors_and_asks_for_the_value() -> None:
    text = correction_request(["$.count: 'x' is not of type 'integer'"])
    assert "- $.count: 'x' is not of type 'integer'" in text
    assert text.endswith("Answer again with only the conforming JSON value.")


async def test_a_conforming_answer_passes_and_its_value_ends_the_turn(rig) -> None:
    r = rig(
        [R.calling("bash", command="ls"), R.saying('{"count": 12}')], settings=schema_settings()
    )
    outcome = await r.agent.run_turn("count the files")
    assert outcome.kind is OutcomeKind.FINISHED
    assert len(r.model.requests) == 2
    (ended,) = r.terminal.of_type(TurnEnded)
    assert ended.value == {"count": 12}
    assert "valid against this JSON Schema" in r.model.requests[0].system
    assert r.model.requests[0].output_schema == SCHEMA


async def test_a_non_conforming_answer_gets_one_correction_and_then_passes(rig) -> None:
    r = rig(
        [R.saying('{"count": "twelve"}'), R.saying('{"count": 12}')], settings=schema_settings()
    )
    outcome = await r.agent.run_turn("count the files")
    assert outcome.kind is OutcomeKind.FINISHED
    assert len(r.model.requests) == 2
    correction = r.model.requests[1].messages[-1]
    assert correction.role == "user"
    assert "$.count: 'twelve' is not of type 'integer'" in correction.text
    assert r.terminal.of_type(TurnEnded)[0].value == {"count": 12}


async def test_still_not_conforming_after_the_correction_fails_output_invalid(rig) -> None:
    script = [R.saying("twelve"), R.saying('{"total": 12}'), R.saying('{"count": 12}')]
    r = rig(script, settings=schema_settings())
    outcome = await r.agent.run_turn("count the files")
    assert (outcome.kind, outcome.reason, outcome.exit_code) == (
        OutcomeKind.FAILED,
        FailureKind.OUTPUT_INVALID,
        1,
    )
    assert outcome.screen_line == "Turn failed: OutputInvalid: $: 'count' is a required property"
    assert len(r.model.requests) == 2  # exactly one corrective request
    assert r.terminal.of_type(TurnEnded)[0].value is None
    assert is_sendable(r.agent.history.messages)


async def test_without_a_schema_any_answer_finishes_and_carries_no_value(rig) -> None:
    r = rig([R.saying("twelve")])
    assert (await r.agent.run_turn("x")).kind is OutcomeKind.FINISHED
    assert r.terminal.of_type(TurnEnded)[0].value is None
    assert r.model.requests[0].output_schema is None


async def test_a_sub_agent_answers_freely_under_its_callers_schema(rig) -> None:
    import json

    from treadle.domain.values.conversation import ToolCall

    spawn = ToolCall("a1", "agent", json.dumps({"task": "sub"}))
    script = {"*": [R((), (spawn,)), R.saying('{"count": 1}')], "sub": [R.saying("prose")]}
    r = rig(script, settings=schema_settings())
    assert (await r.agent.run_turn("x")).kind is OutcomeKind.FINISHED
    assert len(r.model.requests) == 3
