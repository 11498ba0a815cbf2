"""Synthetic logs for the operator benchmark, generated chunk by chunk so memory stays flat.

Every event has a global position (the order a reader meets it), an input, a partition (by key
hash, as Kafka's keyed producer does) and an offset. Event time advances ``step_ms`` per event;
a share of events is delayed within the grace period, and a smaller share beyond it (late).
The same numbers feed the operators (as Arrow batches) and the hand-rolled baselines (as
tuples), so both see the same log.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from streaming.operators import Batch

MINUTE = 60_000
COUNTRIES = np.array(["FR", "DE", "NL", "ES", "IT", "PL", "SE", "PT", "BE", "AT"])
QUERIES = np.array(["shoes", "hats", "bags", "coats", "socks", "belts", "scarves"])
START_MS = 1_700_000_000_000


@dataclass
class Shape:
    """Two inputs over one key space: the first with ``first_share`` of the events."""

    name: str
    inputs: tuple[str, str]
    keys: int
    first_share: float
    initial: int = 0  # events of the second input, one per key, before everything else
    partitions: int = 4
    step_ms: int = 10
    within_grace_share: float = 0.05
    beyond_grace_share: float = 0.01
    seed: int = 7


ASOF = Shape("asof", ("transactions", "customers"), 100_000, 0.95, initial=100_000)
WINDOW = Shape("window", ("transactions", "unused"), 100_000, 1.0)
INTERVAL = Shape("interval", ("clicks", "searches"), 100_000, 0.7)


@dataclass
class Chunk:
    """A run of consecutive events (numpy columns, in reading order)."""

    first: int  # global position of the first event
    which: np.ndarray  # 0: the shape's first input, 1: the second
    key: np.ndarray
    partition: np.ndarray
    offset: np.ndarray
    time: np.ndarray
    amount: np.ndarray  # cents
    pick: np.ndarray  # a small category (country, query)
    ends: dict[str, dict[int, int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.which)

    def slice(self, start: int, stop: int, ends: dict[str, dict[int, int]]) -> Chunk:
        cut = slice(start, stop)
        return Chunk(
            self.first + start,
            self.which[cut],
            self.key[cut],
            self.partition[cut],
            self.offset[cut],
            self.time[cut],
            self.amount[cut],
            self.pick[cut],
            ends,
        )


def chunks(shape: Shape, events: int, size: int = 250_000) -> Iterator[Chunk]:
    """``events`` events after the initial ones, in chunks of ``size``; deterministic."""
    next_offset = np.zeros((2, shape.partitions), dtype=np.int64)
    produced = 0
    total = shape.initial + events
    while produced < total:
        n = min(size, total - produced)
        rng = np.random.default_rng([shape.seed, produced])
        position = np.arange(produced, produced + n, dtype=np.int64)
        initial = position < shape.initial
        which = np.where(initial, 1, (rng.random(n) >= shape.first_share).astype(np.int64))
        key = np.where(initial, position, rng.integers(0, shape.keys, n))
        clock = START_MS + (position - shape.initial) * shape.step_ms
        draw = rng.random(n)
        delay = np.where(
            draw < shape.beyond_grace_share,
            rng.integers(15 * MINUTE, 30 * MINUTE, n),
            np.where(
                draw < shape.beyond_grace_share + shape.within_grace_share,
                rng.integers(0, 5 * MINUTE, n),
                0,
            ),
        )
        time = np.where(initial, START_MS - (shape.initial - position) * 10, clock - delay)
        partition = (key * 2654435761 % 2**32) % shape.partitions
        offset = np.empty(n, dtype=np.int64)
        for w in (0, 1):
            for p in range(shape.partitions):
                mask = (which == w) & (partition == p)
                count = int(mask.sum())
                offset[mask] = next_offset[w, p] + np.arange(count)
                next_offset[w, p] += count
        amount = rng.lognormal(7.0, 1.0, n).astype(np.int64) + 1
        pick = rng.integers(0, 7, n)
        ends = {
            name: {p: int(next_offset[w, p]) for p in range(shape.partitions)}
            for w, name in enumerate(shape.inputs)
        }
        yield Chunk(produced, which, key, partition, offset, time, amount, pick, ends)
        produced += n


def pieces(chunk: Chunk, batch: int, start_ends: dict[str, dict[int, int]]) -> Iterator[Chunk]:
    """Cut a chunk into batches of ``batch`` events, each with the end offsets it reaches."""
    ends = {name: dict(v) for name, v in start_ends.items()}
    for start in range(0, len(chunk), batch):
        stop = min(start + batch, len(chunk))
        part = chunk.slice(start, stop, {})
        for w, name in enumerate(ends):
            mask = part.which == w
            if mask.any():
                for p in np.unique(part.partition[mask]):
                    last = part.offset[mask & (part.partition == p)].max()
                    ends[name][int(p)] = int(last) + 1
        part.ends = {name: dict(v) for name, v in ends.items()}
        yield part


def start_ends(shape: Shape) -> dict[str, dict[int, int]]:
    return {name: dict.fromkeys(range(shape.partitions), 0) for name in shape.inputs}


def _ids(prefix: str, values: np.ndarray) -> pa.Array:
    return pa.array(np.char.add(prefix, values.astype("U12")))


def _meta(part: Chunk, mask: np.ndarray) -> dict[str, pa.Array]:
    return {
        "_partition": pa.array(part.partition[mask].astype(np.int32)),
        "_offset": pa.array(part.offset[mask]),
        "_timestamp": pa.array(part.time[mask]),
    }


def amounts(cents: np.ndarray) -> pa.Array:
    """Cents as decimal(18, 2), the demo's exact money type (built from the unscaled values)."""
    words = np.empty((len(cents), 2), dtype=np.int64)
    words[:, 0] = cents
    words[:, 1] = cents >> 63
    return pa.Array.from_buffers(pa.decimal128(18, 2), len(cents), [None, pa.py_buffer(words)])


def asof_batch(part: Chunk) -> Batch:
    tx = part.which == 0
    cu = ~tx
    transactions = pa.table(
        {
            **_meta(part, tx),
            "txn_id": _ids("t", part.first + np.flatnonzero(tx)),
            "customer_id": _ids("c", part.key[tx]),
            "amount": amounts(part.amount[tx]),
            "country": pa.array(COUNTRIES[part.pick[tx]]),
            "ts": pa.array(part.time[tx]),
        }
    )
    customers = pa.table(
        {
            **_meta(part, cu),
            "_delete": pa.array(np.zeros(int(cu.sum()), dtype=bool)),
            "customer_id": _ids("c", part.key[cu]),
            "country": pa.array(COUNTRIES[part.pick[cu]]),
            "updated_at": pa.array(part.time[cu]),
        }
    )
    return Batch({"transactions": transactions, "customers": customers}, part.ends)


def window_batch(part: Chunk) -> Batch:
    tx = part.which == 0
    transactions = pa.table(
        {
            **_meta(part, tx),
            "txn_id": _ids("t", part.first + np.flatnonzero(tx)),
            "customer_id": _ids("c", part.key[tx]),
            "amount": amounts(part.amount[tx]),
            "ts": pa.array(part.time[tx]),
        }
    )
    return Batch({"transactions": transactions}, {"transactions": part.ends["transactions"]})


def interval_batch(part: Chunk) -> Batch:
    cl = part.which == 0
    se = ~cl
    clicks = pa.table(
        {
            **_meta(part, cl),
            "click_id": _ids("k", part.first + np.flatnonzero(cl)),
            "user_id": _ids("u", part.key[cl]),
            "ts": pa.array(part.time[cl]),
        }
    )
    searches = pa.table(
        {
            **_meta(part, se),
            "user_id": _ids("u", part.key[se]),
            "query": pa.array(QUERIES[part.pick[se]]),
            "ts": pa.array(part.time[se]),
        }
    )
    return Batch({"clicks": clicks, "searches": searches}, part.ends)


def records(part: Chunk, prefix_first: str, prefix_key: str, labels: np.ndarray) -> list[tuple]:
    """The part as tuples for a hand-rolled baseline, in reading order:
    (input, partition, offset, time, id, key, amount_cents, label)."""
    ids = np.char.add(prefix_first, (part.first + np.arange(len(part))).astype("U12")).tolist()
    keys = np.char.add(prefix_key, part.key.astype("U12")).tolist()
    return list(
        zip(
            part.which.tolist(),
            part.partition.tolist(),
            part.offset.tolist(),
            part.time.tolist(),
            ids,
            keys,
            part.amount.tolist(),
            labels[part.pick].tolist(),
            strict=True,
        )
    )
