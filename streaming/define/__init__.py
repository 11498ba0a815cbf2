"""The authoring API: what a pipeline is (its topics, its plan, the table it keeps and the topic
it publishes), how pipelines are found (the registry) and fingerprinted. Below it in
``streaming`` are only the foundation modules, the operators its plans are built from and their
state (``tests/unit/test_dependencies.py``).

A pipeline module declares ``PIPELINE = Pipeline(name=..., version=..., plan=...)``. Topics are
declared once (``Topic``: key, value schema, event time, what a null value means) and a plan is
built from them with one call per operator, then row-wise columns and filters::

    CUSTOMERS.table().rows()                               # the latest row per key
    TRANSACTIONS.stream().group_by("customer_id", aggregations={"n": Count()})
    TRADES.stream().group_by("ticker", window=Tumbling(timedelta(minutes=1)), aggregations=...)
    TRADES.stream().group_by("ticker", window=Sliding(timedelta(minutes=5)), aggregations=...)
    TRANSACTIONS.stream().join_as_of(CUSTOMERS.table(), on=..., key=..., columns=...)
    CLICKS.stream().group_by("user_id", window=Session(timedelta(minutes=30)), aggregations=...)
    CLICKS.stream().join_within(SEARCHES.stream(), on=..., key=..., other_key=..., how="left",
                                columns=..., before=timedelta(minutes=10))  # every match
    TRANSACTIONS.stream().process(history)                 # a function over per-key state

where ``history`` is a function the user writes over per-key state::

    @stateful(by="customer_id", key="txn_id", emits="txn_id string, reason string",
              state={"regions": MapOf(str, int), "payments": Value(int, default=0)})
    def history(txn, state):              # per customer, in event-time order
        ...                               # read and write state.regions; yield rows

The function sees each record as a dict and its key's state: ``Value``, ``MapOf`` and
``ListOf`` declarations (typed, each with an optional event-time ``ttl``), ``state.timers``
(event-time timers, handled by ``timer=``), ``state.key``, ``state.time``, ``state.input`` and
``state.tombstone`` (a changelog input's deletion). It returns None, a row, ``Delete(**key)``
or an iterable of them. The platform replays a key's records within grace when an earlier one
arrives and corrects the rows it emitted, so the table is the function run in event-time order
on every log prefix; late records go to the dead letters. See ``streaming.define.stateful``.

Aggregations are ``Count``, ``Sum``, ``Min``, ``Max``, ``Mean``, ``Latest`` or an
``Aggregator`` the user writes (``initial``, ``add``, ``merge``, ``result``; its state JSON).

Times are ``timedelta``: windows, grace, retention, join bounds, state ``ttl``. A pipeline
publishes its table's changes to a topic declared like its inputs: ``publish=Topic("name")``;
a stream's rows (``topic.stream().rows()``) go on as records of other topics, keyed by any
column or routed by one: ``publish=Stream(TOPIC, key="column")``.
The per-batch ``transform`` form (with a table kind: ``LatestPerKey``, ``Accumulate``) still
runs, deprecated.
"""

from streaming.define.pipeline import Pipeline
from streaming.define.plan import Plan
from streaming.define.stateful import Stateful, stateful
from streaming.define.stream_output import Stream
from streaming.define.table_kinds import Accumulate, ChangeRows, LatestPerKey, TableKind
from streaming.define.topic import Topic
from streaming.operators import (
    Aggregator,
    Count,
    Delete,
    Hopping,
    KeyState,
    Latest,
    ListOf,
    MapOf,
    Max,
    Mean,
    Min,
    Session,
    Sliding,
    Sum,
    Tumbling,
    Value,
)

__all__ = [
    "Accumulate",
    "Aggregator",
    "ChangeRows",
    "Count",
    "Delete",
    "Hopping",
    "KeyState",
    "Latest",
    "LatestPerKey",
    "ListOf",
    "MapOf",
    "Max",
    "Mean",
    "Min",
    "Pipeline",
    "Plan",
    "Session",
    "Sliding",
    "Stateful",
    "Stream",
    "Sum",
    "TableKind",
    "Topic",
    "Tumbling",
    "Value",
    "stateful",
]
