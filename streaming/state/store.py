"""A durable operator state, exactly once per batch id: changelogs plus periodic snapshots.

Batch ``B``'s file ``changelog-B`` holds what the batch changed (per table: deleted keys, inserted
rows) and names the batch it follows; ``snapshot-B`` holds the whole state after ``B``. The state
after ``B`` is the newest snapshot at or before ``B`` plus the changelogs that chain from it to
``B``. Files of later batches belong to a batch whose output never committed: ``load`` ignores
them and the next ``write`` removes them, since that batch will be recomputed. Writing costs the
size of the batch's changes; a snapshot is taken once the changelogs since the last one outweigh
it (at least ``min_snapshot_bytes``), so its cost is spread over at least as many bytes of
changes, or once they number ``max_changelogs``, so a load replays at most that many.

Once the table has committed a batch, :meth:`StateStore.collect_garbage` deletes the snapshots
and changelogs no load can need any more (the deployment's table upkeep runs it after each
commit). The directory then holds at most two snapshots and ``max_changelogs`` changelogs, plus,
after a crash, the files of the batch that did not commit until it is redone: in bytes, at most
about twice the state's size plus ``max(min_snapshot_bytes, snapshot_ratio x the state's size)``
plus one batch's changes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

from streaming.state.bundle import Bundle, decode, decode_header, encode
from streaming.state.keyed_tables import (
    State,
    StateDelta,
    TableDelta,
    apply_delta,
    collapse,
    is_empty_delta,
    key_of,
)
from streaming.state.storage import StateDirectory, open_directory

_NAME = re.compile(r"^(changelog|snapshot)-(\d{20})\.kst$")
_DELETES = ".deletes"
_INSERTS = ".inserts"


class StateStoreError(RuntimeError):
    """The state directory cannot give the state asked for, or a write is out of order."""


def _file(kind: str, batch_id: int) -> str:
    return f"{kind}-{batch_id:020d}.kst"


class StateStore:
    """One deployment's operator state under a directory (local path or pyarrow URI)."""

    def __init__(
        self,
        location: str | Path | StateDirectory,
        *,
        snapshot_ratio: float = 1.0,
        min_snapshot_bytes: int = 8 << 20,
        max_changelogs: int = 100,
        compression: str | None = "lz4",
    ) -> None:
        if isinstance(location, (str, Path)):
            location = open_directory(location)
        self.directory: StateDirectory = location
        self.snapshot_ratio = snapshot_ratio
        self.min_snapshot_bytes = min_snapshot_bytes
        self.max_changelogs = max_changelogs
        self.compression = compression
        self._loaded = False
        self._head: int | None = None
        self._discarded = False
        self._since_snapshot = 0  # bytes of the changelogs since the last snapshot
        self._changelogs = 0  # how many there are
        self._snapshot_bytes = 0
        self._garbage = True  # whether a snapshot may have made files unneeded

    @property
    def head(self) -> int | None:
        """The batch the state last loaded or written reflects (None: no batch)."""
        return self._head

    def _files(self) -> dict[str, dict[int, str]]:
        found: dict[str, dict[int, str]] = {"changelog": {}, "snapshot": {}}
        for name in self.directory.names():
            match = _NAME.match(name)
            if match:
                found[match.group(1)][int(match.group(2))] = name
        return found

    def load(
        self, as_of_batch: int | None, known: tuple[int, State] | None = None
    ) -> dict[str, pa.Table]:
        """The state after batch ``as_of_batch`` (None: before any batch, the empty state).

        ``known`` is a state this process already holds, (batch, state) with batch at or before
        ``as_of_batch``: when the changelogs lead back to it before a snapshot, only they are
        read and replayed onto it, so a worker that held the state a few batches ago catches up
        at the cost of those batches.

        Read-only: files of later batches are left alone here.
        """
        self._loaded = True
        self._discarded = False
        self._head = as_of_batch
        self._since_snapshot = 0
        self._changelogs = 0
        self._snapshot_bytes = 0
        if as_of_batch is None:
            return {}
        files = self._files()
        snapshots = [b for b in files["snapshot"] if b <= as_of_batch]
        base = max(snapshots) if snapshots else None
        if known is not None and known[0] <= as_of_batch and (base is None or known[0] >= base):
            chain = self._chain(files, as_of_batch, known[0])
            if chain is not None:
                # The snapshot thresholds count from the newest snapshot, as a full load would:
                # every changelog after it up to here is one of the chain's.
                after = -1 if base is None else base
                since = [n for b, n in files["changelog"].items() if after < b <= as_of_batch]
                self._changelogs = len(since)
                self._since_snapshot = sum(self.directory.size(n) for n in since)
                if base is not None:
                    self._snapshot_bytes = self.directory.size(files["snapshot"][base])
                return _replay(dict(known[1]), list(reversed(chain)))
        chain: list[Bundle] = []
        current: int | None = as_of_batch
        while current != base:
            if current is None or (base is not None and current < base):
                msg = (
                    f"state for batch {as_of_batch} is incomplete: the changelogs do not lead back "
                    f"to snapshot {base}; the state directory was changed by hand or is damaged"
                )
                raise StateStoreError(msg)
            name = files["changelog"].get(current)
            if name is None:
                msg = (
                    f"state for batch {as_of_batch} needs the changelog of batch {current}, which "
                    "is missing (garbage-collected past a committed batch, or deleted)"
                )
                raise StateStoreError(msg)
            data = self.directory.read(name)
            self._since_snapshot += len(data)
            self._changelogs += 1
            bundle = decode(data)
            chain.append(bundle)
            current = bundle.header["after"]
        state: dict[str, pa.Table] = {}
        if base is not None:
            data = self.directory.read(files["snapshot"][base])
            self._snapshot_bytes = len(data)
            state = dict(decode(data).tables)
        return _replay(state, list(reversed(chain)))

    def _chain(
        self, files: dict[str, dict[int, str]], as_of_batch: int, known: int
    ) -> list[Bundle] | None:
        """The changelogs from ``as_of_batch`` back to batch ``known`` (newest first), or None
        when they do not lead there."""
        chain: list[Bundle] = []
        current: int | None = as_of_batch
        while current != known:
            name = files["changelog"].get(current) if current is not None else None
            if name is None or current is None or current < known:
                return None
            bundle = decode(self.directory.read(name))
            chain.append(bundle)
            current = bundle.header["after"]
        return chain

    def write(self, batch_id: int, delta: StateDelta, state: State) -> None:
        """Persist batch ``batch_id``'s changes ``delta``; ``state`` is the state after it.

        Writing the batch the state already reflects again is a no-op when it changes nothing
        (a replayed batch); rewriting a batch after a reload recomputes the same file.
        """
        if not self._loaded:
            msg = "load() the state before writing (load(None) for a new deployment)"
            raise StateStoreError(msg)
        if batch_id < 0:
            msg = f"batch ids are non-negative, got {batch_id}"
            raise StateStoreError(msg)
        if self._head is not None and batch_id <= self._head:
            if batch_id == self._head and is_empty_delta(delta):
                return
            msg = f"batch {batch_id} is not after batch {self._head}, which the state reflects"
            raise StateStoreError(msg)
        if not self._discarded:
            self._discard_after(self._head)
        tables: dict[str, pa.Table] = {}
        keys: dict[str, list[str]] = {}
        for name, change in delta.items():
            if change.deletes is not None and change.deletes.num_rows:
                tables[name + _DELETES] = change.deletes
            if change.inserts is not None and change.inserts.num_rows:
                tables[name + _INSERTS] = change.inserts
                keys[name] = list(key_of(change.inserts))
        header = {"kind": "changelog", "batch": batch_id, "after": self._head, "keys": keys}
        data = encode(Bundle(tables, header), self.compression)
        self.directory.write(_file("changelog", batch_id), data)
        self._head = batch_id
        self._since_snapshot += len(data)
        self._changelogs += 1
        threshold = max(self.min_snapshot_bytes, self.snapshot_ratio * self._snapshot_bytes)
        if self._since_snapshot >= threshold or self._changelogs >= self.max_changelogs:
            self.snapshot(state)

    def snapshot(self, state: State) -> None:
        """Write the whole ``state`` (the state after the head batch) as a snapshot."""
        if self._head is None:
            return
        header = {"kind": "snapshot", "batch": self._head}
        data = encode(Bundle(dict(state), header), self.compression)
        self.directory.write(_file("snapshot", self._head), data)
        self._snapshot_bytes = len(data)
        self._since_snapshot = 0
        self._changelogs = 0
        self._garbage = True

    def seed(self, batch_id: int, state: State) -> int:
        """Start this empty store at ``batch_id`` with ``state`` (another store's state after
        that batch, :func:`copy_state`), as one snapshot; returns its bytes.

        Raises:
            StateStoreError: the store holds files already.
        """
        if any(self._files().values()):
            msg = "only an empty store is seeded; it holds state files already"
            raise StateStoreError(msg)
        header = {"kind": "snapshot", "batch": batch_id}
        data = encode(Bundle(dict(state), header), self.compression)
        self.directory.write(_file("snapshot", batch_id), data)
        return len(data)

    def collect_garbage(self, committed_batch: int) -> int:
        """Delete files no load at or after ``committed_batch`` needs; returns how many.

        Cheap when this store wrote no snapshot since it last looked: it does not list the
        directory then.
        """
        if not self._garbage:
            return 0
        files = self._files()
        self._garbage = any(b > committed_batch for b in files["snapshot"])
        snapshots = [b for b in files["snapshot"] if b <= committed_batch]
        if not snapshots:
            return 0
        base = max(snapshots)
        doomed = [files["snapshot"][b] for b in snapshots if b < base]
        doomed += [name for b, name in files["changelog"].items() if b <= base]
        for name in doomed:
            self.directory.delete(name)
        return len(doomed)

    def _discard_after(self, head: int | None) -> None:
        floor = -1 if head is None else head
        for by_batch in self._files().values():
            for batch_id, name in by_batch.items():
                if batch_id > floor:
                    self.directory.delete(name)
        self._discarded = True

    def header(self, name: str) -> dict[str, object]:
        """The header of one state file (for inspection and tests)."""
        return decode_header(self.directory.read(name))


def copy_state(
    source: str | Path | StateDirectory, target: str | Path | StateDirectory, batch_id: int
) -> int:
    """Copy the state after ``batch_id`` from one store into a new, empty one, where it is the
    state after the same batch; returns the bytes written.

    Raises:
        StateStoreError: the source cannot give that state (its files were collected).
    """
    try:
        state = StateStore(source).load(batch_id)
    except FileNotFoundError as exc:  # collected between listing and reading
        msg = f"the state after batch {batch_id} is gone from {source}: {exc}"
        raise StateStoreError(msg) from None
    return StateStore(target).seed(batch_id, state)


def _replay(state: dict[str, pa.Table], chain: list[Bundle]) -> dict[str, pa.Table]:
    """Apply changelogs (oldest first) at once: per table, the last event per key wins."""
    names: list[str] = []
    for bundle in chain:
        for part in bundle.tables:
            base = part.rsplit(".", 1)[0]
            if base not in names:
                names.append(base)
    for name in names:
        deltas = [
            TableDelta(b.tables.get(name + _DELETES), b.tables.get(name + _INSERTS)) for b in chain
        ]
        key = _key_for(state.get(name), chain, name)
        merged = collapse(deltas, key)
        table = state.get(name)
        if table is None:
            if merged.inserts is not None:
                state[name] = merged.inserts
            continue
        result = apply_delta(table, merged)
        if result is not None:
            state[name] = result
    return state


def _key_for(table: pa.Table | None, chain: list[Bundle], name: str) -> tuple[str, ...]:
    if table is not None:
        return key_of(table)
    for bundle in chain:
        key = bundle.header.get("keys", {}).get(name)
        if key:
            return tuple(key)
    msg = f"state table {name!r} has no recorded key columns"
    raise StateStoreError(msg)
