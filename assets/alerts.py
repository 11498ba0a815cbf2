"""The demo's end of the lineage: fraud alerts per country, read from the ``fraud_alerts`` topic
(a compacted changelog) by a plain consumer, as any downstream application would."""

from __future__ import annotations

import json
from collections import Counter

from confluent_kafka import Consumer, TopicPartition
from dagster import AssetKey, AssetsDefinition, MaterializeResult, asset

from assets.resources import KappaSettings
from assets.topics import topic_key
from streaming.kafka.log import KafkaLog
from streaming.settings import KafkaSettings

ALERTS_TOPIC = "fraud_alerts"


def read_changelog(kafka: KafkaSettings, topic: str) -> dict[bytes, dict]:
    """The topic's latest value per key, tombstones deleting, up to its end now."""
    with KafkaLog.of(kafka) as log:
        _, latest = log.bounds([topic])
    ends = {p: o for p, o in latest.get(topic, {}).items() if o > 0}
    table: dict[bytes, dict] = {}
    if not ends:
        return table
    config = {**kafka.client_config(), "group.id": "kappa-alerts", "enable.auto.commit": False}
    consumer = Consumer(config)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        remaining = dict(ends)
        while remaining:
            record = consumer.poll(10)
            if record is None:
                msg = f"reading {topic!r} stalled before its end offsets {ends}"
                raise TimeoutError(msg)
            if record.error():
                continue
            if record.value() is None:
                table.pop(record.key(), None)
            else:
                table[record.key()] = json.loads(record.value())
            if record.offset() + 1 >= remaining.get(record.partition(), 0):
                remaining.pop(record.partition(), None)
        return table
    finally:
        consumer.close()


def alerts_per_country_asset() -> AssetsDefinition:
    """Open fraud alerts counted by the transaction's country."""

    @asset(
        key=AssetKey(["reports", "alerts_per_country"]),
        deps=[topic_key(ALERTS_TOPIC)],
        group_name="reports",
        description="Open fraud alerts per country, from the `fraud_alerts` topic.",
        kinds={"python"},
    )
    def alerts_per_country(kappa: KappaSettings) -> MaterializeResult:
        alerts = read_changelog(kappa.load().kafka, ALERTS_TOPIC)
        counts = Counter(str(row.get("country")) for row in alerts.values())
        metadata: dict[str, int] = {"alerts": len(alerts)}
        metadata |= {f"country.{c}": n for c, n in sorted(counts.items())}
        return MaterializeResult(metadata=metadata)

    return alerts_per_country
