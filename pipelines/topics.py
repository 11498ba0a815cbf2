"""The demo's topics, declared once: every pipeline that reads or publishes a topic imports it
from here. A published topic's key and value schema are its table's: read one through its
pipeline (``PIPELINE.output_topic()``)."""

from __future__ import annotations

from streaming.define import Topic

CUSTOMERS = Topic(
    "customers",
    key="customer_id",
    value_schema="customer_id string, name string, email string, country string, updated_at bigint",
    time="updated_at",
    tombstones="delete",
    required=("name", "email", "country"),
)

TRANSACTIONS = Topic(
    "transactions",
    key="customer_id",
    value_schema=(
        "txn_id string, customer_id string, amount decimal(18,2), currency string, "
        "country string, ts bigint"
    ),
    time="ts",
    required=("txn_id", "amount"),
)

SEARCHES = Topic(
    "searches",
    key="user_id",
    value_schema="user_id string, query string, ts bigint",
    time="ts",
    required=("query",),
)

PROFILES = Topic(
    "profiles",
    key="user_id",
    value_schema="user_id string, age bigint, gender string, zip_code string, updated_at bigint",
    time="updated_at",
    tombstones="delete",
    required=("age", "gender", "zip_code"),
)

CLICKS = Topic(
    "clicks",
    key="user_id",
    value_schema="click_id string, user_id string, url string, ts bigint",
    time="ts",
    required=("click_id", "url"),
)

TRADES = Topic(
    "trades",
    key="ticker",
    value_schema="trade_id string, ticker string, price decimal(18,4), size bigint, ts bigint",
    time="ts",
    required=("trade_id", "price", "size"),
)

# Published by the pipelines of the same names.
TRANSACTIONS_ENRICHED = Topic("transactions_enriched")
FRAUD_ALERTS = Topic("fraud_alerts")
STOCK_STATS_FINAL = Topic("stock_stats_final")

# Written by the pipelines of the same names as streams, and read back as streams.
LARGE_TRADES = Topic(
    "large_trades",
    key="ticker",
    value_schema=(
        "trade_id string, ticker string, price decimal(18,4), size bigint, ts bigint, "
        "notional decimal(38,4)"
    ),
    time="ts",
)
SEARCHES_BY_TERM = Topic(
    "searches_by_term",
    key="query",
    value_schema="user_id string, query string, ts bigint",
    time="ts",
)
