"""The bulk JSON value decoder: every record gets its value or its reason, never a neighbour's."""

from __future__ import annotations

import json
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from streaming.define.value_schema import parse_value_schema
from streaming.kafka.value_decoder import ValueDecoder

SCHEMA = "id string, n bigint, amount decimal(18,2), ok boolean, x double"
NOT_OBJECT = f"value is not a JSON object matching the schema <{SCHEMA}>"


def decode(records: list[tuple[bytes | None, bytes | None]], tombstones: bool = True):
    decoder = ValueDecoder(SCHEMA, ("id", "n"), tombstones)
    keys = pa.array([k for k, _ in records], pa.binary())
    values = pa.array([v for _, v in records], pa.binary())
    out = decoder.decode(keys, values)
    return out.value.to_pylist(), out.tombstone.to_pylist(), out.error.to_pylist()


GOOD = {"id": "a", "n": 1, "amount": Decimal("12.34"), "ok": True, "x": 1.5}


def good(i: int) -> bytes:
    return json.dumps({**GOOD, "id": f"r{i}", "amount": 12.34}).encode()


BAD_VALUES = [
    (b"{not json", NOT_OBJECT),
    (b"null", NOT_OBJECT),
    (b"5", NOT_OBJECT),
    (b'"text"', NOT_OBJECT),
    (b"[1, 2]", NOT_OBJECT),
    (b"", NOT_OBJECT),
    (b"   ", NOT_OBJECT),
    (b'{"id": 5, "n": 1}', NOT_OBJECT),  # a number where a string is declared
    (b'{"id": "a", "n": 1.0}', NOT_OBJECT),  # not an integer
    (b'{"id": "a", "n": "1"}', NOT_OBJECT),  # a string where a number is declared
    (b'{"id": "a", "n": 99999999999999999999}', NOT_OBJECT),  # out of range
    (b'{"id": "a", "n": 1, "amount": 1.234}', NOT_OBJECT),  # does not fit decimal(18,2)
    (b'{"id": "a", "n": 1, "ok": 1}', NOT_OBJECT),
    (b'{"id": "a", "n": 1}{"id": "b", "n": 2}', NOT_OBJECT),  # two objects in one record
    (b'{"id": "a", "n": 1}\n{"id": "b", "n": 2}', NOT_OBJECT),
    (b'{"id": "a", "n": 1} trailing', NOT_OBJECT),
    (b'{"id": "a", "id": "b", "n": 1}', NOT_OBJECT),
    (b"\xff\xfe", "value is not valid UTF-8"),
    (b'{"id": "\xc3\x28", "n": 1}', "value is not valid UTF-8"),
    (b'{"n": 1}', "required field 'id' is missing or null"),
    (b'{"id": null, "n": null}', "required field 'id' is missing or null"),
    (b'{"id": "a"}', "required field 'n' is missing or null"),
]


def test_good_values_decode_to_their_types():
    values, tombstones, errors = decode([(b"k", good(0)), (b"k", b'{"id":"b","n":-7}')])
    assert values == [
        {**GOOD, "id": "r0"},
        {"id": "b", "n": -7, "amount": None, "ok": None, "x": None},
    ]
    assert tombstones == [False, False] and errors == [None, None]


def test_extra_fields_whitespace_and_line_breaks_are_fine():
    pretty = json.dumps({"id": "p", "n": 3, "other": {"deep": [1, None]}}, indent=2).encode()
    values, _, errors = decode([(b"k", b'  {"id":"s","n":2,"z":[1]}  '), (b"k", pretty)])
    assert [v["id"] for v in values] == ["s", "p"] and errors == [None, None]


@pytest.mark.parametrize(("value", "reason"), BAD_VALUES)
def test_each_bad_value_gets_its_reason_and_neighbours_are_untouched(value, reason):
    records = [(b"k", good(0)), (b"k", value), (b"k", good(2))]
    values, _, errors = decode(records)
    assert errors == [None, reason, None]
    assert values[1] is None and values[0]["id"] == "r0" and values[2]["id"] == "r2"


def test_key_and_tombstone_reasons_come_first():
    records = [(None, b"{bad"), (b"\xc3\x28", b"{bad"), (b"k", None), (b"k", b"\xff")]
    _, tombstones, errors = decode(records, tombstones=False)
    assert errors == [
        "record has no key",
        "key is not valid UTF-8",
        "null value (tombstone) on a topic whose records cannot be deleted",
        "value is not valid UTF-8",
    ]
    assert tombstones == [False, False, True, False]
    values, tombstones, errors = decode([(b"k", None)], tombstones=True)
    assert (values, tombstones, errors) == ([None], [True], [None])


def test_a_batch_with_scattered_poison_matches_a_record_by_record_reference():
    rng = random.Random(3)
    records, expected = [], []
    for i in range(5000):
        if rng.random() < 0.05:
            value, reason = rng.choice(BAD_VALUES)
            records.append((b"k", value))
            expected.append((None, reason))
        else:
            records.append((b"k", good(i)))
            expected.append((f"r{i}", None))
    values, _, errors = decode(records)
    assert [(v["id"] if v else None, e) for v, e in zip(values, errors, strict=True)] == expected


@pytest.mark.parametrize(
    ("ddl", "message"),
    [
        ("id string, ts timestamp", "type 'timestamp'"),
        ("id string, id bigint", "twice"),
        ("id", "must be '<name> <type>'"),
        ("", "declares no fields"),
        ("bad-name string", "field name"),
        ("amount decimal(40,2)", "decimal(40,2)"),
    ],
)
def test_a_bad_value_schema_says_what_to_fix(ddl, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_value_schema(ddl)


def test_required_fields_must_be_declared():
    with pytest.raises(ValueError, match="required fields"):
        ValueDecoder("id string", ("id", "amount"), True)
