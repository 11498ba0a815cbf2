"""Stateful stream operators: pure steps from (state, batch) to (state', changes, dead letters).

The stateful-function operator (``KeyedProcess``) runs a function the user writes over per-key
state (``keyed_state``), replaying a key's records when an earlier one arrives (``key_replay``).

Every operator's output table equals its definition evaluated on exactly the log prefix the
batches so far complete, whatever the batch boundaries, restarts or partition read order. No
Spark, Kafka, Delta or Dagster here: inputs and outputs are pyarrow Tables.
"""

from streaming.operators.aggregations import Aggregation, Count, Latest, Max, Mean, Min, Sum
from streaming.operators.asof_join import AsOfJoin
from streaming.operators.batch import DELETE, OFFSET, PARTITION, TIMESTAMP, Batch, Source
from streaming.operators.compaction import Compaction
from streaming.operators.errors import BatchError, OperatorConfigError, OperatorError
from streaming.operators.event_time import DEAD_LETTER_SCHEMA, LATE
from streaming.operators.group_aggregate import GroupAggregate
from streaming.operators.interval_join import IntervalJoin
from streaming.operators.key_replay import Delete, KeyedFunction
from streaming.operators.keyed_process import KeyedProcess
from streaming.operators.keyed_state import KeyState, ListOf, MapOf, StateSpec, Value
from streaming.operators.step import Operator, Regrouping, Step, regrouping
from streaming.operators.stream_rows import StreamRows
from streaming.operators.user_aggregation import Aggregator
from streaming.operators.window_aggregate import FinalWindows, WindowedAggregate
from streaming.operators.windows import Hopping, Session, Sliding, Tumbling

__all__ = [
    "DEAD_LETTER_SCHEMA",
    "DELETE",
    "LATE",
    "OFFSET",
    "PARTITION",
    "TIMESTAMP",
    "Aggregation",
    "Aggregator",
    "AsOfJoin",
    "Batch",
    "BatchError",
    "Compaction",
    "Count",
    "Delete",
    "FinalWindows",
    "GroupAggregate",
    "Hopping",
    "IntervalJoin",
    "KeyState",
    "KeyedFunction",
    "KeyedProcess",
    "Latest",
    "ListOf",
    "MapOf",
    "Max",
    "Mean",
    "Min",
    "Operator",
    "OperatorConfigError",
    "OperatorError",
    "Regrouping",
    "Session",
    "Sliding",
    "Source",
    "StateSpec",
    "Step",
    "StreamRows",
    "Sum",
    "Tumbling",
    "Value",
    "WindowedAggregate",
    "regrouping",
]
