"""The operator shape: a pure step from (state, batch) to (state', changes, dead letters), and
what the runtime reads of an operator to split its state (``streaming.run.copartition``) and,
for an operator that regroups, to run a batch in two halves around a shuffle
(``streaming.run.group_task``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import pyarrow as pa

from streaming.operators.batch import Batch
from streaming.state import State, StateDelta


@dataclass(frozen=True)
class Step:
    """The result of applying one batch.

    Attributes:
        state: the operator state after the batch (named Arrow tables).
        changes: upserts and deletes against the output table, at most one per output key.
        dead_letters: records not applied (reason ``late``).
        delta: how ``state`` differs from the state before, for the state store.
    """

    state: State
    changes: pa.Table
    dead_letters: pa.Table
    delta: StateDelta


class Operator(Protocol):
    """A stateful operator. ``step`` never mutates its arguments."""

    @property
    def inputs(self) -> tuple[str, ...]:
        """The input names the operator reads from ``Batch.records``."""
        ...

    @property
    def key(self) -> tuple[str, ...]:
        """The output table's key columns."""
        ...

    @property
    def partitioned_by(self) -> Mapping[str, tuple[str, ...]] | None:
        """Per input, the columns the operator keeps and combines that input's records by, so
        that a state split by input partition holds all of a key's records when each input is
        keyed by them; None when the operator cannot say (its state is one partition)."""
        ...

    def initial_state(self) -> State:
        """The state before the first batch."""
        ...

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        """The output rows' schema for inputs whose records have these schemas (by input name).

        Raises ``OperatorError`` when an input lacks a column the operator needs.
        """
        ...

    def step(self, state: State, batch: Batch) -> Step:
        """Apply one batch to ``state``."""
        ...


@runtime_checkable
class Regrouping(Operator, Protocol):
    """An operator that re-keys its inputs (``streaming.define.chaining.Chained``). When its
    state splits by input partition, the runtime runs a batch in two halves: :meth:`upstream`
    per input partition, a shuffle of what it moved to :meth:`buckets` of groups, then
    :meth:`downstream` per bucket. ``step`` is both halves in one."""

    def upstream(self, state: State, batch: Batch) -> Step:
        """The half where the inputs' partitions are; its ``changes`` are what moved between
        groups, for :meth:`downstream`."""
        ...

    def downstream(self, state: State, moved: pa.Table) -> Step:
        """The half where the groups are: fold what :meth:`upstream` moved into them."""
        ...

    def buckets(self, moved: pa.Table, count: int) -> dict[int, pa.Table]:
        """``moved`` split into ``count`` buckets by group, the same bucket for a group in
        every batch."""
        ...


def regrouping(operator: Operator) -> Regrouping:
    """``operator`` as the regrouping operator whose halves a batch runs."""
    if not isinstance(operator, Regrouping):
        msg = f"{type(operator).__name__} does not regroup: a batch runs it in one step"
        raise TypeError(msg)
    return operator
