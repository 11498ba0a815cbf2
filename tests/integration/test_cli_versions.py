"""The version and quality subcommands of `kappa`, run in-process against real tables."""

from __future__ import annotations

import re

import pytest

from bench.support.producing import Out, customer_changes, send
from kappa.cli import main
from tests.support.report_table import row_where, table_with

pytestmark = pytest.mark.integration


def _kappa(settings, capsys, *args: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = main(
        [
            "--home",
            str(settings.home),
            "--bootstrap-servers",
            settings.kafka.bootstrap_servers,
            "--spark-master",
            "local[2]",
            *args,
        ]
    )
    out = capsys.readouterr()
    return code, out.out, out.err


def test_tables_history_quality_report_and_refusals(spark, settings, broker, capsys, monkeypatch):
    send(settings, customer_changes(500, seed=50))
    assert _kappa(settings, capsys, "run", "customers", "--until-caught-up")[0] == 0
    # the first deployment of a pipeline becomes its live version by itself
    code, _, err = _kappa(settings, capsys, "promote", "customers", "v1")
    assert code == 2 and "already live" in err

    code, out, _ = _kappa(settings, capsys, "tables")
    assert "customers" in out and "live=v1" in out
    code, out, _ = _kappa(settings, capsys, "history", "customers")
    assert code == 0 and "- -> v1 (first deployment)" in out

    code, out, _ = _kappa(settings, capsys, "quality", "report", "customers", "--run")
    assert code == 0
    checks = table_with(out, "check")
    verdict = re.search(r"Table customers: (\w+) \((\d+) of (\d+) checks failed\)", out)
    assert verdict is not None, out
    assert verdict.groups() == ("PASSED", "0", str(len(checks)))
    assert row_where(checks, "check", "in_set(country)")["result"] == "ok"

    # a bad country code injected into the topic is caught by the suite, with its count
    send(
        settings,
        [
            Out(
                "customers",
                b"zz-bad",
                b'{"customer_id": "zz-bad", "name": "X", '
                b'"email": "x@example.com", "country": "XX", "updated_at": 1}',
            )
        ],
    )
    assert _kappa(settings, capsys, "run", "customers", "--until-caught-up")[0] == 0
    code, out, _ = _kappa(settings, capsys, "quality", "report", "customers", "--run")
    assert code == 0
    verdict = re.search(r"Table customers: (\w+) \((\d+) of (\d+) checks failed\)", out)
    assert verdict is not None, out
    assert verdict.groups() == ("FAILED", "1", str(len(checks)))
    # exactly the one injected row breaks the country check, and the report shows which
    failing = row_where(table_with(out, "check"), "check", "in_set(country)")
    assert failing["result"] == "FAIL"
    assert failing["unexpected"] == "1"
    assert "zz-bad" in failing["examples"] or "XX" in failing["examples"], failing
    # that small table was checked with pandas; on Spark (as a large one is) the report is the same
    monkeypatch.setenv("KAPPA_QUALITY_LOCAL_MAX_ROWS", "0")
    code, on_spark, _ = _kappa(settings, capsys, "quality", "report", "customers", "--run")
    assert code == 0
    assert table_with(on_spark, "check") == table_with(out, "check")
    monkeypatch.delenv("KAPPA_QUALITY_LOCAL_MAX_ROWS")

    code, _, err = _kappa(settings, capsys, "retire", "customers", "v1")
    assert code == 2 and "is live" in err
    code, _, err = _kappa(settings, capsys, "rollback", "customers")
    assert code == 2 and "no previous live version" in err
    code, _, err = _kappa(settings, capsys, "promote", "customers", "../v9")
    assert code == 2 and "invalid" in err
