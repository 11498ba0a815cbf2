"""Which rows one batch deletes: the LatestPerKey rule applied to written shares and the index.

Per key, the change with the highest (partition, offset) in the batch wins; every other change
of that key in the batch is deleted in its new file. The winner then replaces the stored row,
unless the table keeps source positions and the stored row comes from a later record (a key
that moved partitions), in which case the winner is deleted instead. A winning delete removes
the stored row and adds none. Kinds whose changes carry no position that orders them take at
most one change per key per batch, across all its shares: a second one is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.delta.key_index import MISSING, KeyIndex, split
from streaming.errors import TableError


@dataclass
class Resolution:
    """What a batch does to the table and to the index.

    The rows of the new files that no delete names are exactly the keys' new live rows.
    """

    stored_deletes: dict[int, np.ndarray] = field(default_factory=dict)  # file id -> rows
    new_deletes: dict[int, np.ndarray] = field(default_factory=dict)  # share -> rows
    drop_keys: list[Any] = field(default_factory=list)  # keys deleted from the table


@dataclass(frozen=True)
class Changes:
    """The reduced changes of every share of a batch, one entry per change."""

    keys: pa.Array
    shares: np.ndarray
    partitions: np.ndarray
    offsets: np.ndarray
    deletes: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, shares: pa.Table) -> Changes:
        lengths = pc.list_value_length(shares["keys"]).to_numpy(zero_copy_only=False)

        def flat(name: str) -> np.ndarray:
            return pc.list_flatten(shares[name]).to_numpy(zero_copy_only=False)

        return cls(
            keys=pc.list_flatten(shares["keys"]).combine_chunks(),
            shares=np.repeat(np.arange(shares.num_rows, dtype=np.int64), lengths),
            partitions=flat("partitions").astype(np.int64),
            offsets=flat("offsets"),
            deletes=flat("deletes").astype(bool),
            rows=flat("rows").astype(np.int64),
        )

    def in_file(self, share: int) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """(keys, partitions, offsets) of the rows of ``share``'s file, in file order."""
        picked = np.flatnonzero((self.shares == share) & (self.rows >= 0))
        picked = picked[np.argsort(self.rows[picked], kind="stable")]
        return self.keys.take(pa.array(picked)), self.partitions[picked], self.offsets[picked]


def resolve(
    index: KeyIndex, changes: Changes, guard_positions: bool, duplicates: str | None = None
) -> Resolution:
    """The deletes and index moves of one batch (nothing is changed here).

    Raises:
        TableError: ``duplicates`` is given (the kind takes one change per key per batch, this
            is why) and a key has two changes.
    """
    if len(changes.keys) == 0:
        return Resolution()
    winners, losers = _winners(changes)
    if duplicates is not None and len(losers):
        twice = changes.keys.take(pa.array(losers[:3])).to_pylist()
        raise TableError(f"keys {twice} changed twice in one batch: {duplicates}")
    new_deletes = [_in_new_files(changes, losers)]
    keys = changes.keys.take(pa.array(winners)).to_pylist()
    stored = index.lookup(keys)
    found = stored != MISSING
    if guard_positions and found.any():
        stored_partitions, stored_offsets = index.positions(stored[found])
        partitions, offsets = changes.partitions[winners], changes.offsets[winners]
        newer = (stored_partitions > partitions[found]) | (
            (stored_partitions == partitions[found]) & (stored_offsets >= offsets[found])
        )
        beaten = np.flatnonzero(found)[newer]  # winners a stored row outranks
        new_deletes.append(_in_new_files(changes, winners[beaten]))
        found[beaten] = False
        keep = np.ones(len(winners), dtype=bool)
        keep[beaten] = False
        winners, stored, found = winners[keep], stored[keep], found[keep]
        keys = [k for k, kept in zip(keys, keep, strict=True) if kept]
    deleting = changes.deletes[winners]
    return Resolution(
        stored_deletes=_by_file(stored[found]),
        new_deletes=_merge(new_deletes),
        drop_keys=[k for k, d in zip(keys, deleting, strict=True) if d],
    )


def _winners(changes: Changes) -> tuple[np.ndarray, np.ndarray]:
    """Indexes of the latest change per key, and of all the others."""
    encoded = pc.dictionary_encode(changes.keys, null_encoding="encode")
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.lexsort((changes.offsets, changes.partitions, codes))
    ordered = codes[order]
    last = np.append(ordered[1:] != ordered[:-1], True)
    return order[last], order[~last]


def _in_new_files(changes: Changes, picked: np.ndarray) -> dict[int, np.ndarray]:
    """The new-file rows of the picked changes (deletes have none), by share."""
    picked = picked[changes.rows[picked] >= 0]
    shares, rows = changes.shares[picked], changes.rows[picked]
    return {int(s): rows[shares == s] for s in np.unique(shares)}


def _by_file(locations: np.ndarray) -> dict[int, np.ndarray]:
    files, rows = split(locations)
    return {int(f): rows[files == f] for f in np.unique(files)}


def _merge(parts: list[dict[int, np.ndarray]]) -> dict[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    for part in parts:
        for share, rows in part.items():
            out[share] = np.concatenate([out[share], rows]) if share in out else rows
    return out
