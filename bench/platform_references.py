"""Tables of the platform benchmark checked against an independent plain-Python replay.

Each check reads the table as of its latest commit and replays the commit's input prefix with
the reference functions the tests use (``bench.support.reference``), which share no code with
the pipelines. Pipelines without a check here are covered by their integration tests and by the
whole-demo test; the benchmark says which tables it checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from bench.support.reference import Record, customers_state, replay, spend_state, table_state
from streaming.delta.table_reader import latest_commit, read_arrow
from streaming.deployment import Deployment
from streaming.settings import Settings

Reference = Callable[[Iterable[Record]], dict[str, dict[str, Any]]]

# pipeline -> (its input topic, its key column, the reference over that topic's records)
CHECKED: dict[str, tuple[str, str, Reference]] = {
    "customers": ("customers", "customer_id", customers_state),
    "customer_spend": ("transactions", "customer_id", spend_state),
}


def check_table(settings: Settings, pipeline: str, version: str) -> str:
    """``equal``, or what differs, for the table at its latest commit; ``not checked`` for a
    pipeline without a reference here."""
    if pipeline not in CHECKED:
        return "not checked"
    topic, key, reference = CHECKED[pipeline]
    path = Deployment(pipeline, version, settings.home).table_path
    commit = latest_commit(path)
    if commit is None:
        return "no commit"
    ends = commit.end_offsets.get(topic, {})
    records = [
        r
        for r in replay(settings.kafka.bootstrap_servers, topic)
        if r.offset < ends.get(r.partition, 0)
    ]
    expected = reference(records)
    actual = table_state(read_arrow(path, commit.table_version).to_pylist(), key)
    if actual == expected:
        return f"equal ({len(expected)} rows)"
    missing = len(expected.keys() - actual.keys())
    extra = len(actual.keys() - expected.keys())
    differ = sum(1 for k in expected.keys() & actual.keys() if expected[k] != actual[k])
    return f"DIFFERS: {missing} missing, {extra} extra, {differ} differ"
