"""fraud_by_history: transactions that break their customer's payment history, as the fraud
seed decides ("a customer who never paid outside the EU suddenly paying from Australia").

Per customer, the regions of every earlier payment as of the transaction's event time: "EU", or
the country outside it. A transaction is an alert when its region is none of them and the
customer has at least ``MIN_HISTORY`` earlier payments; its ``reason`` says what the history
was. A payment that arrives out of order (within the grace period) changes the history of every
later one, and their alerts are corrected: an alert may appear or go away. The state is kept per
customer, the key of the ``transactions`` topic, so it is split by input partition.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pipelines.topics import TRANSACTIONS
from quality.rules import Between
from streaming.define import KeyState, MapOf, Pipeline, Plan, Stateful, stateful

VERSION = "v1"
MIN_HISTORY = 3
EU_MEMBERS = "AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK"
EU = frozenset(EU_MEMBERS.split())
ALERT = (
    "txn_id string, customer_id string, amount decimal(18,2), country string, ts bigint, "
    "region string, earlier_payments bigint, reason string"
)


def region(country: str) -> str:
    return "EU" if country in EU else country


def payment_history(min_history: int) -> Stateful:
    """The rule, with the number of earlier payments a customer needs before an alert."""

    @stateful(by="customer_id", key="txn_id", emits=ALERT, state={"regions": MapOf(str, int)})
    def check(txn: dict[str, Any], state: KeyState) -> Iterator[dict[str, Any]]:
        here, regions = region(txn["country"]), state.regions
        earlier = sum(regions.values())
        if earlier >= min_history and here not in regions:
            seen = ", ".join(f"{r} ({n})" for r, n in sorted(regions.items()))
            yield {
                **{c: txn[c] for c in ("txn_id", "customer_id", "amount", "country", "ts")},
                "region": here,
                "earlier_payments": earlier,
                "reason": f"first payment from {here} after {earlier} payments from {seen}",
            }
        regions[here] = regions.get(here, 0) + 1

    return check


def alerts(min_history: int = MIN_HISTORY) -> Plan:
    return TRANSACTIONS.stream().process(payment_history(min_history))


PIPELINE = Pipeline(
    name="fraud_by_history",
    version=VERSION,
    plan=alerts(),
    quality=(Between("earlier_payments", min_value=MIN_HISTORY), Between("amount", min_value=0)),
    description=(
        "Transactions from a region (EU, or a country outside it) none of the customer's "
        f"earlier payments came from, after at least {MIN_HISTORY} of them; with the reason."
    ),
)
