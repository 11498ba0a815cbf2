"""What the keyed operators over one input share (compaction, aggregation per key, windowed
aggregation): the input, the key columns their state is kept by, a clock of the input's
partitions, and the start of every step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from streaming.operators.batch import Batch, Source
from streaming.operators.errors import OperatorConfigError
from streaming.operators.event_time import CLOCK, Arrivals, arrive, empty_clock
from streaming.operators.tables import Transition
from streaming.state import State


@dataclass(frozen=True)
class KeyedInput:
    """An operator over the input ``source`` that keeps and combines its records by
    ``key_columns`` (the output key, or its first columns)."""

    source: Source
    key_columns: tuple[str, ...]

    # The operator as the message refusing it without key columns names it.
    described_as: ClassVar[str] = "a keyed operator"

    def __post_init__(self) -> None:
        if not self.key_columns:
            msg = f"{self.described_as} needs at least one key column"
            raise OperatorConfigError(msg)

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.source.name,)

    @property
    def partitioned_by(self) -> dict[str, tuple[str, ...]]:
        """Per input, the columns this operator keeps and combines its records by: a state split
        by input partition holds all of a key's records when each input is keyed by them."""
        return {self.source.name: self.key_columns}

    @property
    def key(self) -> tuple[str, ...]:
        return self.key_columns

    def initial_state(self) -> State:
        return {CLOCK: empty_clock()}

    def begin(
        self, state: State, batch: Batch, grace_ms: int | None
    ) -> tuple[Arrivals, Transition]:
        """The start of a step: what the batch brings (``grace_ms`` None: nothing is late), and
        the transition from ``state`` with the clock already moved."""
        arrivals = arrive(state.get(CLOCK), batch, [self.source], grace_ms)
        transition = Transition(state)
        transition.replace(CLOCK, arrivals.clock, arrivals.clock_delta)
        return arrivals, transition
