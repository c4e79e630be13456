"""An MCP server's form (elicitation, form mode), read from its schema and typed in field by field.

A server that asks for input sends a `requestedSchema`: an object of primitive properties,
kept flat by MCP so that any client can draw it. `fields` reads it into `Field`s, one per
property in the server's order: text (with a `format`: email, uri, date, date-time; and
`minLength`/`maxLength`), numbers and whole numbers (`minimum`/`maximum`), yes/no, one choice
(`enum`, with `enumNames`, or `oneOf` of `const`/`title`), several choices (an array whose
`items` has `enum` or `anyOf`; `minItems`/`maxItems`).

`Field.parse` turns what a person typed into the value sent, or raises `Invalid` saying what
to type instead, so the person is asked the field again rather than the server refusing the
whole answer. `Form` walks the fields one at a time and keeps the values so far; `chat` (its
input box) and `call`/`run` (a line each) drive it the same way. Nothing here draws: the
words of each field are here, how they look is `_elicitation`'s.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import urlsplit

__all__ = ["Field", "Form", "FormUnreadable", "Invalid", "Option", "fields"]

Kind = Literal["text", "number", "integer", "boolean", "choice", "choices"]
"""How a field is typed in: free text, a number, a whole number, y/n, one or several choices."""

_YES = frozenset({"y", "yes", "true", "1"})
_NO = frozenset({"n", "no", "false", "0"})
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_FORMATS: Mapping[str, str] = {
    "email": "an email address, like name@example.com",
    "uri": "a URL, like https://example.com",
    "date": "a date, YYYY-MM-DD",
    "date-time": "a date and time with its offset, like 2025-06-01T09:30:00Z",
}


class FormUnreadable(ValueError):
    """The server's schema is not a flat form of the kinds MCP allows: it cannot be asked."""


class Invalid(ValueError):
    """What was typed does not fit the field; the message says what to type instead."""


@dataclass(frozen=True, slots=True)
class Option:
    """One choice of a field: the value sent and the words shown (the server's title)."""

    value: Any
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """One property of the form, with everything needed to ask it and check the answer."""

    name: str
    """The property's key: what the value is sent as."""
    kind: Kind
    title: str = ""
    description: str = ""
    required: bool = False
    has_default: bool = False
    default: Any = None
    options: tuple[Option, ...] = ()
    """The choices of a `choice` or `choices` field, in the server's order."""
    format: str = ""
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None

    @property
    def label(self) -> str:
        """The field as a person reads it: its title, else its key."""
        return self.title or self.name

    def hint(self) -> str:
        """What to type, in a few words: `y or n`, `a whole number from 1 to 100`."""
        if self.kind == "boolean":
            return "y or n"
        if self.kind == "choice":
            return f"a number from 1 to {len(self.options)}"
        if self.kind == "choices":
            low, high = self.min_items or 0, self.max_items or len(self.options)
            many = f"{low} to {high}" if low != high else str(low)
            if low == 0 and high >= len(self.options):
                many = "any"
            return f"numbers from the list, separated by commas ({many} of them)"
        if self.kind in ("number", "integer"):
            what = "a whole number" if self.kind == "integer" else "a number"
            return what + _range(self.minimum, self.maximum, _number)
        what = _FORMATS.get(self.format, "text")
        return what + _range(self.min_length, self.max_length, _characters)

    def parse(self, typed: str, current: Any = None, *, has_current: bool = False) -> Any:
        """The value `typed` gives this field; `LEFT_OUT` for nothing at all.

        An empty answer keeps `current` (the value given before, or the default) when there
        is one, leaves an optional field out, and is refused for a required one.

        Raises:
            Invalid: It does not fit the field; the message says what would.
        """
        text = typed.strip()
        if not text:
            if has_current:
                return current
            if self.required:
                raise Invalid(f"{self.label} is required: type {self.hint()}")
            return LEFT_OUT
        if self.kind == "boolean":
            return _boolean(text)
        if self.kind == "choice":
            return self._option(text).value
        if self.kind == "choices":
            return self._options(text)
        if self.kind in ("number", "integer"):
            return self._number(text)
        return self._text(text)

    def typed(self, value: Any) -> str:
        """The text that `parse` reads back as `value` (what an input box is filled with)."""
        if self.kind == "boolean":
            return "y" if value else "n"
        if self.kind == "choice":
            return str(self._position(value) or "")
        if self.kind == "choices":
            values = cast(Sequence[Any], value) if isinstance(value, list | tuple) else ()
            found = (self._position(v) for v in values)
            return ",".join(str(i) for i in found if i)
        return str(value)

    def shown(self, value: Any) -> str:
        """`value` as the person reads it: a choice's words, `yes`/`no`."""
        if self.kind == "boolean":
            return "yes" if value else "no"
        if self.kind == "choice":
            return self._label(value)
        if self.kind == "choices":
            values = cast(Sequence[Any], value) if isinstance(value, list | tuple) else ()
            return ", ".join(self._label(v) for v in values)
        return str(value)

    # -- checks ------------------------------------------------------------------------------

    def _option(self, text: str) -> Option:
        if text.isdigit() and 1 <= int(text) <= len(self.options):
            return self.options[int(text) - 1]
        # The value or the words as sent first, then either whatever their case.
        for fold in (False, True):
            for o in self.options:
                if _same(str(o.value), text, fold) or _same(o.label, text, fold):
                    return o
        raise Invalid(f"{text!r} is not one of the choices: type {self.hint()}")

    def _options(self, text: str) -> list[Any]:
        picked: list[Any] = []
        for part in (p.strip() for p in text.split(",")):
            if part:
                value = self._option(part).value
                if value not in picked:
                    picked.append(value)
        if self.min_items is not None and len(picked) < self.min_items:
            raise Invalid(f"choose at least {self.min_items}: type {self.hint()}")
        if self.max_items is not None and len(picked) > self.max_items:
            raise Invalid(f"choose at most {self.max_items}: type {self.hint()}")
        return picked

    def _number(self, text: str) -> int | float:
        try:
            number: int | float = int(text)
        except ValueError:
            if self.kind == "integer":
                raise Invalid(f"{text!r} is not a whole number: type {self.hint()}") from None
            try:
                number = float(text)
            except ValueError:
                raise Invalid(f"{text!r} is not a number: type {self.hint()}") from None
            if not math.isfinite(number):
                raise Invalid(f"{text!r} is not a number: type {self.hint()}") from None
        if self.minimum is not None and number < self.minimum:
            raise Invalid(f"{text} is less than {_number(self.minimum)}: type {self.hint()}")
        if self.maximum is not None and number > self.maximum:
            raise Invalid(f"{text} is more than {_number(self.maximum)}: type {self.hint()}")
        return number

    def _text(self, text: str) -> str:
        if self.min_length is not None and len(text) < self.min_length:
            raise Invalid(f"it is shorter than {self.min_length} characters: type {self.hint()}")
        if self.max_length is not None and len(text) > self.max_length:
            raise Invalid(f"it is longer than {self.max_length} characters: type {self.hint()}")
        if not _fits_format(self.format, text):
            raise Invalid(f"{text!r} is not {_FORMATS[self.format]}")
        return text

    def _position(self, value: Any) -> int | None:
        return next((i + 1 for i, o in enumerate(self.options) if o.value == value), None)

    def _label(self, value: Any) -> str:
        return next((o.label for o in self.options if o.value == value), str(value))


class _LeftOut:
    """The answer to an optional field left empty: nothing is sent for it."""

    def __repr__(self) -> str:
        return "LEFT_OUT"


LEFT_OUT: Any = _LeftOut()


@dataclass(slots=True)
class Form:
    """The fields of one form, the one being asked, and the values given so far."""

    fields: tuple[Field, ...]
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    """What is sent, by property key (an optional field left empty is not in it)."""
    index: int = 0
    """The field being asked; `len(fields)` once all are answered."""

    @property
    def current(self) -> Field | None:
        """The field being asked, or None when every field has its answer."""
        return self.fields[self.index] if self.index < len(self.fields) else None

    @property
    def required(self) -> int:
        """How many fields must be filled in."""
        return sum(f.required for f in self.fields)

    def prefill(self, f: Field) -> str:
        """What the field's input starts with: the answer given before, else the default."""
        if f.name in self.values:
            return f.typed(self.values[f.name])
        return f.typed(f.default) if f.has_default else ""

    def answer(self, typed: str) -> None:
        """Take what was typed for the current field and move on to the next.

        Raises:
            Invalid: It does not fit; the same field is asked again.
        """
        f = self.current
        assert f is not None, "every field has its answer"
        has, before = (True, self.values[f.name]) if f.name in self.values else (False, None)
        if not has and f.has_default:
            has, before = True, f.default
        value = f.parse(typed, before, has_current=has)
        if value is LEFT_OUT:
            self.values.pop(f.name, None)
        else:
            self.values[f.name] = value
        self.index += 1

    def again(self) -> None:
        """Ask every field once more, each starting from the answer it has."""
        self.index = 0

    def summary(self) -> list[tuple[str, str]]:
        """What is sent, as (field, value) the person reads, in the form's order."""
        return [
            (f.label, f.shown(self.values[f.name])) for f in self.fields if f.name in self.values
        ]


# -- reading the schema ------------------------------------------------------------------------


def fields(schema: Mapping[str, Any]) -> tuple[Field, ...]:
    """The fields of a form's `requestedSchema`, in the order the server listed them.

    Raises:
        FormUnreadable: It is not a flat object of the property kinds MCP allows.
    """
    properties = schema.get("properties")
    if schema.get("type", "object") != "object" or not isinstance(properties, Mapping):
        raise FormUnreadable("it is not an object with properties")
    listed: Any = schema.get("required") or []
    if not isinstance(listed, list):
        raise FormUnreadable("its `required` is not a list")
    required = {str(k) for k in cast(list[Any], listed)}
    props = cast(Mapping[str, Any], properties)
    return tuple(_field(str(k), v, str(k) in required) for k, v in props.items())


def _field(name: str, prop: Any, required: bool) -> Field:
    if not isinstance(prop, Mapping):
        raise FormUnreadable(f"property {name!r} is not an object")
    p = cast(Mapping[str, Any], prop)
    common: dict[str, Any] = {
        "name": name,
        "title": _str(p.get("title")),
        "description": _str(p.get("description")),
        "required": required,
        "has_default": "default" in p,
        "default": p.get("default"),
    }
    kind = p.get("type")
    options = _choices(p)
    if kind == "array":
        items = _choices(cast(Mapping[str, Any], p.get("items") or {}))
        if not items:
            raise FormUnreadable(f"property {name!r} is a list of something other than choices")
        return Field(
            kind="choices",
            options=items,
            min_items=_int(p.get("minItems")),
            max_items=_int(p.get("maxItems")),
            **common,
        )
    if options:
        return Field(kind="choice", options=options, **common)
    if kind == "boolean":
        return Field(kind="boolean", **common)
    if kind in ("number", "integer"):
        return Field(
            kind=kind, minimum=_float(p.get("minimum")), maximum=_float(p.get("maximum")), **common
        )
    if kind == "string":
        fmt = _str(p.get("format"))
        return Field(
            kind="text",
            format=fmt if fmt in _FORMATS else "",
            min_length=_int(p.get("minLength")),
            max_length=_int(p.get("maxLength")),
            **common,
        )
    raise FormUnreadable(f"property {name!r} has a type a form cannot ask ({kind!r})")


def _choices(p: Mapping[str, Any]) -> tuple[Option, ...]:
    """The choices of an `enum` (with `enumNames`), or of a `oneOf`/`anyOf` of `const`s."""
    enum = p.get("enum")
    if isinstance(enum, list) and enum:
        values = cast(list[Any], enum)
        names = p.get("enumNames")
        labels = cast(list[Any], names) if isinstance(names, list) else []
        if len(labels) != len(values):
            labels = [str(v) for v in values]
        return tuple(Option(v, str(label)) for v, label in zip(values, labels, strict=True))
    for key in ("oneOf", "anyOf"):
        listed = p.get(key)
        if isinstance(listed, list) and listed:
            found: list[Option] = []
            for item in cast(list[Any], listed):
                if not isinstance(item, Mapping) or "const" not in item:
                    return ()
                one = cast(Mapping[str, Any], item)
                found.append(Option(one["const"], _str(one.get("title")) or str(one["const"])))
            return tuple(found)
    return ()


def _boolean(text: str) -> bool:
    word = text.casefold()
    if word in _YES:
        return True
    if word in _NO:
        return False
    raise Invalid(f"{text!r} is not yes or no: type y or n")


def _fits_format(fmt: str, text: str) -> bool:
    if fmt == "email":
        return _EMAIL.fullmatch(text) is not None
    if fmt == "uri":
        parts = urlsplit(text)
        return bool(_SCHEME.fullmatch(parts.scheme)) and bool(parts.netloc or parts.path)
    if fmt == "date":
        try:
            return _DATE.fullmatch(text) is not None and bool(dt.date.fromisoformat(text))
        except ValueError:
            return False
    if fmt == "date-time":
        try:
            # RFC 3339: a date, a time and an offset (`Z` or `+02:00`).
            return "T" in text.upper() and dt.datetime.fromisoformat(text).tzinfo is not None
        except ValueError:
            return False
    return True


def _same(a: str, b: str, fold: bool) -> bool:
    return a.casefold() == b.casefold() if fold else a == b


def _characters(n: float) -> str:
    return f"{_number(n)} characters"


def _range(low: float | None, high: float | None, say: Callable[[float], str]) -> str:
    if low is not None and high is not None:
        return f" from {_number(low)} to {say(high)}"
    if low is not None:
        return f", at least {say(low)}"
    if high is not None:
        return f", at most {say(high)}"
    return ""


def _number(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else str(n)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None
