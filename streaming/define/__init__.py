"""The authoring API: what a pipeline is (topics, value schema, transform, table kind, version),
how pipelines are found (the registry) and fingerprinted. Below it in ``streaming`` are only the
foundation modules, the operators its plans are built from and their state
(``tests/unit/test_dependencies.py``).

A pipeline module declares ``PIPELINE = Pipeline(...)`` with one of the table kinds and a
per-batch transform, or with a stateful plan built from ``Topic`` declarations.
"""

from streaming.define.pipeline import Pipeline
from streaming.define.plan import Plan
from streaming.define.table_kinds import Accumulate, ChangeRows, LatestPerKey, TableKind
from streaming.define.topic import Topic
from streaming.operators import Count, Hopping, Latest, Max, Mean, Min, Session, Sum, Tumbling

__all__ = [
    "Accumulate",
    "ChangeRows",
    "Count",
    "Hopping",
    "Latest",
    "LatestPerKey",
    "Max",
    "Mean",
    "Min",
    "Pipeline",
    "Plan",
    "Session",
    "Sum",
    "TableKind",
    "Topic",
    "Tumbling",
]
