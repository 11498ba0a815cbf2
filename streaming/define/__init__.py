"""The authoring API: what a pipeline is (topics, value schema, transform, table kind, version),
how pipelines are found (the registry) and fingerprinted. The base of ``streaming``: it imports no
other ``streaming`` subpackage.

A pipeline module declares ``PIPELINE = Pipeline(...)`` with one of the table kinds.
"""

from streaming.define.pipeline import Pipeline
from streaming.define.table_kinds import Accumulate, LatestPerKey, TableKind

__all__ = ["Accumulate", "LatestPerKey", "Pipeline", "TableKind"]
