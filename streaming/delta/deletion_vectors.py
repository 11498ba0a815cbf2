"""Delta deletion vectors as the Delta protocol stores them, written and read here.

A deletion vector (DV) marks rows of a data file as deleted without rewriting the file. Its rows
are a 64-bit roaring bitmap serialized in the "portable" format, which is byte for byte what
``pyroaring.BitMap64.serialize()`` produces, preceded by a magic number. A DV file holds the DVs
of one commit: a version byte (1), then per DV a big-endian u32 size, the data and a big-endian
CRC-32 of the data. A descriptor in the log names the file (storage type ``u``: an optional
prefix plus the Z85 of the file's UUID), the offset of the size field, the data's size and the
number of deleted rows.
"""

from __future__ import annotations

import base64
import struct
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import BitMap64

MAGIC = 1681511377
FILE_VERSION = 1
_B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_TO_Z85 = str.maketrans(_B85, _Z85)
_FROM_Z85 = str.maketrans(_Z85, _B85)
_UUID_CHARS = 20  # the Z85 of a UUID's 16 bytes


class DeletionVectorError(ValueError):
    """A deletion vector or its file is not in the format the Delta protocol defines."""


def z85_encode(data: bytes) -> str:
    """Z85 (ZeroMQ's base85): the arithmetic of ``base64.b85encode`` with another alphabet."""
    if len(data) % 4:
        msg = f"Z85 encodes a multiple of 4 bytes, not {len(data)}"
        raise DeletionVectorError(msg)
    return base64.b85encode(data).decode("ascii").translate(_TO_Z85)


def z85_decode(text: str) -> bytes:
    return base64.b85decode(text.translate(_FROM_Z85))


@dataclass(frozen=True)
class Descriptor:
    """Where a DV lives and what it holds (the log's ``deletionVector`` object)."""

    storage_type: str
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "storageType": self.storage_type,
            "pathOrInlineDv": self.path_or_inline_dv,
            "sizeInBytes": self.size_in_bytes,
            "cardinality": self.cardinality,
        }
        if self.offset is not None:
            out["offset"] = self.offset
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Descriptor:
        offset = data.get("offset")
        return cls(
            storage_type=str(data["storageType"]),
            path_or_inline_dv=str(data["pathOrInlineDv"]),
            offset=None if offset is None else int(offset),
            size_in_bytes=int(data["sizeInBytes"]),
            cardinality=int(data["cardinality"]),
        )

    @property
    def unique_id(self) -> str:
        """The DV's identity, which with the data file's path identifies a live file."""
        base = self.storage_type + self.path_or_inline_dv
        return base if self.offset is None else f"{base}@{self.offset}"

    @property
    def file_name(self) -> str:
        """The relative path of the DV file holding this DV (storage type ``u`` only)."""
        if self.storage_type != "u":
            msg = f"a DV of storage type {self.storage_type!r} has no file in the table"
            raise DeletionVectorError(msg)
        prefix = self.path_or_inline_dv[:-_UUID_CHARS]
        uid = uuid.UUID(bytes=z85_decode(self.path_or_inline_dv[-_UUID_CHARS:]))
        return dv_file_name(uid, prefix)


def dv_file_name(uid: uuid.UUID, prefix: str = "") -> str:
    name = f"deletion_vector_{uid}.bin"
    return f"{prefix}/{name}" if prefix else name


def serialize(rows: BitMap64) -> bytes:
    """One DV's data: the magic number and the portable roaring bitmap array."""
    return struct.pack("<I", MAGIC) + rows.serialize()


def deserialize(data: bytes) -> BitMap64:
    (magic,) = struct.unpack_from("<I", data)
    if magic != MAGIC:
        msg = f"not a deletion vector (magic {magic}, expected {MAGIC})"
        raise DeletionVectorError(msg)
    return BitMap64.deserialize(data[4:])


@dataclass(frozen=True)
class DvFile:
    """The DVs of one commit as one file: its relative path, bytes and a descriptor per DV."""

    name: str
    content: bytes
    descriptors: list[Descriptor]


def build_dv_file(dvs: Sequence[BitMap64]) -> DvFile:
    """All DVs of one commit in one new file (the caller stores ``content`` at ``name``)."""
    uid = uuid.uuid4()
    encoded = z85_encode(uid.bytes)
    out = bytearray([FILE_VERSION])
    descriptors = []
    for rows in dvs:
        data = serialize(rows)
        offset = len(out)
        out += struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
        descriptors.append(Descriptor("u", encoded, offset, len(data), len(rows)))
    return DvFile(dv_file_name(uid), bytes(out), descriptors)


def read_dv(descriptor: Descriptor, file_content: bytes | None) -> BitMap64:
    """The rows a descriptor deletes; ``file_content`` is its DV file's bytes (None if inline).

    Raises:
        DeletionVectorError: the file's version, the DV's size or its checksum is wrong.
    """
    if descriptor.storage_type == "i":
        raw = z85_decode(descriptor.path_or_inline_dv)[: descriptor.size_in_bytes]
        return deserialize(raw)
    if file_content is None or descriptor.offset is None:
        msg = f"the DV {descriptor.unique_id} needs its file's content and an offset"
        raise DeletionVectorError(msg)
    if file_content[:1] != bytes([FILE_VERSION]):
        msg = f"DV file {descriptor.file_name} has an unknown format version"
        raise DeletionVectorError(msg)
    (size,) = struct.unpack_from(">I", file_content, descriptor.offset)
    start = descriptor.offset + 4
    data = file_content[start : start + size]
    (crc,) = struct.unpack_from(">I", file_content, start + size)
    if size != descriptor.size_in_bytes or crc != zlib.crc32(data):
        msg = f"DV {descriptor.unique_id} in {descriptor.file_name}: size or checksum mismatch"
        raise DeletionVectorError(msg)
    return deserialize(data)


def to_numpy(rows: BitMap64) -> np.ndarray:
    """A DV's row numbers as a sorted int64 array."""
    return np.fromiter(rows, dtype=np.int64, count=len(rows))
