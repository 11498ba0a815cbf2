"""`kappa run --starting-offsets / --starting-timestamp` and `kappa diff`, end to end: the
tables hold exactly the topic from that position on; two versions of one log compare clean."""

from __future__ import annotations

import json
import time

import pytest

from bench.support.producing import customer_changes, send
from bench.support.reference import Record, customers_state, replay
from kappa.cli import main
from streaming.wait import wait_until
from tests.integration.helpers import table_rows
from tests.support.report_table import row_where, table_with

pytestmark = pytest.mark.integration


def _kappa(settings, capsys, *args: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    where = ["--home", str(settings.home), "--bootstrap-servers", settings.kafka.bootstrap_servers]
    code = main([*where, "--spark-master", "local[2]", *args])
    return code, capsys.readouterr().out


def _ends(records: list[Record]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for r in records:
        ends[r.partition] = max(ends.get(r.partition, 0), r.offset + 1)
    return ends


def test_starting_offsets_build_exactly_the_topic_from_there(spark, settings, broker, capsys):
    send(settings, customer_changes(1000, seed=70, keys=2000))
    log = replay(settings.kafka.bootstrap_servers, "customers")
    start = {p: end // 2 for p, end in _ends(log).items()}
    assert len(start) > 1 and all(s > 0 for s in start.values())
    spec = json.dumps({"customers": {str(p): o for p, o in start.items()}})
    args = ["run", "customers", "--starting-offsets", spec, "--until-caught-up"]
    assert _kappa(settings, capsys, *args)[0] == 0
    assert table_rows(settings, "customers") == customers_state(
        r for r in log if r.offset >= start[r.partition]
    )


def test_diff_of_two_versions_built_from_the_same_log(spark, settings, broker, capsys):
    send(settings, customer_changes(600, seed=73, keys=400))
    everything = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
    assert _kappa(settings, capsys, "run", "customers", "--until-caught-up")[0] == 0
    args = ["run", "customers", "--version", "v2", "--until-caught-up"]
    assert _kappa(settings, capsys, *args)[0] == 0
    code, out = _kappa(settings, capsys, "diff", "customers", "v1", "v2")
    assert code == 0, out
    assert "Comparison customers: v1 -> v2: PASSED" in out
    keys = table_with(out, "keys")
    assert row_where(keys, "keys", "in both")["count"] == str(len(everything))
    assert row_where(keys, "keys", "only old")["count"] == "0"
    assert row_where(keys, "keys", "only new")["count"] == "0"


def test_starting_timestamp_reads_from_the_first_record_at_or_after_it(
    spark, settings, broker, capsys
):
    send(settings, customer_changes(400, seed=71, keys=1000))
    before = _ends(replay(settings.kafka.bootstrap_servers, "customers"))
    # Every later record gets a producer timestamp after this instant.
    cut_ms = int(time.time() * 1000) + 1
    assert wait_until(lambda: time.time() * 1000 > cut_ms, timeout_s=5, interval_s=0.001)
    send(settings, customer_changes(400, seed=72, keys=1000, start_ms=1_800_000_000_000))
    log = replay(settings.kafka.bootstrap_servers, "customers")

    code, _ = _kappa(
        settings,
        capsys,
        "run",
        "customers",
        "--starting-timestamp",
        str(cut_ms),
        "--until-caught-up",
    )
    assert code == 0
    later = [r for r in log if r.offset >= before.get(r.partition, 0)]
    assert len(later) == 400
    assert table_rows(settings, "customers") == customers_state(later)
