"""The authoring API: what a pipeline is (topics, value schema, transform, table kind, version),
how pipelines are found (the registry) and fingerprinted. The base of ``streaming``: it imports no
other ``streaming`` subpackage.

A pipeline module declares ``PIPELINE = Pipeline(...)`` with one of the table kinds and a
per-batch transform, or with a stateful plan built from ``Topic`` declarations.
"""

from streaming.define.pipeline import Pipeline
from streaming.define.plan import Plan
from streaming.define.table_kinds import Accumulate, ChangeRows, LatestPerKey, TableKind
from streaming.define.topic import Topic

__all__ = ["Accumulate", "ChangeRows", "LatestPerKey", "Pipeline", "Plan", "TableKind", "Topic"]
