"""A server's form, asked one field at a time: which fields a schema describes, the
question for each, and how a typed answer reads.

Example::

    >>> [f.kind.value for f in form_fields({"properties": {"n": {"type": "integer"}}})]
    ['integer']
    >>> read_field(FormField("n", FieldKind.INTEGER), "42")
    (42, '')
    >>> read_action("y")
    'accept'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from treadle.domain.values.server_requests import FieldKind, FormAction, FormField, FormValue

YES = frozenset({"y", "yes", "true", "1", "on"})
NO = frozenset({"n", "no", "false", "0", "off"})
_KINDS = {
    "string": FieldKind.STRING,
    "number": FieldKind.NUMBER,
    "integer": FieldKind.INTEGER,
    "boolean": FieldKind.BOOLEAN,
}
ATTEMPTS = 3
"""How often a field is asked again after an answer that does not read."""


CHOICES_SHOWN = 30
"""Choices a field's question lists (the others are chosen by value or number): a
server may send an enum of any length."""
LABEL_SHOWN = 80
"""Characters of a choice's label shown in its question."""


def _cut(label: str) -> str:
    return label if len(label) <= LABEL_SHOWN else label[: LABEL_SHOWN - 1] + "…"


def form_fields(schema: Mapping[str, Any]) -> tuple[FormField, ...]:
    """The fields of a form's ``requestedSchema`` (flat: its top-level properties), in
    order. A property of a kind no form holds (an object) is read as a string."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ()
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    fields = []
    for key, value in properties.items():
        if isinstance(key, str) and isinstance(value, Mapping):
            fields.append(_field(key, value, key in needed))
    return tuple(fields)


def _field(key: str, spec: Mapping[str, Any], required: bool) -> FormField:
    title = str(spec.get("title") or "")
    description = str(spec.get("description") or "")
    default = spec.get("default")
    kind = _KINDS.get(str(spec.get("type")), FieldKind.STRING)
    choices, labels = _choices(spec)
    if spec.get("type") == "array":
        items = spec.get("items")
        choices, labels = _choices(items) if isinstance(items, Mapping) else ((), ())
        kind = FieldKind.CHOICES
    elif choices:
        kind = FieldKind.CHOICE
    return FormField(
        key,
        kind,
        title,
        description,
        required,
        default if _is_value(default) else None,
        choices,
        labels,
        _number(spec.get("minimum")),
        _number(spec.get("maximum")),
    )


def _choices(spec: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The values a choice may take and their labels: ``enum`` (with the legacy
    ``enumNames``), or ``oneOf``/``anyOf`` of ``{const, title}``."""
    enum = spec.get("enum")
    if isinstance(enum, list):
        values = tuple(str(value) for value in enum)
        names = spec.get("enumNames")
        labels = tuple(str(n) for n in names) if isinstance(names, list) else values
        return values, labels if len(labels) == len(values) else values
    options = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(options, list):
        pairs = [
            (str(option["const"]), str(option.get("title") or option["const"]))
            for option in options
            if isinstance(option, Mapping) and "const" in option
        ]
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    return (), ()


def _is_value(value: object) -> bool:
    if isinstance(value, list):
        return all(isinstance(item, str) for item in value)
    return isinstance(value, str | int | float | bool)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def field_question(field: FormField) -> str:
    """The question for one field: its title, what it is, its choices, its default."""
    name = field.title or field.key
    parts = [name]
    if field.description:
        parts.append(f"— {field.description}")
    kind = {
        FieldKind.BOOLEAN: "yes/no",
        FieldKind.NUMBER: "a number",
        FieldKind.INTEGER: "a whole number",
        FieldKind.STRING: "text",
    }.get(field.kind)
    if field.kind in (FieldKind.CHOICE, FieldKind.CHOICES):
        listing = field.labels[:CHOICES_SHOWN]
        listed = ", ".join(
            f"{index}) {_cut(label)}" for index, label in enumerate(listing, start=1)
        )
        if len(field.labels) > CHOICES_SHOWN:
            listed += f", … ({len(field.labels) - CHOICES_SHOWN} more: type one's value or number)"
        kind = ("one of " if field.kind is FieldKind.CHOICE else "some of, by commas: ") + listed
    if field.minimum is not None or field.maximum is not None:
        low = "" if field.minimum is None else f"{field.minimum:g}"
        high = "" if field.maximum is None else f"{field.maximum:g}"
        kind = f"{kind}, {low}…{high}"
    parts.append(f"({kind}{', required' if field.required else ''})")
    if field.default is not None:
        shown = ", ".join(field.default) if isinstance(field.default, list) else field.default
        parts.append(f"[Enter: {shown}]")
    return " ".join(str(part) for part in parts)


def read_field(field: FormField, text: str) -> tuple[FormValue | None, str]:
    """The value a typed answer gives the field, or None and why it does not read.
    An empty answer gives the default, nothing for a field that is not required
    (``(None, "")``), and a problem for one that is."""
    typed = text.strip()
    if not typed:
        if field.default is not None:
            return field.default, ""
        return None, "an answer is required" if field.required else ""
    match field.kind:
        case FieldKind.BOOLEAN:
            if typed.lower() in YES:
                return True, ""
            if typed.lower() in NO:
                return False, ""
            return None, "answer yes or no"
        case FieldKind.NUMBER | FieldKind.INTEGER:
            return _read_number(field, typed)
        case FieldKind.CHOICE:
            chosen = _choice(field, typed)
            return (chosen, "") if chosen is not None else (None, _not_a_choice(field))
        case FieldKind.CHOICES:
            picked = [_choice(field, part) for part in typed.split(",") if part.strip()]
            if any(value is None for value in picked) or not picked:
                return None, _not_a_choice(field)
            return [value for value in picked if value is not None], ""
    return typed, ""


def _read_number(field: FormField, typed: str) -> tuple[FormValue | None, str]:
    try:
        number = float(typed)
    except ValueError:
        return None, "answer with a number"
    if not math.isfinite(number):
        return None, "answer with a number"
    if field.kind is FieldKind.INTEGER and not number.is_integer():
        return None, "answer with a whole number"
    if field.minimum is not None and number < field.minimum:
        return None, f"at least {field.minimum:g}"
    if field.maximum is not None and number > field.maximum:
        return None, f"at most {field.maximum:g}"
    return (int(number) if field.kind is FieldKind.INTEGER else number), ""


def _choice(field: FormField, typed: str) -> str | None:
    """A choice by its number in the list, its value or its label (any case)."""
    typed = typed.strip()
    if typed.isdigit() and 1 <= int(typed) <= len(field.choices):
        return field.choices[int(typed) - 1]
    for value, label in zip(field.choices, field.labels, strict=False):
        if typed.lower() in (value.lower(), label.lower()):
            return value
    return None


def _not_a_choice(field: FormField) -> str:
    return f"choose from 1 to {len(field.choices)}"


def read_action(text: str | None) -> FormAction:
    """The person's first answer to a server's question: yes fills the form in (or
    visits the address), no declines it, and anything else dismisses it. Nobody to
    answer (None: a headless run) declines."""
    if text is None:
        return "decline"
    typed = text.strip().lower()
    if typed in YES or typed == "accept":
        return "accept"
    if typed in NO or typed == "decline":
        return "decline"
    return "cancel"


def form_schema(fields: Sequence[FormField]) -> dict[str, Any]:
    """The flat JSON schema of ``fields``: the form handed whole to a client that shows
    forms itself (an editor over ACP), as :func:`form_fields` read it."""
    properties: dict[str, Any] = {}
    for field in fields:
        spec: dict[str, Any]
        if field.kind is FieldKind.CHOICE:
            spec = {"type": "string", "enum": list(field.choices)}
        elif field.kind is FieldKind.CHOICES:
            spec = {"type": "array", "items": {"type": "string", "enum": list(field.choices)}}
        else:
            spec = {"type": field.kind.value}
        if field.kind in (FieldKind.NUMBER, FieldKind.INTEGER):
            for name, bound in (("minimum", field.minimum), ("maximum", field.maximum)):
                if bound is not None:
                    spec[name] = bound
        if field.title:
            spec["title"] = field.title
        if field.description:
            spec["description"] = field.description
        if field.default is not None:
            spec["default"] = field.default
        properties[field.key] = spec
    required = [field.key for field in fields if field.required]
    return {
        "type": "object",
        "properties": properties,
        **({"required": required} if required else {}),
    }


def read_content(
    fields: Sequence[FormField], content: Mapping[str, object]
) -> dict[str, FormValue]:
    """What a client sent back for the form, kept to its fields and their kinds: a
    value of another kind, or not one of a choice's, is left out."""
    kept: dict[str, FormValue] = {}
    for field in fields:
        value = content.get(field.key)
        if _of_kind(field, value):
            kept[field.key] = value  # type: ignore[assignment]
    return kept


def _of_kind(field: FormField, value: object) -> bool:
    match field.kind:
        case FieldKind.STRING:
            return isinstance(value, str)
        case FieldKind.CHOICE:
            return isinstance(value, str) and value in field.choices
        case FieldKind.CHOICES:
            return isinstance(value, list) and all(v in field.choices for v in value)
        case FieldKind.BOOLEAN:
            return isinstance(value, bool)
        case FieldKind.INTEGER:
            return isinstance(value, int) and not isinstance(value, bool)
        case FieldKind.NUMBER:
            number = _number(value)
            return number is not None and math.isfinite(number)
    return False
