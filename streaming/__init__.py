"""The data plane and the version lifecycle: Kafka topics -> Spark Structured Streaming ->
compacted Delta tables, with versions side by side. Knows nothing about Dagster.

Where each step lives:

- ``streaming.define``: the authoring API (pipelines, table kinds, value schemas, the registry);
- ``streaming.kafka``: the source, reading exact offset ranges and decoding values;
- ``streaming.delta``: the compacted table, dead letters, reading tables back;
- ``streaming.run``: running a deployment (``python -m streaming run NAME``);
- ``streaming.versions``: live pointer, comparison, promotion, retention and retiring;
- ``streaming.settings`` and ``streaming.home``: the configuration and the platform home's layout.

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
