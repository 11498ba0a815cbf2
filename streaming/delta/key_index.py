"""Where each key's live row is: the in-memory index of a table written with deletion vectors.

A key maps to a *location*, the file id shifted left by 32 bits plus the row in that file. The
stored rows' source positions (partition, offset) are kept per file in NumPy arrays (12 bytes a
row) rather than in the dict, for LatestPerKey's "only a newer record replaces" rule.

The index is a cache of the table: it is rebuilt from the snapshot when the sink opens (the key
and position columns of every live file, minus the rows its DV deletes), so there is no state of
its own to keep consistent across a crash.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

ROW_BITS = 32
ROW_MASK = (1 << ROW_BITS) - 1
MISSING = -1


class KeyIndex:
    """Key -> location of its live row, and the source position of every indexed row."""

    def __init__(self) -> None:
        self.paths: list[str | None] = []  # file id -> path (None once the file left the table)
        self.ids: dict[str, int] = {}  # path -> file id
        self.locations: dict[Any, int] = {}
        self._partitions: list[np.ndarray | None] = []
        self._offsets: list[np.ndarray | None] = []

    def __len__(self) -> int:
        return len(self.locations)

    def add_file(
        self,
        path: str,
        keys: pa.Array,
        partitions: np.ndarray,
        offsets: np.ndarray,
        live: np.ndarray | None = None,
    ) -> int:
        """Register a file; index the keys of its ``live`` rows (a row mask; all rows if None)."""
        file_id = len(self.paths)
        self.paths.append(path)
        self.ids[path] = file_id
        self._partitions.append(np.asarray(partitions, dtype=np.int32))
        self._offsets.append(np.asarray(offsets, dtype=np.int64))
        rows = np.arange(len(keys), dtype=np.int64)
        if live is not None:
            rows = rows[live]
            keys = keys.filter(pa.array(live))
        packed = (rows + (file_id << ROW_BITS)).tolist()
        self.locations.update(zip(keys.to_pylist(), packed, strict=True))
        return file_id

    def forget_file(self, path: str) -> None:
        """Free a file's arrays once no key points into it (it left the table)."""
        file_id = self.ids.pop(path)
        self.paths[file_id] = None
        self._partitions[file_id] = None
        self._offsets[file_id] = None

    def lookup(self, keys: Sequence[Any]) -> np.ndarray:
        """The location of each key's live row, :data:`MISSING` where it has none."""
        get = self.locations.get
        return np.fromiter((get(k, MISSING) for k in keys), dtype=np.int64, count=len(keys))

    def positions(self, locations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The stored (partition, offset) of the rows at ``locations`` (none MISSING)."""
        partitions = np.empty(len(locations), dtype=np.int64)
        offsets = np.empty(len(locations), dtype=np.int64)
        files = locations >> ROW_BITS
        rows = locations & ROW_MASK
        for file_id in np.unique(files):
            here = files == file_id
            stored_partitions, stored_offsets = self._partitions[file_id], self._offsets[file_id]
            assert stored_partitions is not None and stored_offsets is not None
            partitions[here] = stored_partitions[rows[here]]
            offsets[here] = stored_offsets[rows[here]]
        return partitions, offsets

    def file_positions(self, path: str) -> tuple[np.ndarray, np.ndarray]:
        file_id = self.ids[path]
        partitions, offsets = self._partitions[file_id], self._offsets[file_id]
        assert partitions is not None and offsets is not None
        return partitions, offsets

    def point(self, keys: Sequence[Any], locations: Sequence[int]) -> None:
        self.locations.update(zip(keys, locations, strict=True))

    def drop(self, keys: Sequence[Any]) -> None:
        pop = self.locations.pop
        for key in keys:
            pop(key, None)


def long_lived() -> None:
    """Move what the process holds now (a rebuilt key index: millions of keys) out of the
    cyclic garbage collector's way. Otherwise every full collection walks every key, which at
    10 M keys takes about a second and lands inside some batch; their memory is still freed by
    reference counting when they go."""
    gc.freeze()


def location(file_id: int, row: int | np.ndarray) -> Any:
    return (file_id << ROW_BITS) + row


def split(locations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(file ids, rows) of packed locations."""
    return locations >> ROW_BITS, locations & ROW_MASK
