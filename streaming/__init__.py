"""Kafka -> Spark Structured Streaming -> compacted Delta tables. Knows nothing about Dagster.

Run a pipeline with ``python -m streaming run NAME`` (or ``kappa run NAME``). Nothing here opens
a SparkSession or a broker connection at import time.
"""

from streaming.deployment import Deployment
from streaming.errors import DataLossError, StreamingError
from streaming.pipeline import Accumulate, LatestPerKey, Pipeline

__all__ = [
    "Accumulate",
    "DataLossError",
    "Deployment",
    "LatestPerKey",
    "Pipeline",
    "StreamingError",
]
