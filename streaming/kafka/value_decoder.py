"""Decoding Kafka records whose values are JSON objects into typed Arrow columns, in bulk.

Runs where the records are read (in the Kafka source, on the executors), so values are parsed by
Arrow's vectorised C++ JSON reader instead of record by record, and arrive in Spark typed.

A value decodes when it is valid UTF-8 and a JSON object whose declared fields have exactly their
declared JSON types (a number is not a string, ``1.0`` is not a bigint, a decimal must fit its
scale; other fields are ignored). Otherwise the record gets the first reason that applies, in the
order of :meth:`ValueDecoder.decode`, and is dead-lettered by the pipeline with it.

How: every value of a batch is wrapped as one line ``{"r":<i>,"v":<value>}`` and all lines are
parsed in one call under the explicit schema ``{r: int64, v: struct<fields>}``. Arrow rejects the
whole block if one record does not fit, so a failing block is bisected until each bad record
stands alone. The row ids ``r`` prove that every parsed row belongs to its own record (a value
with a line break is parsed on its own), and wrapping keeps a bare ``null`` or ``5`` from ever
being a line of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from streaming.define.value_schema import (
    ValueField,
    arrow_struct,
    check_required,
    parse_value_schema,
)

NO_KEY = "record has no key"
KEY_NOT_UTF8 = "key is not valid UTF-8"
UNWANTED_TOMBSTONE = "null value (tombstone) on a topic whose records cannot be deleted"
VALUE_NOT_UTF8 = "value is not valid UTF-8"

_READ = pj.ReadOptions(use_threads=False, block_size=1 << 26)


@cache
def _framing() -> tuple[pa.Scalar, ...]:
    """The pieces of a line around its id and value (open, middle, close, and the separator).

    Built on first use, not at import: building a pyarrow value imports pandas (about 40 MB and
    0.2 s per process), and the processes that only plan the source never decode.
    """
    return tuple(pa.scalar(b, pa.binary()) for b in (b'{"r":', b',"v":', b"}\n", b""))


@dataclass(frozen=True)
class DecodedValues:
    """Per record: the decoded value (null for tombstones and bad records), whether it is a
    tombstone, and why it cannot be used (null when it can)."""

    value: pa.StructArray
    tombstone: pa.BooleanArray
    error: pa.StringArray


class ValueDecoder:
    """Decodes the values of one pipeline's records (``streaming.define.pipeline.Pipeline``)."""

    def __init__(self, schema: str, required: tuple[str, ...], accepts_tombstones: bool) -> None:
        self.schema_text = schema
        self.fields: tuple[ValueField, ...] = parse_value_schema(schema)
        check_required(self.fields, tuple(required))
        self.required = tuple(required)
        self.accepts_tombstones = accepts_tombstones
        self.value_type = arrow_struct(self.fields)
        self._parse = pj.ParseOptions(
            explicit_schema=pa.schema([("r", pa.int64()), ("v", self.value_type)]),
            unexpected_field_behavior="ignore",
        )
        self.not_an_object = f"value is not a JSON object matching the schema <{schema}>"

    def __reduce__(self) -> tuple[type[ValueDecoder], tuple[str, tuple[str, ...], bool]]:
        """Pickled by its arguments (Arrow's parse options do not pickle): Spark ships the
        source, and with it the decoder, to its Python workers."""
        return (ValueDecoder, (self.schema_text, self.required, self.accepts_tombstones))

    def decode(self, keys: pa.Array, values: pa.Array) -> DecodedValues:
        """Decode one batch. Reasons, first that applies: no key, key not UTF-8, a tombstone the
        pipeline does not accept, value not UTF-8, not a matching JSON object, then each
        required field (in declared order) missing or null."""
        tombstone = values.is_null().to_numpy(zero_copy_only=False)
        value_bad = _not_utf8(values)
        candidates = np.flatnonzero(~tombstone & ~value_bad)
        parsed, parse_failed = self._parse_all(values.take(pa.array(candidates, pa.int64())))
        conditions = [
            keys.is_null().to_numpy(zero_copy_only=False),
            _not_utf8(keys),
            tombstone & (not self.accepts_tombstones),
            value_bad,
            _scatter(parse_failed | ~_valid(parsed), candidates, len(values)),
        ]
        reasons = [NO_KEY, KEY_NOT_UTF8, UNWANTED_TOMBSTONE, VALUE_NOT_UTF8, self.not_an_object]
        for name in self.required:
            missing = ~_valid(pc.struct_field(parsed, name)) if len(parsed) else np.zeros(0, bool)
            conditions.append(_scatter(missing, candidates, len(values)))
            reasons.append(f"required field '{name}' is missing or null")
        code = np.select(conditions, np.arange(len(reasons)), default=-1)
        error = pa.DictionaryArray.from_arrays(
            pa.array(code, pa.int32(), mask=code < 0), pa.array(reasons, pa.string())
        ).cast(pa.string())
        # The decoded value of each good, non-tombstone record; null everywhere else.
        where = np.full(len(values), -1, np.int64)
        where[candidates] = np.arange(len(candidates))
        where[code >= 0] = -1
        value = parsed.take(pa.array(where, pa.int64(), mask=where < 0))
        return DecodedValues(value, pa.array(tombstone, pa.bool_()), error)

    def _parse_all(self, values: pa.Array) -> tuple[pa.StructArray, np.ndarray]:
        """Parse ``values`` (no nulls, valid UTF-8): the decoded structs and which failed."""
        failed = np.zeros(len(values), bool)
        if len(values) == 0:
            return pa.array([], self.value_type), failed
        multi_line = _has_line_break(values)
        pieces: list[tuple[int, pa.StructArray]] = []
        # Values with a line break go alone, so no line can ever hold parts of two records.
        for start, stop in _runs(~multi_line):
            self._bisect(values.slice(start, stop - start), start, pieces, failed)
        for index in np.flatnonzero(multi_line):
            self._bisect(values.slice(int(index), 1), int(index), pieces, failed)
        for index in np.flatnonzero(failed):
            pieces.append((int(index), pa.nulls(1, self.value_type)))
        pieces.sort(key=lambda piece: piece[0])
        return pa.concat_arrays([piece for _, piece in pieces]), failed

    def _bisect(
        self,
        values: pa.Array,
        start: int,
        pieces: list[tuple[int, pa.StructArray]],
        failed: np.ndarray,
    ) -> None:
        parsed = self._parse_lines(values)
        if parsed is not None:
            pieces.append((start, parsed))
        elif len(values) == 1:
            failed[start] = True
        else:
            half = len(values) // 2
            self._bisect(values.slice(0, half), start, pieces, failed)
            self._bisect(values.slice(half), start + half, pieces, failed)

    def _parse_lines(self, values: pa.Array) -> pa.StructArray | None:
        """All of ``values`` parsed in one call, or None if any one does not decode."""
        count = len(values)
        ids = pa.array(np.arange(count, dtype=np.int64)).cast(pa.string()).cast(pa.binary())
        opening, middle, closing, separator = _framing()
        lines = pc.binary_join_element_wise(opening, ids, middle, values, closing, separator)
        try:
            table = pj.read_json(
                pa.BufferReader(_data(lines)), read_options=_READ, parse_options=self._parse
            )
        except pa.ArrowException:
            return None
        if table.num_rows != count:
            return None
        row_ids = table.column("r").to_numpy()
        if not np.array_equal(row_ids, np.arange(count)):
            return None
        return table.column("v").combine_chunks()


def _not_utf8(array: pa.Array) -> np.ndarray:
    """Per value: present and not valid UTF-8. One bulk check; per value only if it fails."""
    try:
        array.view(pa.string()).validate(full=True)
        return np.zeros(len(array), bool)
    except pa.ArrowInvalid:
        return np.array([v is not None and not _is_utf8(v) for v in array.to_pylist()], bool)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _has_line_break(values: pa.Array) -> np.ndarray:
    """Per value: contains a line break. One scan of the bytes; per value only if there is one."""
    data = np.frombuffer(_data(values), np.uint8)
    if not (np.any(data == 0x0A) or np.any(data == 0x0D)):
        return np.zeros(len(values), bool)
    newline = pc.match_substring(values, "\n")
    carriage = pc.match_substring(values, "\r")
    return pc.or_(newline, carriage).to_numpy(zero_copy_only=False)


def _valid(array: pa.Array) -> np.ndarray:
    return array.is_valid().to_numpy(zero_copy_only=False)


def _scatter(mask: np.ndarray, positions: np.ndarray, size: int) -> np.ndarray:
    full = np.zeros(size, bool)
    full[positions] = mask
    return full


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The ``[start, stop)`` runs of True in ``mask``."""
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _data(array: pa.Array) -> pa.Buffer:
    """The bytes of a binary array's values, back to back (its lines, here)."""
    offsets = np.frombuffer(array.buffers()[1], np.int32)[
        array.offset : array.offset + len(array) + 1
    ]
    return array.buffers()[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
