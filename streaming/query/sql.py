"""SQL over the tables: ``kappa sql "SELECT ..."`` and :func:`run_sql` (Arrow).

Table names are pipeline names (the live version) or ``pipeline@version``
(``streaming.query.references``). The engine is Apache DataFusion inside delta-rs (deltalake's
``QueryBuilder``): it applies deletion vectors, prunes files by their statistics and is already
the platform's table reader (``bench/query_bench.py`` measures it against polars).

Which snapshot of each table is read:

- one table: its newest batch commit;
- ``consistent``: every table at one cut of the log (``streaming.query.consistent``), or refused;
- ``latest``: every table at its newest commit, each with its own offsets (said in the result);
- several tables and neither: refused, so that cuts are never mixed silently.

The result carries what was read: per table the deployment, the Delta version and the input
offsets of its commit; for a consistent read the cut, how old it is and how many records of the
log it is behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from deltalake import QueryBuilder

from streaming.define.registry import pipeline_names
from streaming.delta.commit_info import Commit
from streaming.delta.table_reader import latest_commit_of, open_table
from streaming.errors import BrokerUnavailableError, QueryError
from streaming.kafka import offsets as off
from streaming.kafka.cuts import CutLog
from streaming.kafka.log import KafkaLog
from streaming.query.consistent import CutChoice, Source, choose_cut
from streaming.query.references import TableRef, table_refs
from streaming.settings import Settings
from streaming.versions.live_pointer import resolve_deployment


@dataclass(frozen=True)
class TableRead:
    """One table as a query read it."""

    name: str  # as the SQL names it
    deployment: str
    table_version: int
    offsets: off.OffsetMap  # the input offsets its commit reflects ({} before any batch)


@dataclass(frozen=True)
class CutRead:
    """The cut a consistent read used, and how far behind the newest data it is."""

    id: int
    at_ms: int
    offsets: off.OffsetMap  # on the topics of the tables read
    age_s: float
    records_behind: int
    behind: off.OffsetMap  # records behind, per topic and partition
    behind_what: str  # "the log's end" (measured now) or "the newest cut" (broker unreachable)


@dataclass(frozen=True)
class QueryResult:
    table: pa.Table
    reads: tuple[TableRead, ...]
    cut: CutRead | None  # set by a consistent read
    truncated: bool  # more rows than the limit

    def describe(self) -> str:
        """What was read, in one line (``kappa sql`` prints it on stderr)."""
        tables = ", ".join(f"{r.name}={r.deployment}@{r.table_version}" for r in self.reads)
        if self.cut is not None:
            c = self.cut
            return (
                f"consistent at cut #{c.id} taken {c.age_s:.1f} s ago, {c.records_behind:,} "
                f"records behind {c.behind_what}; offsets {off.dumps(c.offsets)}; read {tables}"
            )
        offsets = "; ".join(f"{r.name} {off.dumps(r.offsets)}" for r in self.reads)
        if len(self.reads) > 1:
            return f"latest: each table at its newest commit, NOT one cut: {offsets}"
        if not self.reads:
            return "no table read"
        return f"offsets {off.dumps(self.reads[0].offsets)}; read {tables}"


def run_sql(
    settings: Settings,
    sql: str,
    *,
    consistent: bool = False,
    latest: bool = False,
    limit: int | None = None,
    max_lag_s: float | None = None,
) -> QueryResult:
    """Run ``sql`` over the tables it names (see the module docstring for which snapshots).

    Raises:
        QueryError: bad SQL, an unknown table, several tables without ``consistent`` or
            ``latest``, or no consistent cut (``NoConsistentCutError``).
    """
    if consistent and latest:
        msg = "choose one of --consistent (one cut of the log) and --latest (newest commits)"
        raise QueryError(msg)
    names = pipeline_names(settings.pipelines)
    rewritten, refs = table_refs(sql, names)
    if len(refs) > 1 and not (consistent or latest):
        listed = ", ".join(r.sql_name for r in refs)
        msg = (
            f"the query reads {len(refs)} tables ({listed}): add --consistent to read them at "
            "one cut of the log, or --latest to read each at its newest commit"
        )
        raise QueryError(msg)
    sources = {r.sql_name: _source(settings, r) for r in refs}
    cut = None
    if consistent:
        reads, cut = _at_cut(settings, sources, max_lag_s)
    else:
        reads = {name: _newest(name, source) for name, source in sources.items()}
    builder = QueryBuilder()
    for name, source in sources.items():
        builder.register(name, source.table)
    table, truncated = _execute(builder, rewritten, limit, names)
    return QueryResult(table, tuple(reads.values()), cut, truncated)


def _source(settings: Settings, ref: TableRef) -> Source:
    deployment = resolve_deployment(settings, ref.pipeline, ref.version)
    return Source(deployment, open_table(deployment.table_path))


def _newest(name: str, source: Source) -> TableRead:
    commit = latest_commit_of(source.table)  # brings the table to its newest version
    offsets = commit.end_offsets if commit else {}
    return TableRead(name, source.deployment.id, source.table.version(), offsets)


def _at_cut(
    settings: Settings, sources: dict[str, Source], max_lag_s: float | None
) -> tuple[dict[str, TableRead], CutRead]:
    cuts = CutLog(settings.home.cuts).cuts()
    lag = settings.cuts.max_lag_s if max_lag_s is None else max_lag_s
    choice = choose_cut(sources, cuts, lag)
    reads = {}
    for name, source in sources.items():
        commit = choice.commits[name]
        _travel(source, commit)
        reads[name] = TableRead(
            name, source.deployment.id, commit.table_version, commit.end_offsets
        )
    return reads, _cut_read(settings, choice)


def _travel(source: Source, commit: Commit) -> None:
    try:
        source.table.load_as_version(commit.table_version)
    except Exception as exc:  # delta-rs raises its own error types, or OSError
        msg = (
            f"{source.deployment.id} cannot be read at version {commit.table_version} (the "
            f"consistent cut's commit): {exc}"
        )
        raise QueryError(msg) from None


def _cut_read(settings: Settings, choice: CutChoice) -> CutRead:
    cut, newest, commits = choice.cut, choice.newest, choice.commits
    topics = {t: sorted(p) for c in commits.values() for t, p in c.end_offsets.items()}
    at = cut.on(topics) or {}
    try:
        with KafkaLog.of(settings.kafka, timeout_s=5.0) as log:
            end, what = log.latest(topics), "the log's end"
    except BrokerUnavailableError:
        end, what = newest.on(topics) or at, "the newest cut"
    behind = {
        t: {p: max(0, end.get(t, {}).get(p, o) - o) for p, o in parts.items()}
        for t, parts in at.items()
    }
    records = sum(n for parts in behind.values() for n in parts.values())
    return CutRead(cut.id, cut.at_ms, at, choice.age_s(), records, behind, what)


def _execute(
    builder: QueryBuilder, sql: str, limit: int | None, names: list[str]
) -> tuple[pa.Table, bool]:
    try:
        reader = builder.execute(sql)
        batches: list[pa.RecordBatch] = []
        rows = 0
        while limit is None or rows <= limit:
            try:
                batch = pa.record_batch(reader.read_next_batch())
            except StopIteration:
                break
            batches.append(batch)
            rows += batch.num_rows
        schema = pa.schema(reader.schema)
    except Exception as exc:  # DataFusion reports planning and execution errors as exceptions
        if isinstance(exc, QueryError):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = (
            f"SQL failed: {first}; tables are pipeline names (the live version) or "
            f"pipeline@version: {', '.join(names)}"
        )
        raise QueryError(msg) from None
    table = pa.Table.from_batches(batches, schema=schema)
    if limit is not None and table.num_rows > limit:
        return table.slice(0, limit), True
    return table, False


def sql_arrow(settings: Settings, sql: str, **options: Any) -> pa.Table:
    """:func:`run_sql`'s rows alone, as an Arrow table."""
    return run_sql(settings, sql, **options).table


__all__ = ["CutRead", "QueryResult", "TableRead", "run_sql", "sql_arrow"]
