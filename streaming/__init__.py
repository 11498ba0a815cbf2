"""The data plane and the version lifecycle: Kafka topics -> Spark Structured Streaming ->
compacted Delta tables, with versions side by side. Knows nothing about Dagster.

Where each step lives, each importing only the ones above it (and the foundation:
``streaming.settings``, ``streaming.home``, ``streaming.errors`` and the small modules beside
them):

- ``streaming.state``: durable operator state (changelogs and snapshots);
- ``streaming.operators``: the stateful operators, pure steps over a batch and its state;
- ``streaming.define``: the authoring API (pipelines, topics, plans, table kinds, the registry);
- ``streaming.kafka``: the source, reading exact offset ranges and decoding values;
- ``streaming.delta``: the compacted table, dead letters, reading tables back;
- ``streaming.spark``: the SparkSession;
- ``streaming.deployment``: what a deployment is and owns, its checkpoint, lock and pinned code;
- ``streaming.versions``: live pointer, comparison, promotion, retention and retiring;
- ``streaming.run``: running a deployment (``python -m streaming run NAME``).

Nothing here opens a SparkSession or a broker connection, or reads the environment, at import.
"""

from streaming.define import Accumulate, LatestPerKey, Pipeline
from streaming.deployment import Deployment
from streaming.errors import DataLossError, KappaError

__all__ = [
    "Accumulate",
    "DataLossError",
    "Deployment",
    "KappaError",
    "LatestPerKey",
    "Pipeline",
]
