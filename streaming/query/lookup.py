"""Rows of a table by key: ``kappa table get PIPELINE KEY...``, :func:`lookup` and
:class:`KeyLookup`.

A table's files are not sorted by key (each batch writes the keys it changed, in any order), so
file statistics prune little: DataFusion answers a key on a 1 M-row table in about 70-100 ms,
and a 10 M-row one ten times slower (``bench/query_bench.py``). Two ways, then:

- :func:`lookup`, one shot (the command line): a DataFusion query with the keys as a filter.
  A cold process pays the scan once instead of building an index.
- :class:`KeyLookup`, from a warm process: an index key -> (file, row) of the table's live rows,
  built once and then kept up to date from each new table version (files added and removed,
  rows newly deleted by deletion vectors), plus a cache of decoded files (data files never
  change). A lookup costs a ``stat`` of the log, the new versions' changes and a dict lookup.

Keys are given per key column: a single key as its value, a composite key (``spend_hourly``:
``customer_id``, ``window_start``) as a tuple, or on the command line as ``c007,1700002800000``
or JSON (``{"customer_id": "c007", "window_start": 1700002800000}``); values are converted to the
key columns' types.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from streaming.define.registry import get_pipeline
from streaming.delta.table_reader import open_table
from streaming.delta.table_store import TableLocation, TableStore
from streaming.deployment import Deployment
from streaming.errors import QueryError
from streaming.settings import Settings
from streaming.versions.live_pointer import resolve_deployment

Key = tuple[Any, ...]  # one value per key column
DEFAULT_CACHE_BYTES = 1 << 30  # decoded data files kept by a KeyLookup


def _deployment(
    settings: Settings, pipeline: str, version: str | None
) -> tuple[Deployment, list[str]]:
    deployment = resolve_deployment(settings, pipeline, version)
    return deployment, list(get_pipeline(settings.pipelines, pipeline).table.keys)


def parse_keys(texts: Sequence[str], fields: Sequence[pa.Field]) -> list[Key]:
    """Keys as typed on the command line: a value per key, composite keys joined by commas or
    as a JSON object of the key columns.

    Raises:
        QueryError: a key with the wrong number of parts, or a part of the wrong type.
    """
    names = [f.name for f in fields]
    keys = []
    for text in texts:
        if text.lstrip().startswith("{"):
            try:
                given = json.loads(text)
                parts = [given[n] for n in names]
            except (json.JSONDecodeError, KeyError, TypeError):
                msg = f"key {text!r} must be a JSON object with the key columns {names}"
                raise QueryError(msg) from None
        else:
            parts = text.split(",") if len(names) > 1 else [text]
            if len(parts) != len(names):
                msg = (
                    f"key {text!r} needs {len(names)} parts joined by commas ({', '.join(names)}),"
                    " or a JSON object of them"
                )
                raise QueryError(msg)
        keys.append(tuple(_typed(p, f) for p, f in zip(parts, fields, strict=True)))
    return keys


def _typed(value: Any, column: pa.Field) -> Any:
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return str(value)
    try:
        return pa.array([value]).cast(column.type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        msg = f"key column {column.name} is {column.type}: {value!r} is not one"
        raise QueryError(msg) from None


def key_fields(settings: Settings, pipeline: str, version: str | None = None) -> list[pa.Field]:
    """The key columns of ``pipeline``'s table (the live version, or ``version``)."""
    deployment, names = _deployment(settings, pipeline, version)
    return _keys_of(open_table(deployment.table_path), names)


def _keys_of(table: DeltaTable, names: Sequence[str]) -> list[pa.Field]:
    schema = pa.schema(table.schema())
    return [schema.field(n) for n in names]


def _as_keys(keys: Sequence[Any], width: int) -> list[Key]:
    """Keys given to the Python functions: a value each, or a tuple for a composite key."""
    out = []
    for key in keys:
        parts = tuple(key) if isinstance(key, tuple | list) else (key,)
        if len(parts) != width:
            msg = f"key {key!r} needs {width} values, one per key column"
            raise QueryError(msg)
        out.append(parts)
    return out


def lookup(
    settings: Settings, pipeline: str, keys: Sequence[Any], version: str | None = None
) -> pa.Table:
    """The rows of ``keys`` (values, or tuples for a composite key) in ``pipeline``'s live table
    (or ``version``), in the order asked; keys without a row are left out. One DataFusion query
    filtered on the keys."""
    deployment, names = _deployment(settings, pipeline, version)
    return _rows_of(open_table(deployment.table_path), names, keys)


def lookup_typed(
    settings: Settings, pipeline: str, texts: Sequence[str], version: str | None = None
) -> tuple[pa.Table, int]:
    """:func:`lookup` of keys as typed on the command line (:func:`parse_keys`), typed against
    the same snapshot they are looked up in; returns the rows and how many keys were asked."""
    deployment, names = _deployment(settings, pipeline, version)
    table = open_table(deployment.table_path)
    keys = parse_keys(texts, _keys_of(table, names))
    return _rows_of(table, names, keys), len(keys)


def _rows_of(table: DeltaTable, names: Sequence[str], keys: Sequence[Any]) -> pa.Table:
    fields = _keys_of(table, names)
    wanted = _as_keys(keys, len(names))
    if not wanted:
        return pa.schema(table.schema()).empty_table()
    columns = ", ".join(_ident(n) for n in pa.schema(table.schema()).names)
    match = " OR ".join(
        "("
        + " AND ".join(
            f"{_ident(n)} = {_literal(v, f)}" for n, v, f in zip(names, key, fields, strict=True)
        )
        + ")"
        for key in wanted
    )
    reader = QueryBuilder().register("t", table).execute(f"SELECT {columns} FROM t WHERE {match}")
    rows = pa.table(reader.read_all()).cast(pa.schema(table.schema()))
    return _in_order(rows, names, wanted)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: Any, column: pa.Field) -> str:
    if value is None:
        msg = f"key column {column.name} cannot be null in a lookup"
        raise QueryError(msg)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"key column {column.name} of type {column.type} is not supported in lookups"
        raise QueryError(msg)
    return repr(value)


def _in_order(rows: pa.Table, names: Sequence[str], wanted: Sequence[Key]) -> pa.Table:
    """``rows`` in the order of ``wanted`` (a key asked twice, once)."""
    found = list(zip(*(rows.column(n).to_pylist() for n in names), strict=True))
    at = {key: i for i, key in enumerate(found)}
    order = [at[k] for k in dict.fromkeys(wanted) if k in at]
    return rows.take(pa.array(order, pa.int64()))


# -- from a warm process --------------------------------------------------------------------


@dataclass
class _File:
    """A live data file: its key columns, which of its rows are live, and its id."""

    id: int
    name: str  # the file's name, which deletion vectors are matched by
    keys: list[Key]
    live: np.ndarray  # bool per row


@dataclass
class _FileCache:
    """Decoded data files, least recently used out first, within a byte budget."""

    budget: int
    tables: OrderedDict[str, pa.Table] = field(default_factory=OrderedDict)
    size: int = 0

    def get(self, path: str) -> pa.Table | None:
        table = self.tables.get(path)
        if table is not None:
            self.tables.move_to_end(path)
        return table

    def put(self, path: str, table: pa.Table) -> None:
        self.tables[path] = table
        self.size += table.nbytes
        while self.size > self.budget and len(self.tables) > 1:
            _, dropped = self.tables.popitem(last=False)
            self.size -= dropped.nbytes

    def drop(self, path: str) -> None:
        table = self.tables.pop(path, None)
        if table is not None:
            self.size -= table.nbytes


class TableIndex:
    """Key -> (file, row) of every live row of one table, kept up to date version by version.

    The index is exact at each version: within a version a key has one live row, and a refresh
    first forgets the rows the new version deletes (deletion vectors grown, files removed), then
    indexes the rows of its new files.
    """

    def __init__(self, location: TableLocation, key_names: Sequence[str], cache: _FileCache):
        self.location = location
        self.store = TableStore(location)
        self.table = open_table(location)
        self.key_names = list(key_names)
        self.cache = cache
        self.version = -1
        self.schema = pa.schema(self.table.schema())
        self.files: dict[str, _File] = {}  # by path relative to the table
        self.paths: list[str | None] = []  # file id -> path
        self.index: dict[Key, int] = {}  # key -> file id << 32 | row

    def refresh(self) -> None:
        """Bring the index to the table's newest version."""
        self.table.update_incremental()
        version = self.table.version()
        if version == self.version:
            return
        self.schema = pa.schema(self.table.schema())
        adds = pa.table(self.table.get_add_actions(flatten=False))
        live_paths = adds.column("path").to_pylist()
        masks = self._live_masks()
        kept = set(live_paths)
        for path, file in list(self.files.items()):
            if path not in kept:
                self._forget(file, np.flatnonzero(file.live))
                del self.files[path]
                self.paths[file.id] = None
                self.cache.drop(path)
                continue
            mask = masks.get(file.name)
            if mask is not None:
                live = _full(mask, len(file.live))
                self._forget(file, np.flatnonzero(file.live & ~live))
                file.live = live
        for path in live_paths:
            if path not in self.files:
                self._add(path, masks.get(path.rsplit("/", 1)[-1]))
        self.version = version

    def _live_masks(self) -> dict[str, np.ndarray]:
        """Per file name, which rows its deletion vector leaves live (files without one absent)."""
        masks = {}
        for batch in self.table.deletion_vectors():
            batch = pa.record_batch(batch)
            vectors = batch["selection_vector"]
            bounds = vectors.offsets.to_numpy()
            keep = vectors.values.to_numpy(zero_copy_only=False)
            for i, uri in enumerate(batch["filepath"].to_pylist()):
                masks[uri.rsplit("/", 1)[-1]] = keep[bounds[i] : bounds[i + 1]].astype(bool)
        return masks

    def _add(self, path: str, mask: np.ndarray | None) -> None:
        columns = self.store.read_parquet(path, self.key_names)
        keys = list(zip(*(columns.column(n).to_pylist() for n in self.key_names), strict=True))
        live = np.ones(len(keys), dtype=bool) if mask is None else _full(mask, len(keys))
        file = _File(len(self.paths), path.rsplit("/", 1)[-1], keys, live)
        self.paths.append(path)
        self.files[path] = file
        base = file.id << 32
        index = self.index
        for row in np.flatnonzero(live).tolist():
            index[keys[row]] = base | row

    def _forget(self, file: _File, rows: np.ndarray) -> None:
        base = file.id << 32
        index = self.index
        for row in rows.tolist():
            key = file.keys[row]
            if index.get(key) == base | row:
                del index[key]

    def rows(self, keys: Sequence[Key]) -> pa.Table:
        """The live rows of ``keys`` in the order asked (keys without one left out)."""
        located = [(k, self.index.get(k)) for k in dict.fromkeys(keys)]
        by_file: dict[int, list[int]] = {}
        for _, where in located:
            if where is not None:
                by_file.setdefault(where >> 32, []).append(where & 0xFFFFFFFF)
        parts, order = [], {}
        for file_id, rows in by_file.items():
            data = self._data(str(self.paths[file_id]))
            parts.append(data.take(pa.array(rows, pa.int64())))
            base = sum(p.num_rows for p in parts[:-1])
            for i, row in enumerate(rows):
                order[(file_id << 32) | row] = base + i
        if not parts:
            return self.schema.empty_table()
        found = pa.concat_tables(parts)
        wanted = [order[w] for _, w in located if w is not None]
        return found.take(pa.array(wanted, pa.int64()))

    def _data(self, path: str) -> pa.Table:
        data = self.cache.get(path)
        if data is None:
            data = self.store.read_parquet(path, self.schema.names).select(self.schema.names)
            data = data.cast(self.schema)
            self.cache.put(path, data)
        return data


def _full(mask: np.ndarray, rows: int) -> np.ndarray:
    """A deletion vector's keep-mask over all ``rows`` of its file (rows past it are live)."""
    live = np.ones(rows, dtype=bool)
    live[: min(rows, len(mask))] = mask[:rows]
    return live


class KeyLookup:
    """Point lookups on one pipeline's table from a warm process (see the module docstring).

    Follows the live pointer (unless ``version`` is given): after a promotion the next lookup
    reads the new live version. Each lookup first brings the index to the table's newest
    version, so it sees every commit made before it.
    """

    def __init__(
        self,
        settings: Settings,
        pipeline: str,
        version: str | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.settings = settings
        self.pipeline = pipeline
        self.version = version
        self._cache = _FileCache(cache_bytes)
        self._deployment: Deployment | None = None
        self._index: TableIndex | None = None

    def index(self) -> TableIndex:
        """The index of the table read now, up to date."""
        deployment, names = _deployment(self.settings, self.pipeline, self.version)
        if self._index is None or deployment != self._deployment:
            self._cache = _FileCache(self._cache.budget)
            self._index = TableIndex(TableLocation.of(deployment.table_path), names, self._cache)
            self._deployment = deployment
        self._index.refresh()
        return self._index

    def get(self, *keys: Any) -> pa.Table:
        """The rows of ``keys`` (values, or tuples for a composite key), in the order asked."""
        index = self.index()
        return index.rows(_as_keys(keys, len(index.key_names)))

    def warm(self) -> KeyLookup:
        """Build the index and decode every live file (within the cache's budget) now."""
        index = self.index()
        for path in list(index.files):
            index._data(path)
        return self


__all__ = ["KeyLookup", "TableIndex", "key_fields", "lookup", "lookup_typed", "parse_keys"]
