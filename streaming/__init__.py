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

import warnings
from typing import Any

from streaming.define import Pipeline, Topic
from streaming.deployment import Deployment
from streaming.errors import DataLossError, KappaError

__all__ = ["DataLossError", "Deployment", "KappaError", "Pipeline", "Topic"]

# The per-batch transform form's table kinds, deprecated with it.
_DEPRECATED = ("Accumulate", "LatestPerKey")


def __getattr__(name: str) -> Any:
    if name not in _DEPRECATED:
        raise AttributeError(f"module 'streaming' has no attribute {name!r}")
    warnings.warn(
        f"streaming.{name} is the per-batch transform form's table kind, which is deprecated: "
        "declare the pipeline with a plan (streaming.define), or import "
        f"streaming.define.{name}",
        DeprecationWarning,
        stacklevel=2,
    )
    import streaming.define

    return getattr(streaming.define, name)
