"""Whether a stateful plan can keep one state partition per input partition (Kafka Streams'
tasks), and what to do when it cannot.

A plan's state is split by input partition when every record the operator keeps or combines under
one state key comes from the same partition number of its inputs: each input is read by the
columns its Kafka key fills (the producer's partitioner puts equal keys in one partition), and
the inputs have the same number of partitions. Then partition ``p`` of every input, and the state
of ``p``, make one independent task: its stream time alone decides lateness, pruning and when a
window closes, so the result depends only on each partition's own order, whatever the batch
sizes and whatever tasks run where.

- Co-partitioned (``BY_INPUT_PARTITION``): the built-in operators whose keys are the inputs'
  Kafka keys (an as-of or interval join on the key both topics are keyed by, a window or
  aggregate grouped by at least the key, the latest row per key).
- Not co-partitioned: refused before the query starts, with what to do (produce the topic keyed
  by the column, give the inputs the same partition count, or re-key it through a topic with a
  pipeline of its own: ``publish=Stream(topic, key=column)``, :func:`rekeying`). An internal
  repartition topic would be a second exactly-once hop per record (a transactional producer per
  task, a topic that must keep every record for exact replays), doubling the log's bytes and a
  batch's latency; declared as a pipeline, that cost is visible.
- An operator the platform cannot relate to its inputs' keys (its ``partitioned_by``, input
  name -> columns, is None): one state partition (``WHOLE``), the whole batch in one task on an
  executor, which is correct whatever the keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from streaming.define.plan import Plan
from streaming.errors import RunError
from streaming.operators import Operator


class CoPartitionError(RunError):
    """A plan's inputs are not co-partitioned; the message says what to do."""


class Partitioning(Enum):
    BY_INPUT_PARTITION = "by input partition"
    WHOLE = "whole"


@dataclass(frozen=True)
class StatePartitions:
    """How a plan's state is split, and the input partitions (0..count-1) when by partition."""

    partitioning: Partitioning
    count: int

    @property
    def by_partition(self) -> bool:
        return self.partitioning is Partitioning.BY_INPUT_PARTITION


def keyed_by(operator: Operator) -> Mapping[str, tuple[str, ...]] | None:
    """Per input, the columns the operator keeps and combines that input's records by, as it
    declares them (``partitioned_by``); None for one state partition."""
    declared = operator.partitioned_by
    if declared is None:
        return None
    return {name: tuple(columns) for name, columns in dict(declared).items()}


def state_partitions(plan: Plan, partition_counts: Mapping[str, int]) -> StatePartitions:
    """How ``plan``'s state is split, given each input topic's partition count.

    Raises:
        CoPartitionError: the inputs are not co-partitioned (the message says what to do).
    """
    keys = keyed_by(plan.operator)
    if keys is None:
        return StatePartitions(Partitioning.WHOLE, 1)
    problems = []
    rekeyed: list[str] = []
    for topic in plan.inputs:
        columns = keys.get(topic.name, ())
        joined = len(plan.inputs) > 1
        # A join matches records by its columns: they must be exactly the Kafka key on each side.
        # A single input's state keys must include the key, so one key's records meet.
        fits = columns == (topic.key,) if joined else topic.key in columns
        if not fits:
            problems.append(
                f"input {topic.name!r} is partitioned by its Kafka key {topic.key!r} but the "
                f"operator keeps its records by {list(columns)}"
            )
            if columns:
                rekeyed.append(rekeying(topic.name, columns[0]))
    counts = {topic.name: partition_counts[topic.name] for topic in plan.inputs}
    if len(set(counts.values())) > 1:
        problems.append(f"the inputs have different partition counts {counts}")
    if problems:
        msg = (
            "the plan's inputs are not co-partitioned, so its state cannot be split by input "
            f"partition: {'; '.join(problems)}. Produce each input keyed by the column the "
            "operator uses, with the same number of partitions (and the same partitioner), or "
            "re-key the input through a topic first, in a pipeline of its own, and read that "
            f"topic instead: {'; '.join(rekeyed) or rekeying('<input>', '<column>')}"
        )
        raise CoPartitionError(msg)
    return StatePartitions(Partitioning.BY_INPUT_PARTITION, next(iter(counts.values())))


def rekeying(topic: str, column: str) -> str:
    """The pipeline a user writes to re-key ``topic`` by ``column`` through a topic."""
    target = f"{topic}_by_{column}".replace("<", "").replace(">", "")
    declared = topic.upper().replace("<", "").replace(">", "")
    return (
        f"Pipeline(name={target!r}, version='v1', plan={declared}.stream().rows(), "
        f"publish=Stream(Topic({target!r}, key={column!r}, value_schema=...), key={column!r})) "
        f"({declared}: the Topic declaring {topic!r})"
    )
