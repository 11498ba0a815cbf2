"""SQL over the tables refuses, in one line saying what to do, what it cannot answer as asked:
several tables without saying how to align them, bad SQL, an unknown table."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import CommitProperties, write_deltalake

from bench.support.settings import private_settings
from streaming.delta.commit_info import commit_info
from streaming.deployment import Deployment
from streaming.errors import KappaError, QueryError
from streaming.query import run_sql


@pytest.fixture
def settings(tmp_path):
    settings = private_settings(tmp_path / "home")
    for name, topic, column in (
        ("customers", "customers", "customer_id"),
        ("fraud_alerts", "x", "txn_id"),
    ):
        info = commit_info(0, {topic: {"0": 3}}, f"{name}__v1", "f")
        write_deltalake(
            str(Deployment(name, "v1", settings.home).table_path),
            pa.table({column: ["a", "b", "c"]}),
            commit_properties=CommitProperties(custom_metadata=info),
        )
    return settings


def test_one_table_reads_its_newest_commit_and_says_which(settings):
    result = run_sql(settings, "SELECT count(*) AS n FROM customers")
    assert result.table.to_pylist() == [{"n": 3}]
    assert result.describe() == 'offsets {"customers":{"0":3}}; read customers=customers__v1@0'


def test_several_tables_need_consistent_or_latest(settings):
    sql = "SELECT * FROM customers, fraud_alerts"
    with pytest.raises(QueryError, match=r"reads 2 tables .* add --consistent .* or --latest"):
        run_sql(settings, sql)
    latest = run_sql(settings, sql, latest=True, limit=4)
    assert (latest.table.num_rows, latest.truncated) == (4, True)
    assert latest.describe().startswith("latest: each table at its newest commit, NOT one cut")


def test_bad_sql_and_unknown_tables_are_one_line(settings):
    with pytest.raises(
        QueryError, match=r"^SQL failed: .*nope.* not found; tables are .*customers"
    ):
        run_sql(settings, "SELECT * FROM nope")
    with pytest.raises(QueryError, match=r"^SQL failed: SQL error: ParserError"):
        run_sql(settings, "SELEC 1 FROM customers")
    with pytest.raises(KappaError, match=r"no table at .*customers__v9"):
        run_sql(settings, "SELECT * FROM customers@v9")
