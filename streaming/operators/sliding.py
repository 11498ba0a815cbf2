"""Sliding windows (Kafka Streams' ``SlidingWindows``): which windows a batch changes.

A sliding window's content is not known from the window partials alone (a record creates the
window that starts 1 ms after it, holding the records after it), so the state keeps, per key and
event time, the partial of that time's records (table ``window_times``), and a batch recomputes
every window whose span ``[start, start + size]`` holds one of its records, and the window
starting 1 ms after each of them (a record creates it without being in it). Windows only appear
(a record never empties one), so the output has no deletions besides retention's. A time is
forgotten once every window that holds it is final.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from streaming.operators.aggregations import Aggregation, merge_partials, record_partials
from streaming.operators.batch import TIME
from streaming.operators.folding import fold
from streaming.operators.tables import Transition, fetch
from streaming.operators.windows import END, START, Sliding
from streaming.state import joint_codes, key_mask

TIMES = "window_times"


def slide(
    transition: Transition,
    records: pa.Table,
    window: Sliding,
    key_columns: Sequence[str],
    aggregations: Mapping[str, Aggregation],
) -> pa.Table:
    """Fold ``records`` into their keys' per-time partials and return the partials of every
    window they changed or created (key columns, ``window_start``, ``window_end``)."""
    key = list(key_columns)
    by_time = [*key, TIME]
    size = window.size_ms
    fresh = merge_partials(record_partials(records, aggregations, by_time), by_time, aggregations)
    fold(transition, TIMES, by_time, fresh, aggregations)
    times = fetch(transition.table(TIMES), key, fresh)
    assert times is not None
    (codes,) = joint_codes([times], [key])
    at = times.column(TIME).to_numpy()
    order = np.lexsort((at, codes))
    times, codes, at = times.take(pa.array(order)), codes[order], at[order]
    new = key_mask(times, by_time, fresh)

    # Every window a time of the key can start: a time minus the size, or a time plus 1 ms.
    starts = np.concatenate([at - size, at + 1])
    start_codes = np.concatenate([codes, codes])
    # Compare (key, time) pairs as one sorted integer: the key's code, then the time's rank.
    values, ranks = np.unique(np.concatenate([at, starts, starts + size]), return_inverse=True)
    span = len(values)
    n, m = len(at), len(starts)
    time_code = codes * span + ranks[:n]
    first_code = start_codes * span + ranks[n : n + m]
    last_code = start_codes * span + ranks[n + m :]
    # A window changes when it holds a new time, and appears when it starts 1 ms after one.
    new_codes = time_code[new]
    next_new = np.searchsorted(new_codes, first_code, side="left")
    changed = next_new < len(new_codes)
    changed[changed] = new_codes[next_new[changed]] <= last_code[changed]
    changed[n:] |= new
    _, distinct = np.unique(first_code[changed], return_index=True)
    chosen = np.flatnonzero(changed)[distinct]
    low = np.searchsorted(time_code, first_code[chosen], side="left")
    high = np.searchsorted(time_code, last_code[chosen], side="right")
    held = high > low
    chosen, low, high = chosen[held], low[held], high[held]
    lengths = high - low
    window_of = np.repeat(np.arange(len(chosen)), lengths)
    rows = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    rows += np.repeat(low, lengths)
    members = times.take(pa.array(rows, pa.int64())).drop_columns([TIME])
    window_start = starts[chosen][window_of]
    members = members.append_column(START, pa.array(window_start, pa.int64()))
    members = members.append_column(END, pa.array(window_start + size + 1, pa.int64()))
    return merge_partials(members, [*key, START], aggregations, {END: "max"})


def forget(
    transition: Transition, window: Sliding, key_columns: Sequence[str], horizon: int | None
) -> None:
    """Drop the times every window of which is final: a record not late (at or above the
    horizon) reaches only windows starting at or after ``horizon - size``, whose starts and
    contents need no time before ``horizon - size - 1``."""
    table = transition.table(TIMES)
    if horizon is None or table is None or table.num_rows == 0:
        return
    done = table.column(TIME).to_numpy() < horizon - window.size_ms - 1
    if done.any():
        transition.change(TIMES, [*key_columns, TIME], deletes=table.filter(done))
