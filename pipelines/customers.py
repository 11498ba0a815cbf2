"""customers: the customer-profile changelog compacted into one row per live customer (a KTable).

Per customer the record with the highest (partition, offset) wins; a null value (tombstone)
deletes the customer, and a later update re-creates it. Each row keeps where its record was
read (``partition``, ``offset``).
"""

from __future__ import annotations

from datetime import timedelta

from pipelines.topics import CUSTOMERS
from quality.reference import ISO_3166_ALPHA2
from quality.rules import InSet, MatchesRegex, NotInFuture, NotNull
from streaming.define import Pipeline

VERSION = "v1"

PLAN = CUSTOMERS.table().rows(position=("partition", "offset"))

PIPELINE = Pipeline(
    name="customers",
    version=VERSION,
    plan=PLAN,
    description="Latest profile per customer from the `customers` changelog (tombstones delete).",
    quality=(
        NotNull("name"),
        InSet("country", tuple(sorted(ISO_3166_ALPHA2))),
        MatchesRegex("email", r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$"),
        NotInFuture("updated_at", tolerance=timedelta(minutes=5)),
    ),
)
