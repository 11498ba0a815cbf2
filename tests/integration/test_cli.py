"""The `kappa` command as a user runs it: in a subprocess, with settings from the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal

import pytest

from bench.support.producing import customer_changes, send, transactions
from bench.support.reference import customers_state, replay, spend_state
from streaming.settings import REPO_ROOT
from tests.integration.helpers import kappa


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_unknown_pipeline_fails_fast(settings):
    line = _one_line_error(kappa(settings, "run", "nope", "--until-caught-up"))
    assert "unknown pipeline 'nope'" in line and "customers" in line


def test_unreachable_broker_fails_fast_with_what_to_do(settings):
    line = _one_line_error(kappa(settings, "run", "customers", "--until-caught-up"))
    assert "did not answer" in line and "kappa broker start" in line


def test_bad_setting_fails_at_load_time(settings):
    line = _one_line_error(kappa(settings, "--bootstrap-servers", "nonsense", "broker", "status"))
    assert "host:port" in line


def test_missing_table_says_how_to_build_it(settings):
    line = _one_line_error(kappa(settings, "table", "show", "customers"))
    assert "kappa run" in line


def test_broker_lifecycle(settings):
    assert kappa(settings, "broker", "status").returncode == 1
    started = kappa(settings, "broker", "start")
    try:
        assert started.returncode == 0 and "running" in started.stdout
        status = kappa(settings, "broker", "status")
        assert status.returncode == 0 and str(settings.broker.port) in status.stdout
    finally:
        stopped = kappa(settings, "broker", "stop")
    assert stopped.stdout.strip() == "broker stopped"
    assert kappa(settings, "broker", "status").returncode == 1


@pytest.mark.integration
def test_run_then_show_prints_exactly_the_compacted_topic(settings, broker):
    send(settings, customer_changes(3000, seed=13))
    send(settings, transactions(2000, seed=14))
    for name in ("customers", "customer_spend"):
        result = kappa(settings, "run", name, "--until-caught-up")
        assert result.returncode == 0, result.stderr[-3000:]
        assert "caught_up" in result.stdout

    shown = kappa(settings, "table", "show", "customers", "--format", "jsonl")
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    expected = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
    assert [r["customer_id"] for r in rows] == sorted(expected)
    assert {r["customer_id"]: r for r in rows} == expected

    shown = kappa(settings, "table", "show", "customer_spend", "--format", "jsonl")
    spend = {r["customer_id"]: r for r in map(json.loads, shown.stdout.splitlines())}
    expected_spend = spend_state(replay(settings.kafka.bootstrap_servers, "transactions"))
    # every column of every row (the amount printed as JSON text, compared exactly as a decimal)
    assert {
        k: {**r, "total_amount": Decimal(str(r["total_amount"]))} for k, r in spend.items()
    } == (expected_spend)

    text = kappa(settings, "table", "show", "customers", "--limit", "3")
    assert text.stdout.splitlines()[0].split()[:3] == ["customer_id", "name", "email"]
    assert "(3 rows, customers__v1)" in text.stdout


@pytest.mark.integration
def test_show_into_a_closed_pipe_is_not_an_error(settings, broker):
    send(settings, customer_changes(3000, seed=15, keys=2000))  # ~250 KB: more than a pipe holds
    assert kappa(settings, "run", "customers", "--until-caught-up").returncode == 0
    env = {**os.environ, **settings.to_env()}
    shown = subprocess.run(
        f"{sys.executable} -m kappa.cli table show customers --format jsonl | head -1",
        shell=True,
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert len(shown.stdout.splitlines()) == 1
    assert "Traceback" not in shown.stderr and "BrokenPipe" not in shown.stderr


@pytest.mark.integration
def test_demo_produce_sends_exactly_count_events_that_the_pipelines_read(settings, broker):
    produced = kappa(settings, "demo", "produce", "--count", "600", "--seed", "7")
    assert produced.returncode == 0, produced.stderr[-3000:]
    assert f"produced 600 events to {settings.kafka.bootstrap_servers}" in produced.stdout
    topics = ("customers", "transactions", "searches", "clicks", "profiles", "trades")
    log = {t: replay(settings.kafka.bootstrap_servers, t) for t in topics}
    assert sum(len(records) for records in log.values()) == 600
    assert all(log[t] for t in topics)  # the demo mixes every kind
    for name in ("customers", "customer_spend"):
        assert kappa(settings, "run", name, "--until-caught-up").returncode == 0
    shown = kappa(settings, "table", "show", "customers", "--format", "jsonl")
    rows = {r["customer_id"]: r for r in map(json.loads, shown.stdout.splitlines())}
    assert rows == customers_state(log["customers"])
    shown = kappa(settings, "table", "show", "customer_spend", "--format", "jsonl")
    spend = {r["customer_id"]: r for r in map(json.loads, shown.stdout.splitlines())}
    exact = {k: {**r, "total_amount": Decimal(str(r["total_amount"]))} for k, r in spend.items()}
    assert exact == spend_state(log["transactions"])
    assert sum(r["txn_count"] for r in spend.values()) == len(log["transactions"])
