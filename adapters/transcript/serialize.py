"""Turn events to JSON-ready dicts and back: the transcript's and ``--json``'s format.

Every record has ``"type"`` (the event's name in snake case) and the event's fields;
nested values (messages, tool calls, usage, outcomes) are plain objects. Fields that
came later and are often empty (a message's ``reasoning``, a turn's ``cost``, a tool's
``preview``, a sub-agent's ``line``) are left out while they hold nothing, so records of
runs that do not use them stay as they were. Records written before a field said what
an old one's words said (a call's ``ending``, a sub-agent's) are read back from the words.

Example::

    >>> event_to_record(AnswerDelta("Hi"))
    {'type': 'answer_delta', 'text': 'Hi', 'agent': ''}
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, get_args, get_origin

from treadle.domain.values import conversation, events, model, outcome, tools
from treadle.domain.values.events import TurnEvent
from treadle.domain.values.tools import ToolEnding

_EVENT_TYPES: tuple[type[Any], ...] = get_args(TurnEvent)
# Left out of a record while they hold their default; read back as that default.
_QUIET_WHEN_EMPTY: dict[str, object] = {
    "reasoning": (),
    "cost": None,
    "preview": "",
    "cut_at": 0,
    "short_of": 0,
    "line": "",
    "value": None,
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


EVENT_BY_NAME: dict[str, type[Any]] = {_snake(kind.__name__): kind for kind in _EVENT_TYPES}
NAME_OF_EVENT: dict[type[Any], str] = {kind: name for name, kind in EVENT_BY_NAME.items()}


def event_to_record(event: TurnEvent) -> dict[str, Any]:
    record: dict[str, Any] = {"type": NAME_OF_EVENT[type(event)]}
    record.update(_plain(event))
    return record


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(item)
            for f in dataclasses.fields(value)
            if _shown(f.name, item := getattr(value, f.name))
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def _shown(name: str, item: Any) -> bool:
    return name not in _QUIET_WHEN_EMPTY or item != _QUIET_WHEN_EMPTY[name]


def record_to_event(record: Mapping[str, Any]) -> TurnEvent:
    """Rebuild an event; raises ValueError for an unknown type or a field of the wrong type
    (a message that is a number, ``tool_calls`` an object), naming the field."""
    if not isinstance(record, Mapping):
        raise ValueError(f"a record must be an object, not {_kind_of(record)}")
    kind = EVENT_BY_NAME.get(str(record.get("type")))
    if kind is None:
        raise ValueError(f"unknown event type {record.get('type')!r}")
    fields = {k: v for k, v in record.items() if k != "type"}
    if kind is events.ToolFinished and "ending" not in fields:
        fields["ending"] = old_tool_ending(fields.get("status"), fields.get("is_error"))
    if kind is events.SubAgentFinished and fields.get("ending") not in _SUB_AGENT_ENDINGS:
        fields |= old_sub_agent_ending(fields.get("ending"))
    event = typing.cast(TurnEvent, _build(kind, fields, NAME_OF_EVENT[kind]))
    if isinstance(event, events.ContextPruned) and len(event.positions) != len(event.results):
        # Each stub goes in its place: a record that pairs them otherwise was edited.
        raise ValueError(
            f"context_pruned: {len(event.positions)} positions for {len(event.results)} results"
        )
    return event


_OLD_ENDINGS = frozenset(ToolEnding) - {ToolEnding.FAILED}


def old_tool_ending(status: object, is_error: object) -> str:
    """How a call ended, read from a record written before ``ending`` was: its line was
    the ending itself where it said one (``refused``, ``interrupted``, ``deadline``…),
    else the call finished, or failed when it was an error."""
    if isinstance(status, str) and status in _OLD_ENDINGS:
        return status
    return ToolEnding.FAILED if is_error is True else ToolEnding.FINISHED


_SUB_AGENT_ENDINGS = frozenset(events.SubAgentEnding)


def old_sub_agent_ending(ending: object) -> dict[str, object]:
    """A sub-agent's ending in a record written when it was the outcome's line for one
    that failed or ended its caller: the kind the line names, and the line."""
    if not isinstance(ending, str):
        return {}  # not a line either: the record is damaged, and reading it says so
    failed = ending.startswith("Turn failed")
    kind = events.SubAgentEnding.FAILED if failed else events.SubAgentEnding.ENDS_CALLER
    return {"ending": kind.value, "line": ending}


def _kind_of(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true or false"}
    names |= {int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


@functools.cache
def _field_types(kind: type[Any]) -> dict[str, Any]:
    # Resolving annotations is slow, and resume reads every event of a session.
    return typing.get_type_hints(
        kind, vars(conversation) | vars(model) | vars(outcome) | vars(tools) | vars(events)
    )


def _build(kind: Any, value: Any, where: str) -> Any:
    """``value`` (from JSON) as ``kind``; ValueError saying where it is not."""
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: must be an object, not {_kind_of(value)}")
        hints = _field_types(kind)
        unknown = sorted(set(value) - set(hints))
        if unknown:
            raise ValueError(f"{where}: unknown field {unknown[0]!r}")
        built = {name: _build(hints[name], item, f"{where}.{name}") for name, item in value.items()}
        try:
            return kind(**built)
        except TypeError as error:  # a required field is missing
            raise ValueError(f"{where}: {error}") from None
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            raise ValueError(f"{where}: {value!r} is not a known value") from None
    origin, arguments = get_origin(kind), get_args(kind)
    if origin is tuple:
        if not isinstance(value, list):
            raise ValueError(f"{where}: must be a list, not {_kind_of(value)}")
        return tuple(_build(arguments[0], item, f"{where}[{i}]") for i, item in enumerate(value))
    if origin is typing.Literal:
        if value not in arguments:
            raise ValueError(f"{where}: {value!r} is not one of {', '.join(map(repr, arguments))}")
        return value
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in arguments:
            return None
        options = [option for option in arguments if option is not type(None)]
        return _build(options[0], value, where) if len(options) == 1 else value
    expected = _SCALARS.get(kind)
    if expected is not None and (
        isinstance(value, bool) is not (kind is bool) or not isinstance(value, expected)
    ):
        raise ValueError(f"{where}: must be {_SCALAR_NAMES[kind]}, not {_kind_of(value)}")
    if kind is float:
        try:
            return float(value)
        except OverflowError:  # a whole number with hundreds of digits
            raise ValueError(f"{where}: {_kind_of(value)} too large for a number") from None
    return value


_SCALARS: dict[Any, tuple[type, ...]] = {
    str: (str,),
    int: (int,),
    float: (int, float),
    bool: (bool,),
}
_SCALAR_NAMES = {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}
