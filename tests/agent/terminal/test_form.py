"""An MCP server's form read from its schema, and what a person types checked field by field.

The schema is server-everything's own (`trigger-elicitation-request`, copied from its source):
every kind of field MCP allows, titled and untitled choices, legacy `enumNames`, defaults. Each
check that refuses a value must say what to type instead, since the person is asked again.
"""

from __future__ import annotations

from typing import Any

import pytest

from handrail.agent._terminal._form import LEFT_OUT, Field, Form, FormUnreadable, Invalid, fields

EVERYTHING: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"title": "String", "type": "string", "description": "Your full, legal name"},
        "check": {
            "title": "Boolean",
            "type": "boolean",
            "description": "Agree to the terms and conditions",
        },
        "firstLine": {
            "title": "String with default",
            "type": "string",
            "description": "Favorite first line of a story",
            "default": "It was a dark and stormy night.",
        },
        "email": {
            "title": "String with email format",
            "type": "string",
            "format": "email",
            "description": "Your email address",
        },
        "homepage": {"type": "string", "format": "uri", "title": "String with uri format"},
        "birthdate": {"title": "String with date format", "type": "string", "format": "date"},
        "integer": {
            "title": "Integer",
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 42,
        },
        "number": {
            "title": "Number in range 1-1000",
            "type": "number",
            "minimum": 0,
            "maximum": 1000,
            "default": 3.14,
        },
        "untitledSingleSelectEnum": {
            "type": "string",
            "title": "Untitled Single Select Enum",
            "enum": ["Monica", "Rachel", "Joey", "Chandler", "Ross", "Phoebe"],
            "default": "Monica",
        },
        "untitledMultipleSelectEnum": {
            "type": "array",
            "title": "Untitled Multiple Select Enum",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["Guitar", "Piano", "Violin", "Drums", "Bass"]},
            "default": ["Guitar"],
        },
        "titledSingleSelectEnum": {
            "type": "string",
            "title": "Titled Single Select Enum",
            "oneOf": [
                {"const": "hero-1", "title": "Superman"},
                {"const": "hero-2", "title": "Green Lantern"},
                {"const": "hero-3", "title": "Wonder Woman"},
            ],
            "default": "hero-1",
        },
        "titledMultipleSelectEnum": {
            "type": "array",
            "title": "Titled Multiple Select Enum",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "fish-1", "title": "Tuna"},
                    {"const": "fish-2", "title": "Salmon"},
                    {"const": "fish-3", "title": "Trout"},
                ]
            },
            "default": ["fish-1"],
        },
        "legacyTitledEnum": {
            "type": "string",
            "title": "Legacy Titled Single Select Enum",
            "enum": ["pet-1", "pet-2", "pet-3", "pet-4", "pet-5"],
            "enumNames": ["Cats", "Dogs", "Birds", "Fish", "Reptiles"],
            "default": "pet-1",
        },
    },
    "required": ["name"],
}


def field(prop: dict[str, Any], *, required: bool = False) -> Field:
    """The one field of a form with property `x`."""
    schema = {"type": "object", "properties": {"x": prop}, "required": ["x"] if required else []}
    return fields(schema)[0]


def test_server_everythings_form_reads_into_one_field_per_property_in_order() -> None:
    read = fields(EVERYTHING)
    assert [(f.name, f.kind, f.required) for f in read] == [
        ("name", "text", True),
        ("check", "boolean", False),
        ("firstLine", "text", False),
        ("email", "text", False),
        ("homepage", "text", False),
        ("birthdate", "text", False),
        ("integer", "integer", False),
        ("number", "number", False),
        ("untitledSingleSelectEnum", "choice", False),
        ("untitledMultipleSelectEnum", "choices", False),
        ("titledSingleSelectEnum", "choice", False),
        ("titledMultipleSelectEnum", "choices", False),
        ("legacyTitledEnum", "choice", False),
    ]
    by = {f.name: f for f in read}
    # Titled choices show their titles and send their consts; legacy enumNames too.
    assert [(o.value, o.label) for o in by["titledSingleSelectEnum"].options] == [
        ("hero-1", "Superman"),
        ("hero-2", "Green Lantern"),
        ("hero-3", "Wonder Woman"),
    ]
    assert [o.label for o in by["legacyTitledEnum"].options] == [
        "Cats",
        "Dogs",
        "Birds",
        "Fish",
        "Reptiles",
    ]
    assert [o.label for o in by["titledMultipleSelectEnum"].options] == ["Tuna", "Salmon", "Trout"]
    assert (by["integer"].minimum, by["integer"].maximum, by["integer"].default) == (1, 100, 42)
    assert by["email"].format == "email"
    assert by["firstLine"].label == "String with default"


GOOD = [
    ({"type": "string"}, "  Ada Lovelace ", "Ada Lovelace"),
    ({"type": "string", "format": "email"}, "ada@example.org", "ada@example.org"),
    ({"type": "string", "format": "uri"}, "https://example.org/a?b=1", "https://example.org/a?b=1"),
    ({"type": "string", "format": "date"}, "1815-12-10", "1815-12-10"),
    ({"type": "string", "format": "date-time"}, "2025-06-01T09:30:00Z", "2025-06-01T09:30:00Z"),
    ({"type": "string", "minLength": 2, "maxLength": 3}, "abc", "abc"),
    ({"type": "integer", "minimum": 1, "maximum": 100}, "100", 100),
    ({"type": "number", "minimum": 0}, "3.5", 3.5),
    ({"type": "number"}, "7", 7),
    ({"type": "boolean"}, "Yes", True),
    ({"type": "boolean"}, "n", False),
    ({"type": "string", "enum": ["a", "b"]}, "2", "b"),
    ({"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]}, "beta", "b"),
    ({"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]}, "h1", "h1"),
    (EVERYTHING["properties"]["untitledMultipleSelectEnum"], "3, 1,3", ["Violin", "Guitar"]),
    (EVERYTHING["properties"]["titledMultipleSelectEnum"], "Salmon,1", ["fish-2", "fish-1"]),
]


@pytest.mark.parametrize(("prop", "typed", "value"), GOOD)
def test_what_fits_a_field_becomes_the_value_sent(
    prop: dict[str, Any], typed: str, value: Any
) -> None:
    got = field(prop).parse(typed)
    assert got == value
    assert type(got) is type(value)


BAD = [
    ({"type": "string", "format": "email"}, "ada@", "'ada@' is not an email address"),
    ({"type": "string", "format": "uri"}, "example org", "is not a URL"),
    ({"type": "string", "format": "date"}, "2025-02-30", "is not a date, YYYY-MM-DD"),
    ({"type": "string", "format": "date"}, "20250201", "is not a date, YYYY-MM-DD"),
    ({"type": "string", "format": "date-time"}, "2025-06-01T09:30:00", "with its offset"),
    ({"type": "string", "minLength": 2}, "a", "shorter than 2 characters: type text, at least 2"),
    ({"type": "string", "maxLength": 3}, "abcd", "longer than 3 characters"),
    ({"type": "integer", "minimum": 1, "maximum": 100}, "0", "0 is less than 1: type a whole"),
    ({"type": "integer", "minimum": 1, "maximum": 100}, "101", "101 is more than 100"),
    ({"type": "integer"}, "4.5", "'4.5' is not a whole number"),
    ({"type": "number"}, "nan", "'nan' is not a number"),
    ({"type": "number"}, "twelve", "'twelve' is not a number"),
    ({"type": "boolean"}, "maybe", "'maybe' is not yes or no: type y or n"),
    ({"type": "string", "enum": ["a", "b"]}, "3", "'3' is not one of the choices"),
    (EVERYTHING["properties"]["untitledMultipleSelectEnum"], "1,2,3,4", "choose at most 3"),
    (EVERYTHING["properties"]["untitledMultipleSelectEnum"], " , ", "choose at least 1"),
]


@pytest.mark.parametrize(("prop", "typed", "why"), BAD)
def test_what_does_not_fit_is_refused_saying_what_would(
    prop: dict[str, Any], typed: str, why: str
) -> None:
    with pytest.raises(Invalid) as refused:
        field(prop).parse(typed)
    assert why in str(refused.value)


def test_an_empty_answer_keeps_what_there_is_leaves_out_or_is_required() -> None:
    optional = field({"type": "string", "title": "Nickname"})
    assert optional.parse("") is LEFT_OUT
    assert optional.parse("  ", "Ada", has_current=True) == "Ada"
    required = field({"type": "string", "title": "Name"}, required=True)
    with pytest.raises(Invalid, match="Name is required: type text"):
        required.parse("")


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},
        {"type": "array", "properties": {}},
        {"type": "object", "properties": {"x": {"type": "object", "properties": {}}}},
        {"type": "object", "properties": {"x": {"type": "array", "items": {"type": "object"}}}},
        {"type": "object", "properties": {"x": "string"}},
        {"type": "object", "properties": {}, "required": "x"},
    ],
)
def test_a_form_that_is_not_flat_cannot_be_asked(schema: dict[str, Any]) -> None:
    with pytest.raises(FormUnreadable):
        fields(schema)


def test_the_form_walks_its_fields_then_goes_over_them_again_from_the_answers() -> None:
    form = Form(fields(EVERYTHING))
    assert form.required == 1
    assert form.current is not None
    assert form.current.name == "name"
    assert form.prefill(form.current) == ""
    with pytest.raises(Invalid):
        form.answer("")  # required: the same field is asked again
    assert form.index == 0
    form.answer("Ada")
    form.answer("")  # check: left out
    assert form.current is not None
    assert form.prefill(form.current) == "It was a dark and stormy night."
    for typed in ["", "", "", "", "7", "", "3", "2,3", "Wonder Woman", "", "2"]:
        form.answer(typed)
    assert form.current is None
    assert form.values == {
        "name": "Ada",
        "firstLine": "It was a dark and stormy night.",
        "integer": 7,
        "number": 3.14,
        "untitledSingleSelectEnum": "Joey",
        "untitledMultipleSelectEnum": ["Piano", "Violin"],
        "titledSingleSelectEnum": "hero-3",
        "titledMultipleSelectEnum": ["fish-1"],
        "legacyTitledEnum": "pet-2",
    }
    # The person reads titles and the choices' words, not keys and consts.
    assert form.summary()[:2] == [
        ("String", "Ada"),
        ("String with default", form.values["firstLine"]),
    ]
    assert ("Untitled Multiple Select Enum", "Piano, Violin") in form.summary()
    assert ("Titled Single Select Enum", "Wonder Woman") in form.summary()
    # Going over the fields again starts each from its answer: the inputs hold what was sent.
    form.again()
    by = {f.name: f for f in form.fields}
    assert form.prefill(by["untitledMultipleSelectEnum"]) == "2,3"
    assert form.prefill(by["legacyTitledEnum"]) == "2"
    assert form.prefill(by["integer"]) == "7"
    form.answer("")  # Enter keeps Ada
    assert form.values["name"] == "Ada"
