"""Turn events to JSON-ready dicts and back: the transcript's and ``--json``'s format.

Every record has ``"type"`` (the event's name in snake case) and the event's fields;
nested values (messages, tool calls, usage, outcomes) are plain objects.

Example::

    >>> event_to_record(AnswerDelta("Hi"))
    {'type': 'answer_delta', 'text': 'Hi', 'agent': ''}
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import typing
from collections.abc import Mapping
from typing import Any, get_args, get_origin

from treadle.domain.values import conversation, events, model, outcome
from treadle.domain.values.events import TurnEvent

_EVENT_TYPES: tuple[type[Any], ...] = get_args(TurnEvent)


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
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def record_to_event(record: Mapping[str, Any]) -> TurnEvent:
    """Rebuild an event; raises ValueError for an unknown type or bad fields."""
    kind = EVENT_BY_NAME.get(str(record.get("type")))
    if kind is None:
        raise ValueError(f"unknown event type {record.get('type')!r}")
    fields = {k: v for k, v in record.items() if k != "type"}
    return typing.cast(TurnEvent, _build(kind, fields))


@functools.cache
def _field_types(kind: type[Any]) -> dict[str, Any]:
    # Resolving annotations is slow, and resume reads every event of a session.
    return typing.get_type_hints(
        kind, vars(conversation) | vars(model) | vars(outcome) | vars(events)
    )


def _build(kind: Any, value: Any) -> Any:
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        hints = _field_types(kind)
        try:
            return kind(**{name: _build(hints[name], item) for name, item in value.items()})
        except (TypeError, KeyError) as error:
            raise ValueError(f"bad fields for {kind.__name__}: {error}") from None
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(value)
    if get_origin(kind) is tuple:
        item_kind = get_args(kind)[0]
        return tuple(_build(item_kind, item) for item in value)
    for option in get_args(kind):  # Optional[X]: build X when a value is there
        if option is not type(None) and value is not None and dataclasses.is_dataclass(option):
            return _build(option, value)
    return value
