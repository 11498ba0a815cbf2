"""transactions_enriched: every transaction with its customer's country and name as of the
transaction's time, and whether it looks suspicious (no such customer then, or another country).
"""

from __future__ import annotations

import pyarrow.compute as pc

from pipelines.topics import CUSTOMERS, TRANSACTIONS, TRANSACTIONS_ENRICHED
from quality.reference import ISO_3166_ALPHA2
from quality.rules import Between, InSet
from streaming.define import Pipeline

VERSION = "v1"

country = pc.field("country")
customer_country = pc.field("customer_country")

# The rule: no such customer at the transaction's time, or a transaction from another country.
SUSPICIOUS = pc.if_else(customer_country.is_null(), True, customer_country != country)

PLAN = (
    TRANSACTIONS.stream()
    .join_as_of(
        CUSTOMERS.table(),
        on="customer_id",
        key="txn_id",
        columns={"country": "customer_country", "name": "customer_name"},
        how="left",
    )
    .with_columns(suspicious=SUSPICIOUS)
)

PIPELINE = Pipeline(
    name="transactions_enriched",
    version=VERSION,
    plan=PLAN,
    publish=TRANSACTIONS_ENRICHED,
    quality=(InSet("country", tuple(sorted(ISO_3166_ALPHA2))), Between("amount", min_value=0)),
    description=(
        "Each transaction with the customer's country and name as of its time; suspicious when "
        "the customer did not exist then or lives in another country."
    ),
)
