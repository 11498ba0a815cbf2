"""The state store: exactly the state after batch B, whatever was written after it."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from streaming.state import StateStore, StateStoreError, TableDelta, apply_state_delta, with_key
from streaming.state.bundle import Bundle, CorruptStateFile, decode, encode
from streaming.state.storage import ArrowDirectory, LocalDirectory

KEY = ("k", "part")


def _delta(
    upserts: dict[tuple[str, int], int], removed: set[tuple[str, int]], existing
) -> TableDelta:
    """A delta that upserts ``upserts`` and removes ``removed`` from ``existing`` keys."""
    replaced = [k for k in upserts if k in existing]
    doomed = sorted(set(replaced) | (removed & set(existing)))
    deletes = pa.table({"k": [k for k, _ in doomed], "part": [p for _, p in doomed]})
    rows = sorted(upserts.items())
    inserts = pa.table(
        {
            "k": [k for (k, _), _ in rows],
            "part": [p for (_, p), _ in rows],
            "v": pa.array([v for _, v in rows], pa.int64()),
        }
    )
    return TableDelta(deletes if deletes.num_rows else None, with_key(inserts, KEY))


def _as_dict(state: dict[str, pa.Table]) -> dict[tuple[str, int], int]:
    table = state.get("t")
    if table is None:
        return {}
    return {
        (k, p): v
        for k, p, v in zip(*(table.column(c).to_pylist() for c in ["k", "part", "v"]), strict=True)
    }


def _random_history(seed: int, batches: int):
    """Per batch: the delta and the expected dict after it (computed by plain dict updates)."""
    rng = random.Random(seed)
    current: dict[tuple[str, int], int] = {}
    history = []
    for _ in range(batches):
        upserts = {
            (rng.choice("abcdefgh"), rng.randrange(3)): rng.randrange(1000)
            for _ in range(rng.randrange(0, 6))
        }
        removed = {
            (rng.choice("abcdefgh"), rng.randrange(3)) for _ in range(rng.randrange(0, 3))
        } - set(upserts)
        delta = _delta(upserts, removed, current)
        for key in removed:
            current.pop(key, None)
        current.update(upserts)
        history.append((delta, dict(current)))
    return history


def _run(store: StateStore, history, first: int = 0) -> None:
    state: dict[str, pa.Table] = store.load(None if first == 0 else first - 1)
    for batch_id, (delta, _) in enumerate(history[first:], start=first):
        state = apply_state_delta(state, {"t": delta})
        store.write(batch_id, {"t": delta}, state)


@pytest.mark.parametrize("min_snapshot_bytes", [0, 3000, 1 << 30])
def test_load_as_of_every_batch_equals_the_plain_dict_history(
    tmp_path: Path, min_snapshot_bytes: int
) -> None:
    history = _random_history(seed=min_snapshot_bytes % 97, batches=40)
    store = StateStore(tmp_path, min_snapshot_bytes=min_snapshot_bytes)
    _run(store, history)
    for batch_id, (_, expected) in enumerate(history):
        assert _as_dict(StateStore(tmp_path).load(batch_id)) == expected, batch_id


def test_snapshots_are_taken_and_garbage_collection_keeps_committed_loadable(
    tmp_path: Path,
) -> None:
    history = _random_history(seed=5, batches=60)
    store = StateStore(tmp_path, min_snapshot_bytes=2000)
    _run(store, history)
    names = LocalDirectory(tmp_path).names()
    assert any(n.startswith("snapshot-") for n in names)
    removed = store.collect_garbage(committed_batch=45)
    assert removed > 0
    for batch_id in range(45, 60):
        assert _as_dict(StateStore(tmp_path).load(batch_id)) == history[batch_id][1]
    remaining = LocalDirectory(tmp_path).names()
    assert len(remaining) < len(names)


def test_files_of_uncommitted_batches_are_ignored_then_replaced(tmp_path: Path) -> None:
    history = _random_history(seed=11, batches=20)
    _run(StateStore(tmp_path, min_snapshot_bytes=1500), history)
    # The output committed batch 9 only; the restarted writer computes 10.. differently.
    store = StateStore(tmp_path, min_snapshot_bytes=1500)
    state = store.load(9)
    assert _as_dict(state) == history[9][1]
    expected = dict(history[9][1])
    for batch_id in range(10, 14):
        upserts = {("z", batch_id): batch_id}
        delta = _delta(upserts, set(), expected)
        expected.update(upserts)
        state = apply_state_delta(state, {"t": delta})
        store.write(batch_id, {"t": delta}, state)
    assert _as_dict(StateStore(tmp_path).load(13)) == expected
    names = LocalDirectory(tmp_path).names()
    assert not any(int(n.split("-")[1].split(".")[0]) > 13 for n in names), names


def test_rewriting_a_batch_after_reload_is_idempotent(tmp_path: Path) -> None:
    history = _random_history(seed=3, batches=10)
    store = StateStore(tmp_path)
    _run(store, history)
    again = StateStore(tmp_path)
    _run(again, history, first=7)
    for batch_id in range(10):
        assert _as_dict(StateStore(tmp_path).load(batch_id)) == history[batch_id][1]


def test_a_replayed_batch_writes_nothing_and_a_changed_one_is_refused(tmp_path: Path) -> None:
    history = _random_history(seed=4, batches=5)
    store = StateStore(tmp_path)
    _run(store, history)
    before = {n: LocalDirectory(tmp_path).read(n) for n in LocalDirectory(tmp_path).names()}
    store.write(4, {"t": TableDelta()}, {})
    assert {n: LocalDirectory(tmp_path).read(n) for n in LocalDirectory(tmp_path).names()} == before
    with pytest.raises(StateStoreError, match="not after batch 4"):
        store.write(4, {"t": history[0][0]}, {})
    with pytest.raises(StateStoreError, match="not after batch 4"):
        store.write(2, {"t": TableDelta()}, {})


def test_a_missing_changelog_is_a_clear_error(tmp_path: Path) -> None:
    history = _random_history(seed=6, batches=6)
    _run(StateStore(tmp_path), history)
    LocalDirectory(tmp_path).delete("changelog-00000000000000000003.kst")
    with pytest.raises(StateStoreError, match="changelog of batch 3, which is missing"):
        StateStore(tmp_path).load(5)
    assert _as_dict(StateStore(tmp_path).load(2)) == history[2][1]


def test_writing_before_loading_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StateStoreError, match="load"):
        StateStore(tmp_path).write(0, {}, {})


def test_damaged_files_are_refused() -> None:
    data = encode(Bundle({"t": pa.table({"a": [1, 2, 3]})}, {"batch": 1}))
    assert decode(data).tables["t"].column("a").to_pylist() == [1, 2, 3]
    with pytest.raises(CorruptStateFile, match="checksum"):
        decode(data[:-3])
    flipped = bytearray(data)
    flipped[-1] ^= 0xFF
    with pytest.raises(CorruptStateFile, match="checksum"):
        decode(bytes(flipped))
    with pytest.raises(CorruptStateFile, match="magic"):
        decode(b"nonsense")


def test_a_pyarrow_filesystem_directory_works_the_same(tmp_path: Path) -> None:
    history = _random_history(seed=8, batches=12)
    directory = ArrowDirectory(pafs.LocalFileSystem(), str(tmp_path / "fs"))
    _run(StateStore(directory, min_snapshot_bytes=1000), history)
    for batch_id in (0, 5, 11):
        assert _as_dict(StateStore(directory).load(batch_id)) == history[batch_id][1]


def test_bytes_written_per_batch_follow_the_batch_not_the_state(tmp_path: Path) -> None:
    """A 10-row change costs the same bytes next to 1,000 or 200,000 rows of state."""
    written = {}
    for size in (1_000, 200_000):
        directory = LocalDirectory(tmp_path / str(size))
        store = StateStore(directory, min_snapshot_bytes=1 << 40)
        store.load(None)
        big = with_key(
            pa.table(
                {"k": [f"k{i}" for i in range(size)], "part": [0] * size, "v": list(range(size))}
            ),
            KEY,
        )
        store.write(0, {"t": TableDelta(None, big)}, {"t": big})
        small = with_key(
            pa.table({"k": [f"n{i}" for i in range(10)], "part": [1] * 10, "v": list(range(10))}),
            KEY,
        )
        store.write(1, {"t": TableDelta(None, small)}, {})
        written[size] = len(directory.read("changelog-00000000000000000001.kst"))
    assert written[1_000] == written[200_000]


class ReadsRecorded(LocalDirectory):
    """A directory that remembers which files were read."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.reads: list[str] = []

    def read(self, name: str) -> bytes:
        self.reads.append(name)
        return super().read(name)


def test_a_holder_catches_up_from_the_state_it_held_reading_only_the_batches_since(
    tmp_path: Path,
) -> None:
    """Two workers take turns with one partition's state (as Spark places tasks): each loads
    from what it held, reading only the changelogs since; snapshots in between are honoured."""
    history = _random_history(seed=9, batches=40)
    directories = [ReadsRecorded(tmp_path) for _ in range(2)]
    stores = [StateStore(d, min_snapshot_bytes=2500) for d in directories]
    held: list[tuple[int, dict[str, pa.Table]] | None] = [None, None]
    rng = random.Random(2)
    for batch_id, (delta, expected) in enumerate(history):
        turn = rng.randrange(2)
        directories[turn].reads.clear()
        previous = batch_id - 1 if batch_id else None
        state = stores[turn].load(previous, held[turn])
        if previous is not None:
            assert _as_dict(state) == history[previous][1], batch_id
        reads = directories[turn].reads
        if held[turn] is not None and not any(n.startswith("snapshot") for n in reads):
            since = held[turn][0]  # type: ignore[index]
            assert all(int(n.split("-")[1].split(".")[0]) > since for n in reads), reads
        state = apply_state_delta(state, {"t": delta})
        stores[turn].write(batch_id, {"t": delta}, state)
        held[turn] = (batch_id, state)
        assert _as_dict(state) == expected
    assert any(n.startswith("snapshot-") for n in LocalDirectory(tmp_path).names())
    assert _as_dict(StateStore(tmp_path).load(39)) == history[39][1]
