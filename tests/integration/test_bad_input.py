"""Bad records go to the dead-letter table with their reason; nothing is lost or stops."""

from __future__ import annotations

import json

import pytest

from bench.support.producing import Out, send, transactions
from bench.support.reference import replay, spend_state
from streaming.delta.dead_letters import DeadLetters
from streaming.deployment import Deployment
from tests.integration.helpers import run_until_caught_up, table_rows

pytestmark = pytest.mark.integration

POISON = [
    (b"k00001", b"{not json", "is not a JSON object"),
    (
        b"k00002",
        json.dumps(
            {
                "txn_id": "x",
                "customer_id": "k00002",
                "amount": "lots",
                "currency": "EUR",
                "country": "DE",
                "ts": 1,
            }
        ).encode(),
        "is not a JSON object",
    ),
    (b"k00003", b"\xff\xfe\xfd", "value is not valid UTF-8"),
    (
        b"\xc3\x28",
        json.dumps({"txn_id": "y", "customer_id": "k", "amount": 1, "ts": 1}).encode(),
        "key is not valid UTF-8",
    ),
    (
        None,
        json.dumps({"txn_id": "z", "customer_id": "k", "amount": 1, "ts": 1}).encode(),
        "record has no key",
    ),
    (b"k00004", None, "tombstone"),
    (
        b"k00005",
        json.dumps({"txn_id": "w", "customer_id": "k00005", "currency": "EUR", "ts": 5}).encode(),
        "required field 'amount'",
    ),
    (b"k00006", b"[1, 2, 3]", "is not a JSON object"),
]


def test_poison_records_are_dead_lettered_with_their_reason(spark, settings, broker):
    good = transactions(3000, seed=7)
    mixed: list[Out] = []
    for i, record in enumerate(good):
        mixed.append(record)
        if i % 400 == 0:
            key, value, _ = POISON[(i // 400) % len(POISON)]
            mixed.append(Out("transactions", key, value))
    for key, value, _ in POISON:  # each kind at least once
        mixed.append(Out("transactions", key, value))
    send(settings, mixed)
    poison_count = len(mixed) - len(good)

    snapshot = run_until_caught_up(spark, settings, "customer_spend", max_offsets_per_trigger=900)

    records = replay(settings.kafka.bootstrap_servers, "transactions")
    assert table_rows(settings, "customer_spend") == spend_state(records)
    assert sum(r["txn_count"] for r in table_rows(settings, "customer_spend").values()) == 3000
    assert snapshot.dead_lettered_run == poison_count

    deployment = Deployment("customer_spend", "v1", settings.home)
    dead = DeadLetters(deployment.dead_letter_path, deployment.app_id).read().to_pylist()
    assert len(dead) == poison_count
    by_position = {(r.partition, r.offset): r for r in records}
    for row in dead:
        original = by_position[(row["partition"], row["offset"])]
        assert (row["key"], row["value"]) == (original.key, original.value)
        expected_reason = next(
            reason for k, v, reason in POISON if (k, v) == (original.key, original.value)
        )
        assert expected_reason in row["error"]


def test_replaying_a_batch_does_not_duplicate_dead_letters(spark, settings, broker):
    send(settings, [Out("transactions", b"k1", b"oops"), *transactions(100, seed=8)])
    run_until_caught_up(spark, settings, "customer_spend")
    deployment = Deployment("customer_spend", "v1", settings.home)
    letters = DeadLetters(deployment.dead_letter_path, deployment.app_id)
    assert letters.append(letters.read().drop_columns(["batch_id"]), batch_id=0) == 0
    assert letters.count() == 1
