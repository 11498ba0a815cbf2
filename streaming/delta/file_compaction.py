"""File compaction: rewriting a deletion-vector table's files beside its running query (not
the per-key compaction of a Kafka compacted topic, which the table's contents follow).

Files that deletion vectors have thinned out, and the small files batches add, are rewritten
into one file holding only their live rows. :func:`prepare` does the slow part on any thread:
it reads the chosen files minus the rows their DVs deleted when they were chosen and writes the
survivors into a new file, while batches keep committing. :func:`finish` runs between two
batches: rows deleted since the files were chosen ("late deletes") become the new file's DV, and
one commit (``dataChange=false``) removes the old (path, DV) pairs and adds the new file, so a
reader sees the old layout or the new one, never a mix.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap64

from streaming.delta import deletion_vectors as dvs
from streaming.delta.data_files import file_stats
from streaming.delta.dv_table import DvTable
from streaming.delta.log_entries import FileEntry, commit_info, now_ms, publish
from streaming.delta.table_keys import key_array


@dataclass(frozen=True)
class CompactionPolicy:
    """When files are rewritten, and how large the result may grow."""

    max_deleted_fraction: float = 0.2  # a file with more of its rows deleted is rewritten
    small_file_rows: int = 200_000  # a file with fewer live rows is small
    min_small_files: int = 8  # small files are merged once there are this many
    target_file_rows: int = 1_000_000  # at most this many live rows per rewritten file


@dataclass(frozen=True)
class Source:
    """A chosen file as it was when chosen."""

    entry: FileEntry
    deleted: BitMap64
    survivors: np.ndarray  # its live rows then
    partitions: np.ndarray
    offsets: np.ndarray


@dataclass(frozen=True)
class Prepared:
    """A rewritten file, not yet part of the table."""

    sources: list[Source]
    entry: FileEntry
    keys: pa.Array  # the new file's keys, in file order


def choose(table: DvTable, policy: CompactionPolicy) -> list[Source]:
    """The files worth rewriting now (called in the sink's thread, between batches)."""
    dirty, small = [], []
    for path, entry in table.snapshot.files.items():
        deleted = len(table.deleted[path])
        live = entry.num_records - deleted
        if deleted and deleted >= policy.max_deleted_fraction * entry.num_records:
            dirty.append((live, path))
        elif live < policy.small_file_rows:
            small.append((live, path))
    picked = sorted(dirty) + (sorted(small) if len(small) >= policy.min_small_files else [])
    chosen, rows = [], 0
    for live, path in picked:
        if chosen and rows + live > policy.target_file_rows:
            break
        chosen.append(path)
        rows += live
    if len(chosen) < 2 and not dirty:
        return []
    return [_source(table, path) for path in chosen]


def _source(table: DvTable, path: str) -> Source:
    entry = table.snapshot.files[path]
    deleted = BitMap64(table.deleted[path])
    keep = np.ones(entry.num_records, dtype=bool)
    keep[dvs.to_numpy(deleted)] = False
    partitions, offsets = table.index.file_positions(path)
    return Source(entry, deleted, np.flatnonzero(keep), partitions, offsets)


def prepare(table: DvTable, sources: list[Source]) -> Prepared:
    """Write the chosen files' survivors into a new file (any thread; the table is untouched)."""
    parts = [
        table.store.read_parquet(s.entry.path).take(pa.array(s.survivors)).cast(table.schema)
        for s in sources
    ]
    rows = pa.concat_tables(parts)
    name = f"compact-{uuid.uuid4().hex}.parquet"
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink, compression="snappy")
    data = sink.getvalue()
    table.store.write(name, data.to_pybytes())
    entry = FileEntry(name, data.size, now_ms(), rows.num_rows, file_stats(rows))
    return Prepared(sources, entry, key_array(rows, table.kind.keys))


def finish(table: DvTable, job: Prepared) -> int:
    """Publish a prepared rewrite (the sink's thread, between batches); returns the version."""
    with table.writing:
        late = BitMap64()  # rows of the new file deleted since their files were chosen
        base = 0
        for source in job.sources:
            current = table.deleted.get(source.entry.path)
            if current is None:  # the whole file was deleted meanwhile
                late.add_range(base, base + len(source.survivors))
            else:
                since = dvs.to_numpy(current - source.deleted)
                late.update((base + np.searchsorted(source.survivors, since)).tolist())
            base += len(source.survivors)
        files = table.snapshot.files
        live_sources = [files[s.entry.path] for s in job.sources if s.entry.path in files]
        actions = [entry.remove(data_change=False) for entry in live_sources]
        new = job.entry
        if len(late) < new.num_records:
            if len(late):
                dv_file = dvs.build_dv_file([late])
                table.store.write(dv_file.name, dv_file.content)
                new = new.with_dv(dv_file.descriptors[0])
            actions.append(new.add(data_change=False))
        head = commit_info("OPTIMIZE", table.snapshot.version, {})
        publish(table.store, table.snapshot.version + 1, [head, *actions])
        _advance(table, job, live_sources, new, late)
        return table.snapshot.version


def _advance(
    table: DvTable, job: Prepared, removed: list[FileEntry], new: FileEntry, late: BitMap64
) -> None:
    table.snapshot.version += 1
    for entry in removed:
        del table.snapshot.files[entry.path]
        del table.deleted[entry.path]
    if len(late) < new.num_records:
        table.snapshot.files[new.path] = new
        table.deleted[new.path] = late
        partitions = np.concatenate([_at(s.partitions, s.survivors) for s in job.sources])
        offsets = np.concatenate([_at(s.offsets, s.survivors) for s in job.sources])
        live = None
        if len(late):
            live = np.ones(new.num_records, dtype=bool)
            live[dvs.to_numpy(late)] = False
        # Every live row of the new file is its key's live row: a key replaced or deleted since
        # its file was chosen has a late delete instead.
        table.index.add_file(new.path, job.keys, partitions, offsets, live)
    for source in job.sources:
        if source.entry.path in table.index.ids:
            table.index.forget_file(source.entry.path)
    table.recount_live_rows()


def _at(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return values[rows] if len(values) else values
