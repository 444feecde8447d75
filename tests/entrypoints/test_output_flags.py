"""--output-schema and --output-last-message from the command line, on the scripted
model: the value lands in the file and in the turn_ended event; a non-conforming answer
gets one correction, then fails OutputInvalid with exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.processes import run_treadle, treadle_env, write_script

SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}


def schema_file(folder: Path) -> Path:
    path = folder / "answer.schema.json"
    path.write_text(json.dumps(SCHEMA), encoding="utf-8")
    return path


def test_a_corrected_answer_lands_in_the_last_message_file_and_the_json_event(
    tmp_path: Path,
) -> None:
    script = write_script(tmp_path, {"text": '{"count": "many"}'}, {"text": '{"count": 12}'})
    done = run_treadle(
        "--model", f"script:{script}", "--output-schema", str(schema_file(tmp_path)),
        "--json", "count",
        cwd=tmp_path, env=treadle_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["type"] for r in records].count("request_sent") == 2
    assert records[-1]["value"] == {"count": 12}


def test_the_value_is_written_to_the_last_message_file(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"text": '```json\n{"count": 12}\n```'})
    done = run_treadle(
        "--model", f"script:{script}", "--output-schema", str(schema_file(tmp_path)),
        "--output-last-message", "last.json", "--print", "count",
        cwd=tmp_path, env=treadle_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "last.json").read_text()) == {"count": 12}


def test_without_a_schema_the_last_message_file_holds_the_answer(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"text": "Twelve files."})
    done = run_treadle(
        "--model", f"script:{script}", "--output-last-message", "last.txt", "--print", "count",
        cwd=tmp_path, env=treadle_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "last.txt").read_text() == "Twelve files."


def test_an_answer_still_invalid_after_one_correction_fails_output_invalid(tmp_path: Path) -> None:
    script = write_script(
        tmp_path, {"text": "twelve"}, {"text": '{"count": 1.5}'}, {"text": '{"count": 1}'}
    )
    done = run_treadle(
        "--model", f"script:{script}", "--output-schema", str(schema_file(tmp_path)),
        "--output-last-message", "last.json", "--json", "count",
        cwd=tmp_path, env=treadle_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["type"] for r in records].count("request_sent") == 2
    assert (
        records[-1]["line"] == "Turn failed: OutputInvalid: $.count: 1.5 is not of type 'integer'"
    )
    assert "value" not in records[-1]
    assert not (tmp_path / "last.json").exists()


def test_a_schema_that_is_none_is_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": 5}', encoding="utf-8")
    script = write_script(tmp_path, {"text": "x"})
    done = run_treadle(
        "--model", f"script:{script}", "--output-schema", str(bad), "--print", "count",
        cwd=tmp_path, env=treadle_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "not a JSON Schema (draft 2020-12)" in done.stderr


def test_a_replay_of_a_corrected_answer_makes_the_same_correction(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"text": '{"count": "many"}'}, {"text": '{"count": 12}'})
    (tmp_path / "work").mkdir()
    schema = schema_file(tmp_path)
    env = treadle_env(tmp_path)
    done = run_treadle(
        "--model", f"script:{script}", "--output-schema", str(schema), "--session-id", "shaped",
        "--print", "count", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    transcript = tmp_path / "state" / "sessions" / "shaped" / "transcript.jsonl"
    replayed = run_treadle("replay", str(transcript), "--check", cwd=tmp_path / "work", env=env)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "2 requests, no divergence" in replayed.stdout


HOSTILE_SCHEMAS = {
    "a $ref to itself": '{"$ref": "#"}',
    "a loop of $refs": '{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": '
    '"#/$defs/a"}]}}, "$ref": "#/$defs/a"}',
    "a $ref to the web": '{"$ref": "https://schemas.example/answer.json"}',
    "a $ref to a local file": '{"properties": {"a": {"$ref": "file:///etc/passwd"}}}',
    "a $ref to nothing in the file": '{"properties": {"a": {"$ref": "#/$defs/missing"}}}',
    "nesting too deep to parse": '{"items": ' * 5000 + "{}" + "}" * 5000,
    "nesting too deep to check": '{"items": ' * 900 + "{}" + "}" * 900,
    "over the size a prompt can carry": json.dumps(
        {"type": "object", "description": "x" * 600_000}
    ),
}


@pytest.mark.parametrize("text", HOSTILE_SCHEMAS.values(), ids=HOSTILE_SCHEMAS.keys())
def test_a_hostile_schema_is_refused_in_one_line_before_any_request(
    tmp_path: Path, text: str
) -> None:
    """Refused when it is read (exit 2, one line), never an internal error mid-turn, and
    nothing is fetched for a $ref."""
    hostile = tmp_path / "hostile.json"
    hostile.write_text(text, encoding="utf-8")
    script = write_script(tmp_path, {"text": '{"a": [[1]]}'}, {"text": '{"a": 1}'})
    done = run_treadle(
        "--model", f"script:{script}", "--output-schema", str(hostile), "--print", "count",
        cwd=tmp_path, env=treadle_env(tmp_path), timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "output_schema" in done.stderr and "internal error" not in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_a_recursive_schema_that_descends_into_the_value_still_works(tmp_path: Path) -> None:
    tree = {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["children"],
    }
    schema = tmp_path / "tree.json"
    schema.write_text(json.dumps(tree), encoding="utf-8")
    script = write_script(tmp_path, {"text": '{"children": [{"children": []}]}'})
    done = run_treadle(
        "--model", f"script:{script}", "--output-schema", str(schema), "--print", "count",
        cwd=tmp_path, env=treadle_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_refs_to_embedded_ids_and_anchors_resolve_and_a_deep_answer_is_an_error() -> None:
    from treadle.adapters.output_schema import output_contract

    contract = output_contract({
        "$id": "https://x.test/root.json",
        "$defs": {
            "n": {"$id": "node.json", "properties": {"k": {"$ref": "#/$defs/leaf"}},
                  "$defs": {"leaf": {"type": "integer"}}},
            "a": {"$anchor": "pos", "minimum": 0},
        },
        "properties": {"node": {"$ref": "node.json"}, "p": {"$ref": "#pos"}},
    })  # fmt: skip
    assert contract.errors({"node": {"k": "x"}, "p": -1}) == [
        "$.node.k: 'x' is not of type 'integer'",
        "$.p: -1 is less than the minimum of 0",
    ]
    nested: list[object] = []
    for _ in range(3000):
        nested = [nested]
    tree = output_contract({"type": "array", "items": {"$ref": "#"}})
    assert tree.errors(nested) == ["$: nested too deep to check"]
