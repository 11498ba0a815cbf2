"""Table kinds: how the rows a pipeline's transform returns become its compacted table.

A kind owns: the schema of the rows the transform hands over (its *changes*), how one share of a
micro-batch's changes is reduced to at most one change per key before it is written
(:meth:`TableKind.reduce`), how the sink writes them (its :class:`WriteStrategy`), and,
for kinds written by merging, how the reduced rows merge into the stored table (the clauses of a
Delta merge). The sink asks the kind and knows no kind by name, so a new kind is a new class
here.

Every built-in kind is written with deletion vectors (``UPSERT_DELETE``): ``LatestPerKey`` keeps
the change from the highest source position; ``ChangeRows`` takes full rows, at most one per key
per batch; ``Accumulate`` folds each batch row into the stored row of its key, read by key where
the share is written (``fold``). Only a kind that gives nothing but merge clauses, or an
``Accumulate`` whose updates are SQL beyond the column arithmetic ``update_expressions``
evaluates, is merged.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import ClassVar, Protocol, Self

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.define.update_expressions import UnsupportedUpdate, Update, parse


class Merger(Protocol):
    """The merge builder the sink hands a kind (delta-rs' ``TableMerger``): target rows are
    ``t``, batch rows ``s``, predicates and values are SQL."""

    def when_matched_update(
        self, updates: dict[str, str], predicate: str | None = None
    ) -> Self: ...

    def when_matched_delete(self, predicate: str | None = None) -> Self: ...

    def when_not_matched_insert(
        self, updates: dict[str, str], predicate: str | None = None
    ) -> Self: ...


class WriteStrategy(Enum):
    """How the sink writes a kind's batches.

    ``UPSERT_DELETE``: each change replaces or deletes its key's row; new rows go to new files
    and replaced rows are marked in deletion vectors, so a batch costs what it holds whatever the
    table's size, and the data files are written where the changes are (on the executors).
    ``MERGE``: a delta-rs merge on the driver, which rewrites every file a batch touches; for
    kinds that only give merge clauses (SQL the sink cannot evaluate by itself).
    """

    UPSERT_DELETE = "upsert_delete"
    MERGE = "merge"


class TableKind(ABC):
    """How changes become table rows. ``key`` is the table's key column."""

    key: str
    write_strategy: ClassVar[WriteStrategy] = WriteStrategy.MERGE
    # The table's columns holding each row's source (partition, offset), if it keeps them: a
    # stored row is then only replaced by a change from a higher position.
    position: ClassVar[tuple[str, str] | None] = None
    # Whether a share is folded into the stored rows of its keys (``fold``) before it is written.
    reads_stored_rows: ClassVar[bool] = False
    # Whether the source positions of changes order them (several changes of a key in one batch
    # are allowed: the latest wins); otherwise a key changes at most once per batch.
    orders_changes: ClassVar[bool] = False
    # Whether a change can delete its key's row (a row is otherwise only ever replaced).
    deletes_rows: ClassVar[bool] = True

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key column (a composite key has more than ``key``)."""
        return (self.key,)

    def fold(self, batch: pa.Table, stored: pa.Table, matched: pa.Array) -> pa.Table:
        """The new rows of ``batch``'s keys from their ``stored`` rows (aligned with ``batch``;
        ``matched`` false where a key has none); for kinds that read stored rows."""
        raise NotImplementedError

    def change_schema(self, table_schema: pa.Schema) -> pa.Schema:
        """The Arrow schema of the rows a transform hands to the sink."""
        return table_schema

    def reduce(self, changes: pa.Table) -> pa.Table:
        """One micro-batch of changes as the rows to merge (at most one per key)."""
        return changes

    def rows_to_append(self, changes: pa.Table) -> pa.Table:
        """The rows a reduced batch adds to an empty table (no merge needed there)."""
        return changes

    @abstractmethod
    def merge(self, merger: Merger, columns: dict[str, str]) -> Merger:
        """``merger`` with this kind's clauses; ``columns`` maps every table column to ``s.``."""


@dataclass(frozen=True)
class LatestPerKey(TableKind):
    """KTable semantics: per key the record with the highest (partition, offset) wins.

    The transform returns rows with the table's columns plus ``_partition``, ``_offset`` and
    ``_delete`` (true for a tombstone); the sink reduces them to the latest row per key. When the
    table stores the source position (``position`` names its partition and offset columns), a
    stored row is only replaced by a change from a higher (partition, offset), so the result does
    not depend on how the log was cut into batches even if a key moved partitions. The position
    columns must hold each row's ``_partition`` and ``_offset`` (the sink checks it).
    """

    key: str
    position: tuple[str, str] | None = None  # type: ignore[misc]
    write_strategy: ClassVar[WriteStrategy] = WriteStrategy.UPSERT_DELETE
    orders_changes: ClassVar[bool] = True

    def change_schema(self, table_schema: pa.Schema) -> pa.Schema:
        extra = [
            pa.field("_partition", pa.int32()),
            pa.field("_offset", pa.int64()),
            pa.field("_delete", pa.bool_()),
        ]
        return pa.schema([*table_schema, *extra])

    def reduce(self, changes: pa.Table) -> pa.Table:
        return latest_per_key(changes, self.key)

    def rows_to_append(self, changes: pa.Table) -> pa.Table:
        return changes.filter(pc.invert(changes["_delete"]))

    def merge(self, merger: Merger, columns: dict[str, str]) -> Merger:
        newer = "true"
        if self.position:
            part, offset = (f"t.`{c}`" for c in self.position)
            newer = f"(s._partition > {part} OR (s._partition = {part} AND s._offset > {offset}))"
        return (
            merger.when_matched_delete(predicate=f"s._delete = true AND {newer}")
            .when_matched_update(updates=columns, predicate=f"s._delete = false AND {newer}")
            .when_not_matched_insert(updates=columns, predicate="s._delete = false")
        )


@dataclass(frozen=True)
class ChangeRows(TableKind):
    """Full-row upserts and deletes, at most one per key per batch: what a stateful plan's
    operator emits. The change rows are the table's columns plus ``_delete``. ``also`` names
    the further columns of a composite key. A key changed twice in one batch is refused (nothing
    says which change is the latest)."""

    key: str
    also: tuple[str, ...] = ()
    write_strategy: ClassVar[WriteStrategy] = WriteStrategy.UPSERT_DELETE

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.also)

    def change_schema(self, table_schema: pa.Schema) -> pa.Schema:
        return pa.schema([*table_schema, pa.field("_delete", pa.bool_())])

    def rows_to_append(self, changes: pa.Table) -> pa.Table:
        return changes.filter(pc.invert(changes["_delete"]))

    def merge(self, merger: Merger, columns: dict[str, str]) -> Merger:
        return (
            merger.when_matched_delete(predicate="s._delete = true")
            .when_matched_update(updates=columns, predicate="s._delete = false")
            .when_not_matched_insert(updates=columns, predicate="s._delete = false")
        )


@dataclass(frozen=True)
class Accumulate(TableKind):
    """A running aggregate per key: the transform returns one row per key for the batch, and
    ``updates`` says how a batch row folds into the stored row (SQL over ``t.`` and ``s.``; a
    column without an update keeps its stored value, a new key takes the batch row).

    Updates made of column arithmetic (``streaming.define.update_expressions``) are folded where
    the batch's rows are, with the stored row read by key, and written with deletion vectors;
    other SQL is left to a Delta merge on the driver.
    """

    key: str
    updates: dict[str, str]
    reads_stored_rows: ClassVar[bool] = True
    deletes_rows: ClassVar[bool] = False

    @property
    def write_strategy(self) -> WriteStrategy:  # type: ignore[override]
        return WriteStrategy.MERGE if self._parsed is None else WriteStrategy.UPSERT_DELETE

    @cached_property
    def _parsed(self) -> dict[str, Update] | None:
        try:
            return {column: parse(sql) for column, sql in self.updates.items()}
        except UnsupportedUpdate:
            return None

    def fold(self, batch: pa.Table, stored: pa.Table, matched: pa.Array) -> pa.Table:
        parsed = self._parsed
        assert parsed is not None, "only evaluable updates are folded"
        s = {name: batch[name].combine_chunks() for name in batch.column_names}
        t = {name: stored[name].combine_chunks() for name in stored.column_names}
        columns = {}
        for name in stored.column_names:
            if name in self.keys:
                columns[name] = s[name]
                continue
            new = parsed[name].evaluate(t, s, batch.num_rows) if name in parsed else t[name]
            new = new.cast(stored.schema.field(name).type)
            columns[name] = pc.if_else(matched, new, s[name].cast(new.type))
        return pa.table(columns, schema=stored.schema)

    def merge(self, merger: Merger, columns: dict[str, str]) -> Merger:
        return merger.when_matched_update(updates=self.updates).when_not_matched_insert(
            updates=columns
        )


def latest_per_key(changes: pa.Table, key: str) -> pa.Table:
    """KTable reduction of one batch: per key only the row with the highest (partition, offset).

    Done in Arrow and NumPy on the collected changes rather than as a Spark aggregation: it saves
    a shuffle stage per micro-batch. Keys are dictionary-encoded and the rows sorted by (key code,
    partition, offset) as integers, which is several times faster than sorting the key strings.
    """
    if changes.num_rows <= 1:
        return changes
    encoded = pc.dictionary_encode(changes[key].combine_chunks(), null_encoding="encode")
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    partitions = changes["_partition"].to_numpy()
    offsets = changes["_offset"].to_numpy()
    order = np.lexsort((offsets, partitions, codes))  # the last key sorts first
    ordered_codes = codes[order]
    last_of_key = np.append(ordered_codes[1:] != ordered_codes[:-1], True)
    return changes.take(pa.array(order[last_of_key]))
