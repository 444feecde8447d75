"""Bad arguments from the model become one clear sentence for it; the loop goes on."""

from __future__ import annotations

import json

import pytest
from returns.result import Failure, Success

from treadle.adapters.fakes import FakeProcess
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.builtin_tools import BashTool, UpdatePlanTool
from treadle.domain.rules.arguments import load_json, parse_arguments
from treadle.domain.values.conversation import ToolCall
from treadle.domain.values.outcome import OutcomeKind

BASH = BashTool.spec.parameters
PLAN = UpdatePlanTool.spec.parameters


@pytest.mark.parametrize(
    ("raw", "schema", "problem"),
    [
        ('{"command": ', BASH, "the arguments are not valid JSON"),
        ("[1, 2]", BASH, "the arguments must be a JSON object, not array"),
        ("{}", BASH, "missing required argument 'command'"),
        ('{"command": 1}', BASH, "argument 'command' must be a string, not integer"),
        (
            '{"command": "ls", "timeout": "5"}',
            BASH,
            "argument 'timeout' must be a number, not string",
        ),
        (
            '{"command": "ls", "timeout": true}',
            BASH,
            "argument 'timeout' must be a number, not boolean",
        ),
        ('{"command": "ls", "timeout": -1}', BASH, "argument 'timeout' must be more than 0"),
        (
            '{"command": "ls", "cwd": "/"}',
            BASH,
            "unknown argument 'cwd' (known: command, timeout, background)",
        ),
        ('{"steps": [{"step": "a"}]}', PLAN, "missing required argument 'steps[0].status'"),
        (
            '{"steps": [{"step": "a", "status": "done"}]}',
            PLAN,
            "argument 'steps[0].status' must be one of",
        ),
    ],
)
def test_each_problem_is_named_in_one_sentence(raw, schema, problem):
    result = parse_arguments(raw, schema)
    assert isinstance(result, Failure)
    assert result.failure().startswith(problem)


def test_good_arguments_pass_through():
    assert parse_arguments('{"command": "ls", "timeout": 5}', BASH) == Success(
        {"command": "ls", "timeout": 5}
    )
    assert parse_arguments("", {"type": "object"}) == Success({})


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (
            ToolCall("c1", "bash", '{"command": "ls'),
            "bad arguments for bash: the arguments are not valid JSON",
        ),
        (
            ToolCall("c1", "rm_rf", "{}"),
            "unknown tool 'rm_rf'; the tools are: "
            "bash, update_plan, ask, process_output, process_stop, agent",
        ),
        (
            ToolCall("c1", "bash", "{}"),
            "bad arguments for bash: missing required argument 'command'",
        ),
        (ToolCall("c1", "bash", '{"command": ["ls"]}'), "must be a string, not array"),
        (ToolCall("c1", "bash", '{"command": "ls", "timeout": NaN}'), "NaN is not a JSON"),
        (ToolCall("c1", "bash", '{"command": "ls", "timeout": -0.0}'), "must be more than 0"),
        (ToolCall("c1", "bash", '{"command": ' + "[" * 5000 + "]" * 5000 + "}"), "nested deeper"),
    ],
)
async def test_bad_model_output_becomes_a_tool_error_and_the_loop_goes_on(rig, call, says):
    r = rig(
        [R((), (call,)), R.calling("bash", command="ls"), R.saying("fixed")], {"ls": FakeProcess()}
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    error = r.model.requests[1].messages[-1]
    assert error.role == "tool" and error.is_error
    assert says in error.text
    assert [s.command for s in r.runner.specs] == ["ls"]


@pytest.mark.parametrize(
    "raw",
    [
        '{"command": "sleep 9", "timeout": NaN}',
        '{"command": "sleep 9", "timeout": Infinity}',
        '{"command": "sleep 9", "timeout": -Infinity}',
        '{"command": "sleep 9", "timeout": 0}',
        '{"command": "sleep 9", "timeout": -0}',
        '{"command": "sleep 9", "timeout": -0.0}',
    ],
)
def test_a_deadline_that_is_no_number_or_not_above_zero_is_refused(raw):
    assert isinstance(parse_arguments(raw, BASH), Failure)


@pytest.mark.parametrize("depth", [65, 1_000, 100_000])
def test_arguments_nested_too_deep_are_refused_without_a_recursion_error(depth):
    raw = '{"command": "ls", "x": ' + "[" * depth + "]" * depth + "}"
    result = parse_arguments(raw, {"type": "object"})
    assert result.failure() == "the arguments are not valid JSON (nested deeper than 64 levels)"


def test_arguments_nested_within_the_limit_are_kept_whole_and_in_order():
    raw = '{"b": [[{"c": 1}]], "a": "x", "d": ' + "[" * 60 + "]" * 60 + "}"
    parsed = load_json(raw)
    assert isinstance(parsed, Success)
    assert list(parsed.unwrap()) == ["b", "a", "d"]
    assert parsed.unwrap()["b"] == [[{"c": 1}]]


def test_lone_surrogates_in_arguments_become_replacement_characters():
    raw = '{"command": "echo \\ud800", "\\udc00key": ["\\udbff"]}'
    value = load_json(raw).unwrap()
    assert value == {"command": "echo \ufffd", "\ufffdkey": ["\ufffd"]}
    assert json.dumps(value, ensure_ascii=False).encode("utf-8")  # writable at last


def test_a_number_longer_than_python_reads_is_not_json_it_can_use() -> None:
    from treadle.domain.rules.arguments import load_json

    assert "4300" in str(load_json("1" * 4320).failure())


def test_arguments_that_are_json_null_are_an_error_the_model_reads_not_a_crash() -> None:
    from treadle.domain.rules.arguments import parse_arguments

    result = parse_arguments("null", {"type": "object", "properties": {}})
    assert result.failure() == "the arguments must be a JSON object, not null"
