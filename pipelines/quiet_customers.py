"""quiet_customers: a row per customer with no transaction for 30 days of event time (an
event-time timer per customer), deleted when the customer's next transaction arrives."""

from datetime import timedelta

from pipelines.topics import TRANSACTIONS
from streaming.define import Delete, Pipeline, Value, stateful

QUIET_MS = timedelta(days=30) // timedelta(milliseconds=1)
QUIET = "customer_id string, last_txn_ts bigint, quiet_since bigint"


def quiet(at, state):
    state.quiet.set(True)
    return {
        "customer_id": state.key["customer_id"],
        "last_txn_ts": at - QUIET_MS,
        "quiet_since": at,
    }


@stateful(
    by="customer_id", key="customer_id", emits=QUIET, state={"quiet": Value(bool)}, timer=quiet
)
def watch(txn, state):
    for pending in state.timers.pending():  # the clock restarts with every transaction
        state.timers.delete(pending)
    state.timers.register(txn["ts"] + QUIET_MS)
    if state.quiet.get():
        state.quiet.clear()
        return Delete(customer_id=txn["customer_id"])
    return None


PLAN = TRANSACTIONS.stream().process(watch)
PIPELINE = Pipeline(name="quiet_customers", version="v1", plan=PLAN)
