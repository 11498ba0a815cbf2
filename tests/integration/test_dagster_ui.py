"""A person's path through the Dagster UI in headless Chromium: browse the fraud detection's
lineage from the report back to the topics, find the streaming asset in the asset graph, launch
it, watch its run in progress, terminate it. Screenshots are saved to ``test-artifacts/browser/``
(or ``$KAPPA_TEST_ARTIFACTS``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance

from bench.support.producing import send, transactions
from streaming.dagster_names import versions_partitions_name
from streaming.wait import wait_until
from tests.integration.browser import (
    CHROMIUM_ARGS,
    artifacts_dir,
    chromium,
    dismiss_welcome,
    materialize_one_partition,
)
from tests.integration.dagster_platform import running_platform

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def artifacts() -> Path:
    return artifacts_dir("browser")


def test_launch_and_terminate_a_streaming_asset_from_the_ui(tmp_path, artifacts, shared_broker):
    from playwright.sync_api import expect, sync_playwright

    executable = chromium()
    with running_platform(tmp_path / "home", shared_broker) as platform, sync_playwright() as pw:
        send(platform.settings, transactions(500, seed=30))
        platform.api.add_partition(versions_partitions_name("customer_spend"), "v1")
        url = f"http://127.0.0.1:{platform.settings.dagster.port}"
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/assets/tables/customer_spend?view=lineage")
            dismiss_welcome(page)
            node = page.get_by_text("customer_spend", exact=True).last
            expect(node).to_be_visible(timeout=30_000)
            expect(page.get_by_text("transactions", exact=True).last).to_be_visible()
            page.screenshot(path=str(artifacts / "1-asset-graph.png"))

            # The fraud detection's lineage, read from the report back to the input topics:
            # zoomed out until the whole graph fits (long names are shortened in the middle).
            page.goto(
                f"{url}/assets/reports/alerts_per_country?view=lineage&lineageScope=upstream"
                "&lineageDepth=6"
            )
            expect(page.get_by_text("Graph depth")).to_be_visible(timeout=30_000)
            for _ in range(15):
                page.get_by_role("img", name="zoom_out").click()
            nodes = {
                "customers": 2,  # the topic, and the table the report reads
                "transactions": 1,
                "transact…_enriched": 2,  # the table and its published topic
                "fraud_alerts": 1,
                "alerts_per_country": 1,
            }
            for name, count in nodes.items():
                located = page.locator("foreignObject").get_by_text(name, exact=True)
                assert wait_until(lambda n=located, c=count: n.count() == c, 30), (name, count)
                for i in range(count):
                    expect(located.nth(i)).to_be_in_viewport()
            page.screenshot(path=str(artifacts / "1b-fraud-lineage.png"))
            page.goto(f"{url}/assets/tables/customer_spend?view=lineage")

            # The table is partitioned by version: the dialog picks v1, its only partition.
            materialize_one_partition(page)
            assert wait_until(lambda: platform.api.active_runs(), timeout_s=30, interval_s=0.5)
            [run] = platform.api.active_runs()
            assert wait_until(lambda: platform.holder_pid("customer_spend") is not None, 120, 0.5)
            assert wait_until(lambda: platform.status(run.run_id) == "STARTED", 30, 0.5)

            page.goto(f"{url}/runs/{run.run_id}")
            dismiss_welcome(page)
            expect(page.get_by_text("Started", exact=True).first).to_be_visible(timeout=30_000)
            expect(page.get_by_text("tables__customer_spend").first).to_be_visible()
            page.screenshot(path=str(artifacts / "2-run-in-progress.png"))

            page.get_by_role("button", name="Terminate").click()
            page.get_by_role("dialog").get_by_role("button", name="Terminate").click()
            platform.wait_status(run.run_id, {"CANCELED"}, timeout_s=45)
            expect(page.get_by_text("Canceled", exact=True).first).to_be_visible(timeout=30_000)
            page.screenshot(path=str(artifacts / "3-run-terminated.png"))
            assert platform.holder_pid("customer_spend") is None
            # Dagster marks an interrupted step "up for retry" when it has a retry policy, but a
            # canceled run never retries: the deployment started once, and nothing failed.
            with DagsterInstance.from_config(str(platform.settings.home.dagster)) as instance:
                logs = instance.all_logs(run.run_id)
            kinds = {e.dagster_event.event_type_value for e in logs if e.dagster_event}
            messages = [e.message or "" for e in logs]
            starts = [m for m in messages if "running in the engine" in m]
            assert "STEP_FAILURE" not in kinds and len(starts) == 1
        finally:
            browser.close()
