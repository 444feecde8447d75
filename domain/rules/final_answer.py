"""A final answer that must be one JSON value valid against a schema (``--output-schema``).

The answer's text is read as JSON (a fenced ```json block around it is let pass: models
write one); what is wrong with it is said in the one corrective request the turn makes.

Example::

    >>> read_value('```json\\n{"ok": true}\\n```')
    ({'ok': True}, '')
    >>> read_value("Done!")[1]
    'the answer is not JSON: Expecting value at line 1, column 1'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

SHOWN_ERRORS = 10
"""Validation errors the corrective request shows at most."""


def read_value(text: str) -> tuple[object, str]:
    """The JSON value the answer is, and "" — or None and why it is none."""
    body = _unfenced(text.strip())
    try:
        return json.loads(body), ""
    except json.JSONDecodeError as error:
        return (
            None,
            f"the answer is not JSON: {error.msg} at line {error.lineno}, column {error.colno}",
        )
    except RecursionError:
        return None, "the answer is not JSON: nested too deep"


def _unfenced(text: str) -> str:
    if text.startswith("```") and text.endswith("```") and "\n" in text:
        return text[text.index("\n") + 1 : -3].strip()
    return text


def schema_instructions(schema: Mapping[str, object]) -> str:
    """What the system prompt says of the final answer, the schema in full."""
    return (
        "# The final answer\n\n"
        "When the work is done, answer with one JSON value and nothing else (no prose, no "
        "code fence), valid against this JSON Schema (draft 2020-12):\n\n"
        + json.dumps(schema, ensure_ascii=False, indent=1)
    )


def correction_request(errors: Sequence[str]) -> str:
    """The one corrective request: what is wrong, and what is wanted instead."""
    shown = "\n".join(f"- {error}" for error in errors[:SHOWN_ERRORS])
    more = len(errors) - SHOWN_ERRORS
    if more > 0:
        shown += f"\n- … and {more} more"
    return (
        "Your final answer is not a JSON value valid against the output schema:\n"
        f"{shown}\n"
        "Answer again with only the conforming JSON value."
    )
