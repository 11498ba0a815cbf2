"""What the comparison before promotion covers for a forward-only candidate: the rows written
after the cut it started from.

Both tables were the live table at the cut (``streaming.versions.forward_only``), so a key that
neither version wrote after it has the same row in both, and the rows that can differ are those
of the keys either one wrote since. Those keys are found by difference with the table at the
cut, read from the candidate's own start (the commit ending its copy): the keys whose row
either table added, changed or deleted since. A key both rewrote with the row it had compares
equal either way and is left out.

The table at the cut stays readable while its files do: the cleanup keeps the files of every
version that was current within its retention window (``streaming.delta.cleanup``). Past that,
a file the candidate replaced since may be gone, and the whole tables are compared (the rows
before the cut are the same in both, so the verdict on differences is the same; only the counts
take in every row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from streaming.delta.log_replay import replay
from streaming.delta.table_reader import read_spark
from streaming.delta.table_store import TableLocation, TableStore
from streaming.deployment import Deployment
from streaming.errors import TableError
from streaming.versions.forward_only import ForwardOnlyStart

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def rows_after_cut(
    spark: SparkSession,
    candidate: Deployment,
    start: ForwardOnlyStart,
    old: DataFrame,
    new: DataFrame,
    keys: Sequence[str],
) -> tuple[DataFrame, DataFrame, str]:
    """``old`` and ``new`` (the live and the candidate table at a shared position) reduced to
    the keys either wrote after ``start``'s cut, and a line saying what was compared."""
    assert start.table_version is not None, "a complete start has its table version"
    if not _readable(candidate, start.table_version):
        scope = (
            f"all rows: the table at the cut ({start.describe()}) is no longer readable, its "
            "files were cleaned up; the rows before it are the same in both"
        )
        return old, new, scope
    cut = read_spark(spark, candidate.table_path, start.table_version)
    changed = _changed_keys(old, cut, keys).union(_changed_keys(new, cut, keys)).distinct()
    scope = f"the keys either version wrote after the cut ({start.describe()})"
    return (
        old.join(changed, list(keys), "left_semi"),
        new.join(changed, list(keys), "left_semi"),
        scope,
    )


def _changed_keys(now: DataFrame, cut: DataFrame, keys: Sequence[str]) -> DataFrame:
    """The keys whose row differs between ``now`` and ``cut`` (added, changed or deleted)."""
    if now.columns != cut.columns:  # not comparable row by row: every key counts
        return now.select(*keys).union(cut.select(*keys))
    return now.subtract(cut).select(*keys).union(cut.subtract(now).select(*keys))


def _readable(deployment: Deployment, version: int) -> bool:
    """Whether every file the table's ``version`` references is still there."""
    store = TableStore(TableLocation.of(deployment.table_path))
    try:
        files = replay(store, up_to=version).files.values()
    except TableError:
        return False
    names = {e.path for e in files}
    names |= {
        e.deletion_vector.file_name
        for e in files
        if e.deletion_vector is not None and e.deletion_vector.storage_type == "u"
    }
    return names <= {name for name, _, _ in store.list()}
