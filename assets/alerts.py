"""The demo's end of the lineage: fraud alerts per country, read from the ``fraud_alerts`` and
``customers`` tables at one cut of the log (``streaming.query``), so that "moved since" compares
both tables at the same position."""

from __future__ import annotations

from typing import Any

from dagster import AssetKey, AssetsDefinition, MaterializeResult, MetadataValue, asset

from assets.resources import KappaSettings
from streaming.dagster_names import table_key_path
from streaming.kafka import offsets as off
from streaming.query import run_sql

# Open alerts per transaction country, and how many of them came from customers who have moved
# country since: the alert recorded the customer's country as of the transaction.
ALERTS_PER_COUNTRY = """
SELECT a.country,
       count(*) AS alerts,
       sum(CASE WHEN c.country <> a.customer_country THEN 1 ELSE 0 END) AS moved_since
FROM fraud_alerts a LEFT JOIN customers c ON c.customer_id = a.customer_id
GROUP BY a.country
ORDER BY a.country
"""
REPORT_INPUTS = ("fraud_alerts", "customers")


def alerts_per_country_asset() -> AssetsDefinition:
    """Open fraud alerts counted by the transaction's country, read with ``customers`` at one
    cut of the log; the materialization records the cut."""

    @asset(
        key=AssetKey(["reports", "alerts_per_country"]),
        deps=[AssetKey(table_key_path(name)) for name in REPORT_INPUTS],
        group_name="reports",
        description=(
            "Open fraud alerts per country, and how many came from customers who have moved "
            "since: `fraud_alerts` and `customers` read at one cut of the log."
        ),
        kinds={"python"},
    )
    def alerts_per_country(kappa: KappaSettings) -> MaterializeResult:
        result = run_sql(kappa.load(), ALERTS_PER_COUNTRY, consistent=True)
        rows = result.table.to_pylist()
        assert result.cut is not None  # a consistent read always names its cut
        metadata: dict[str, Any] = {
            "alerts": sum(r["alerts"] for r in rows),
            "moved_since": sum(r["moved_since"] or 0 for r in rows),
            "cut": result.cut.id,
            "cut_age_s": round(result.cut.age_s, 3),
            "cut_records_behind": result.cut.records_behind,
            "cut_offsets": MetadataValue.json(off.to_spark(result.cut.offsets)),
            "tables_read": MetadataValue.json(
                {
                    r.name: {"deployment": r.deployment, "version": r.table_version}
                    for r in result.reads
                }
            ),
        }
        metadata |= {f"country.{r['country']}": r["alerts"] for r in rows}
        return MaterializeResult(metadata=metadata)

    return alerts_per_country
