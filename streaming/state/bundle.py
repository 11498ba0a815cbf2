"""One state file: several named Arrow tables and a small JSON header, checksummed.

Layout: the magic line, the header length (8 bytes, little endian), the header (JSON), then one
Arrow IPC stream per table at the offsets the header lists. The header carries a CRC-32 of
everything after it, so a truncated or damaged file is refused instead of read as less state.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

MAGIC = b"KAPPA-STATE 1\n"
_LENGTH = struct.Struct("<Q")


class CorruptStateFile(ValueError):
    """A state file that is not a whole, undamaged bundle."""


@dataclass(frozen=True)
class Bundle:
    """Named tables plus header fields (batch id, kind, chain link, ...)."""

    tables: Mapping[str, pa.Table]
    header: Mapping[str, Any] = field(default_factory=dict)


def _ipc_bytes(table: pa.Table, compression: str | None) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue()


def encode(bundle: Bundle, compression: str | None = "lz4") -> bytes:
    """Serialise ``bundle`` to bytes."""
    parts = []
    entries = []
    offset = 0
    for name, table in bundle.tables.items():
        data = _ipc_bytes(table, compression)
        entries.append({"name": name, "offset": offset, "length": data.size})
        parts.append(data)
        offset += data.size
    body = b"".join(part.to_pybytes() for part in parts)
    header = dict(bundle.header)
    header["tables"] = entries
    header["crc32"] = zlib.crc32(body)
    raw_header = json.dumps(header, sort_keys=True).encode()
    return MAGIC + _LENGTH.pack(len(raw_header)) + raw_header + body


def decode_header(data: bytes) -> dict[str, Any]:
    """The header of an encoded bundle, after checking the magic and the checksum."""
    header, _ = _split(data)
    return header


def decode(data: bytes) -> Bundle:
    """Parse bytes written by ``encode``."""
    header, body_start = _split(data)
    buffer = pa.py_buffer(data)
    tables = {}
    for entry in header["tables"]:
        start = body_start + entry["offset"]
        reader = pa.ipc.open_stream(buffer.slice(start, entry["length"]))
        tables[entry["name"]] = reader.read_all()
    fields = {k: v for k, v in header.items() if k not in ("tables", "crc32")}
    return Bundle(tables=tables, header=fields)


def _split(data: bytes) -> tuple[dict[str, Any], int]:
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _LENGTH.size:
        msg = "not a kappa state file (bad magic or too short)"
        raise CorruptStateFile(msg)
    (length,) = _LENGTH.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _LENGTH.size
    try:
        header = json.loads(data[start : start + length])
    except ValueError as error:
        msg = f"state file header is not JSON: {error}"
        raise CorruptStateFile(msg) from error
    body_start = start + length
    if zlib.crc32(memoryview(data)[body_start:]) != header.get("crc32"):
        msg = "state file checksum mismatch (truncated or damaged)"
        raise CorruptStateFile(msg)
    return header, body_start
