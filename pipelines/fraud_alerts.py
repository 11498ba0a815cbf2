"""fraud_alerts: the suspicious transactions, derived from transactions_enriched's published
changelog and published in turn to the topic ``fraud_alerts``.

A transaction that stops being suspicious (its customer's profile arrived late within grace) is
deleted here and its tombstone published.
"""

from __future__ import annotations

import pyarrow.compute as pc

from pipelines.topics import FRAUD_ALERTS
from pipelines.transactions_enriched import PIPELINE as ENRICHED
from streaming.define import Pipeline

VERSION = "v1"

PIPELINE = Pipeline(
    name="fraud_alerts",
    version=VERSION,
    plan=ENRICHED.output_topic().table().rows().where(pc.field("suspicious")),
    publish=FRAUD_ALERTS,
    description="Suspicious transactions (from transactions_enriched), published to fraud_alerts.",
)
