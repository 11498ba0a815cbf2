"""The operator shape: a pure step from (state, batch) to (state', changes, dead letters)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

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
