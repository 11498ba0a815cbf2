"""The Quix Streams peer: one workload per run, written as the Quix Streams documentation writes
it, on the topics the platform's pipelines read, every result to one output topic keyed by the
result's key (with the platform table's column names).

It runs in the Quix environment (``quix_env.py``) and imports only Quix Streams and the standard
library. Exactly once, as the platform's tables are: a checkpoint's results and its input offsets
are committed in one Kafka transaction. It runs until SIGTERM (Quix stops at the next message and
commits); the benchmark decides when the output is complete from the committed offsets.

    python quix_app.py WORKLOAD BOOTSTRAP GROUP STATE_DIR OUTPUT_TOPIC COMMIT_INTERVAL_S
"""

from __future__ import annotations

import sys
from typing import Any

from quixstreams import Application
from quixstreams.dataframe.windows import Count, Max, Sum

GRACE_MS = 600_000  # the platform's grace period
HOUR_MS = 3_600_000
WITHIN_MS = 600_000


def _topic(app: Application, name: str) -> Any:
    return app.topic(
        name,
        key_deserializer="str",
        value_deserializer="json",
        key_serializer="str",
        value_serializer="json",
    )


def latest_per_key(app: Application, output: Any) -> None:
    """The customers changelog kept per key in Quix's state (RocksDB); every change goes out, a
    deletion as the JSON value null (Quix's JSON serializer writes None so)."""

    def keep(value: Any, key: Any, timestamp: int, headers: Any, state: Any) -> None:
        if value is None:
            state.delete("customer")
        else:
            state.set("customer", value)

    sdf = app.dataframe(_topic(app, "customers"))
    sdf = sdf.update(keep, stateful=True, metadata=True)
    sdf.to_topic(output)


def fraud_join(app: Application, output: Any) -> None:
    """Each transaction with the customer's latest version at or before its timestamp:
    ``join_asof``, which joins when the transaction is processed."""

    def enrich(txn: dict, customer: dict | None) -> dict:
        row = dict(txn)
        row["customer_country"] = customer["country"] if customer else None
        row["customer_name"] = customer["name"] if customer else None
        country = row["customer_country"]
        row["suspicious"] = country is None or country != txn["country"]
        return row

    transactions = app.dataframe(_topic(app, "transactions"))
    customers = app.dataframe(_topic(app, "customers"))
    sdf = transactions.join_asof(customers, how="left", on_merge=enrich, grace_ms=GRACE_MS)
    sdf.to_topic(output, key=lambda row: row["txn_id"])


def hourly_spend(app: Application, output: Any) -> None:
    """1-hour tumbling windows per customer with a 10-minute grace, every update emitted; a
    window closes by the partition's event time, as the platform's do."""

    def row(window: dict, key: Any, timestamp: int, headers: Any) -> dict:
        return {
            "customer_id": key,
            "window_start": window["start"],
            "txn_count": window["txn_count"],
            "total_amount": window["total_amount"],
            "max_amount": window["max_amount"],
        }

    sdf = app.dataframe(_topic(app, "transactions"))
    windows = sdf.tumbling_window(HOUR_MS, grace_ms=GRACE_MS).agg(
        txn_count=Count(), total_amount=Sum("amount"), max_amount=Max("amount")
    )
    sdf = windows.current(closing_strategy="partition").apply(row, metadata=True)
    sdf.to_topic(output, key=lambda r: f"{r['customer_id']}@{r['window_start']}")


def click_search_join(app: Application, output: Any) -> None:
    """Each click with the user's searches in the 10 minutes before it: ``join_interval``
    emits one result per match (the reader keeps the latest search) or one without a match."""

    def with_search(click: dict | None, search: dict | None) -> dict:
        row = dict(click or {})
        row["search_query"] = search["query"] if search else None
        row["search_ts"] = search["ts"] if search else None
        return row

    clicks = app.dataframe(_topic(app, "clicks"))
    searches = app.dataframe(_topic(app, "searches"))
    sdf = clicks.join_interval(
        searches,
        how="left",
        on_merge=with_search,
        grace_ms=GRACE_MS,
        backward_ms=WITHIN_MS,
        forward_ms=0,
    )
    sdf.to_topic(output, key=lambda r: r["click_id"])


WORKLOADS = {
    "latest": latest_per_key,
    "fraud": fraud_join,
    "spend": hourly_spend,
    "clicks": click_search_join,
}


def main(argv: list[str]) -> int:
    if len(argv) != 6 or argv[0] not in WORKLOADS:
        print(__doc__, file=sys.stderr)
        return 2
    workload, bootstrap, group, state_dir, output, commit_interval = argv
    app = Application(
        broker_address=bootstrap,
        consumer_group=group,
        auto_offset_reset="earliest",
        state_dir=state_dir,
        commit_interval=float(commit_interval),
        processing_guarantee="exactly-once",
        loglevel="WARNING",
    )
    WORKLOADS[workload](app, _topic(app, output))
    print("started", flush=True)
    app.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
