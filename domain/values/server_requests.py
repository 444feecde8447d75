"""What a tool's server may ask of treadle in the middle of a call: a question for the
person (an MCP elicitation, a form or an address to visit), or a completion from the
session's model (MCP sampling). Plain values; the rules are in
:mod:`treadle.domain.rules.elicitation` and :mod:`treadle.domain.rules.sampling`."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

FormAction = Literal["accept", "decline", "cancel"]
"""How the person answered: filled the form in (or agreed to visit the address),
said no, or dismissed it."""

FormValue = str | int | float | bool | list[str]


class FieldKind(enum.StrEnum):
    """The kinds of field a form may hold (the MCP schema's primitive types)."""

    STRING = "string"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    CHOICE = "choice"
    """One value out of a list (``enum``, or ``oneOf`` of ``const``)."""
    CHOICES = "choices"
    """Several values out of a list (an array of an enum)."""


@dataclass(frozen=True, slots=True)
class FormField:
    """One field of a form: its key, kind and what the person is told about it."""

    key: str
    kind: FieldKind
    title: str = ""
    description: str = ""
    required: bool = False
    default: FormValue | None = None
    choices: tuple[str, ...] = ()
    """The values a choice may take, as they are sent back."""
    labels: tuple[str, ...] = ()
    """What each choice is called on the screen (its value when it has no title)."""
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True, slots=True)
class FormRequest:
    """A server's question: a form of ``fields``, or an address (``url``) to visit."""

    server: str
    message: str
    fields: tuple[FormField, ...] = ()
    url: str = ""


@dataclass(frozen=True, slots=True)
class FormAnswer:
    """The person's answer; ``content`` only when a form was accepted."""

    action: FormAction
    content: Mapping[str, FormValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SamplingMessage:
    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """A server's request for a completion from the session's model."""

    server: str
    messages: tuple[SamplingMessage, ...]
    system: str = ""
    max_tokens: int = 1024


@dataclass(frozen=True, slots=True)
class SamplingReply:
    """The completion (``text``), or why there is none (``declined``: the policy or the
    person said no; otherwise the model failed)."""

    text: str = ""
    declined: bool = False
    why: str = ""
    stop_reason: Literal["endTurn", "maxTokens"] = "endTurn"
