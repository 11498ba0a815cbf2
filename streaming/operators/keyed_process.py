"""The stateful-function operator: a function over per-key state, exact on every log prefix.

Its inputs are streams, checked for lateness against their partitions' stream time like every
operator's; a changelog input is read as the stream of its changes, a tombstone (at its record
timestamp) reaching the function as its key columns with ``state.tombstone`` set. Records are
grouped by the ``by`` columns (a record whose key is null belongs to no key and is dead-lettered
as ``null key``) and each touched key is replayed (``streaming.operators.key_replay``); what its
rows became is settled against the rows it emitted before (``streaming.operators.emitted_rows``).

State tables: ``clock`` (the inputs' partitions), ``keys`` (per key its base state as JSON, its
boundary and its next timer), ``buffer.<input>`` (the records at or above a key's boundary),
and ``rows`` (the emitted rows); ``streaming.operators.process_state`` reads and writes the last
three.

The state is kept by ``by`` (``partitioned_by``): run by the platform with one state per input
partition, the inputs must be keyed by those columns (``streaming.run.copartition``), and each
partition's own stream time decides lateness, folding and timers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.operators.batch import OFFSET, PARTITION, TIME, Batch, Source
from streaming.operators.changes import combine, deletes, upserts
from streaming.operators.emitted_rows import (
    OWNER,
    ROWS,
    RowCodec,
    settle,
)
from streaming.operators.errors import BatchError, OperatorConfigError
from streaming.operators.event_time import (
    CLOCK,
    arrive,
    dead_letters,
    empty_clock,
    empty_dead_letters,
)
from streaming.operators.key_replay import KeyedFunction, KeyOutcome, replay
from streaming.operators.process_state import (
    IDENTITY,
    KEYS,
    NEXT_TIMER,
    ProcessTables,
    buffer_name,
    change,
    settled,
)
from streaming.operators.step import Step
from streaming.operators.tables import Transition
from streaming.state import State, key_mask

NULL_KEY = "null key"
DEFAULT_GRACE_MS = 600_000


@dataclass(frozen=True)
class KeyedProcess:
    """Run ``function`` per key of ``by`` over the inputs (see the module docstring).

    Attributes:
        function: the stateful function (``streaming.operators.key_replay.KeyedFunction``).
        by: the key columns, present in every input.
        sources: the stream inputs read from the batch; at equal event times, records of an
            earlier input come first.
        grace_ms: the grace period of the stream inputs.
        prune_every_ms: how far the horizon advances between two sweeps that replay every key
            to fold its records below the horizon (default: the grace period, at least a
            second).
    """

    function: KeyedFunction
    by: tuple[str, ...]
    sources: tuple[Source, ...] = ()
    grace_ms: int = DEFAULT_GRACE_MS
    prune_every_ms: int | None = None

    def __post_init__(self) -> None:
        if not self.by:
            msg = f"{self.function.name}: give the key columns it keeps state by (by=...)"
            raise OperatorConfigError(msg)
        names = [s.name for s in self.sources]
        if not names or len(set(names)) != len(names):
            msg = f"{self.function.name}: its inputs {names} must be at least one, all distinct"
            raise OperatorConfigError(msg)
        missing = [c for c in self.function.key if c not in self.function.output.names]
        if missing:
            msg = f"{self.function.name}: its key columns {missing} are not in its output"
            raise OperatorConfigError(msg)
        if self.grace_ms < 0:
            msg = f"{self.function.name}: grace must be zero or more"
            raise OperatorConfigError(msg)

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sources)

    @property
    def partitioned_by(self) -> dict[str, tuple[str, ...]]:
        """Per input, the columns this operator keeps its records by: every input by ``by``."""
        return {source.name: self.by for source in self.sources}

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(self.function.key)

    def initial_state(self) -> State:
        return {CLOCK: empty_clock()}

    @property
    def _tables(self) -> ProcessTables:
        names = tuple(s.name for s in self.sources)
        return ProcessTables(self.by, names, tuple(self.function.key), self.function.output)

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        for source in self.sources:
            missing = [c for c in self.by if c not in inputs[source.name].names]
            if missing:
                msg = f"{self.function.name}: input {source.name!r} has no key columns {missing}"
                raise BatchError(msg)
        return self.function.output

    def step(self, state: State, batch: Batch) -> Step:
        transition = Transition(state)
        arrivals = arrive(state.get(CLOCK), batch, list(self.sources), self.grace_ms)
        transition.replace(CLOCK, arrivals.clock, arrivals.clock_delta)
        letters = [arrivals.dead_letters]
        fresh: dict[str, pa.Table] = {}
        for source in self.sources:
            records, nulls = self._split_null_keys(arrivals.records[source.name], source)
            fresh[source.name] = records
            letters.append(nulls)
        horizon = arrivals.horizon
        for name, rows in fresh.items():
            if rows.num_rows:
                change(transition, buffer_name(name), IDENTITY, inserts=rows)
        sweep = arrivals.crossed(self._every())
        touched = self._touched(transition, fresh, horizon, sweep)
        changes = self._replay_keys(transition, touched, horizon)
        after, delta = settled(state, transition)
        return Step(after, changes, pa.concat_tables(letters), delta)

    # inputs

    def _every(self) -> int:
        return self.prune_every_ms or max(self.grace_ms, 1000)

    def _split_null_keys(self, records: pa.Table, source: Source) -> tuple[pa.Table, pa.Table]:
        null = _null_keys(records, self.by)
        if not null.any():
            return records, empty_dead_letters()
        bad = records.filter(pa.array(null))
        letters = dead_letters(
            source.name,
            bad.column(PARTITION).cast(pa.int32()).combine_chunks(),
            bad.column(OFFSET).cast(pa.int64()).combine_chunks(),
            NULL_KEY,
            bad.column(TIME).cast(pa.int64()).combine_chunks(),
        )
        return records.filter(pa.array(~null)), letters

    def _touched(
        self,
        transition: Transition,
        fresh: dict[str, pa.Table],
        horizon: int | None,
        sweep: bool,
    ) -> list[tuple[Any, ...]]:
        """The keys to replay: those with new records, those with a timer due, and on a sweep
        (once per period of event time) every key with state or a buffer, to fold them."""
        parts = [rows.select(list(self.by)) for rows in fresh.values() if rows.num_rows]
        keys = transition.table(KEYS)
        if keys is not None and keys.num_rows and horizon is not None:
            if sweep:
                parts.append(keys.select(list(self.by)))
            else:
                due = pc.less_equal(keys.column(NEXT_TIMER), horizon).fill_null(False)
                parts.append(keys.filter(due).select(list(self.by)))
        found: dict[tuple[Any, ...], None] = {}
        for part in parts:
            columns = [part.column(c).to_pylist() for c in self.by]
            found.update(dict.fromkeys(zip(*columns, strict=True)))
        return sorted(found, key=repr)

    # replay

    def _replay_keys(
        self, transition: Transition, touched: list[tuple[Any, ...]], horizon: int | None
    ) -> pa.Table:
        output = self.function.output
        if not touched:
            return combine([], output)
        tables = self._tables
        probe = tables.probe(transition, touched)
        bases = tables.bases(transition, probe)
        events = tables.events(transition, probe)
        owners = [_owner(k) for k in touched]
        entries = tables.entries(transition, owners)
        codec = RowCodec(output)
        outcomes: dict[tuple[Any, ...], KeyOutcome] = {}
        changed: dict[tuple[Any, ...], str | None] = {}
        claimed: dict[tuple[Any, ...], str] = {}
        for key, owner in zip(touched, owners, strict=True):
            base, boundary = bases.get(key, (None, None))
            mine = sorted(events.get(key, []))
            values = dict(zip(self.by, key, strict=True))
            outcome = replay(self.function, values, base, boundary, mine, horizon)
            outcomes[key] = outcome
            rows = entries.setdefault(owner, {})
            for emission in [*outcome.folded, *outcome.current]:
                other = claimed.setdefault(emission.key, owner)
                if other != owner:
                    self._collision(emission.key, other, owner)
            changed.update(settle(rows, outcome.folded, outcome.current, codec))
        self._check_claims(transition, claimed)
        tables.write_keys(transition, probe, touched, outcomes)
        tables.write_buffers(transition, touched, outcomes)
        tables.write_rows(transition, owners, entries)
        return self._changes(changed, codec)

    def _collision(self, key: tuple[Any, ...], first: str, second: str) -> None:
        msg = (
            f"{self.function.name}: keys {first} and {second} both emitted the output key "
            f"{key}; an output row must belong to one key (make {list(self.by)} part of the "
            "output key, or emit per key rows that only it can emit)"
        )
        raise BatchError(msg)

    def _check_claims(self, transition: Transition, claimed: dict[tuple[Any, ...], str]) -> None:
        rows = transition.table(ROWS)
        if rows is None or rows.num_rows == 0 or not claimed:
            return
        key = list(self.function.key)
        probe = pa.Table.from_pylist(
            [dict(zip(key, k, strict=True)) for k in claimed],
            schema=pa.schema([self.function.output.field(c) for c in key]),
        )
        for row in rows.filter(key_mask(rows, key, probe)).to_pylist():
            emitted = tuple(row[c] for c in key)
            if row[OWNER] != claimed[emitted]:
                self._collision(emitted, row[OWNER], claimed[emitted])

    def _changes(self, changed: dict[tuple[Any, ...], str | None], codec: RowCodec) -> pa.Table:
        output = self.function.output
        key = list(self.function.key)
        written = [codec.decode(row) for row in changed.values() if row is not None]
        gone = [dict(zip(key, k, strict=True)) for k, row in changed.items() if row is None]
        try:
            rows = pa.Table.from_pylist(written, schema=output)
            keys = pa.Table.from_pylist(gone, schema=pa.schema([output.field(c) for c in key]))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            msg = f"{self.function.name} emitted a row that does not fit its output: {exc}"
            raise BatchError(msg) from None
        return combine([upserts(rows), deletes(keys, output)], output)


def _owner(key: tuple[Any, ...]) -> str:
    return json.dumps(list(key), separators=(",", ":"), default=str)


def _null_keys(table: pa.Table, by: tuple[str, ...]) -> np.ndarray:
    null = np.zeros(table.num_rows, dtype=bool)
    for name in by:
        null |= table.column(name).is_null().to_numpy(zero_copy_only=False)
    return null
