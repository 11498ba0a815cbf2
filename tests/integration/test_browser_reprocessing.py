"""Side-by-side reprocessing end to end, as a user performs it in the Dagster UI (headless
Chromium), on a real `dagster dev` (webserver + daemon), an embedded broker and the engine, events
produced throughout.

Launch v1 from the asset page; change the pipeline (names upper-cased) and its version, reload the
code location; the new-version sensor starts v2 from the earliest offset as a candidate while v1
keeps serving; see its progress; see its blocking comparison fail with the reason and the
promotion refused; declare the change as expected (v3), see the candidate sensor's comparison
pass and promote it from the Launchpad; both tables equal the independent reference at the
compared offsets; readers see v3; roll back from the Launchpad and readers see v1; promote and
retire v1 through Dagster's jobs; the live table converges on the whole log. Each UI step asserts
on what the page shows; a screenshot per step goes to ``test-artifacts/browser-reprocessing/``
(or ``$KAPPA_TEST_ARTIFACTS``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance

from bench.support.producing import customer_changes, send
from bench.support.reference import Record, customers_state, log_ends, replay, table_state
from streaming.dagster_names import PARTITION_TAG, versions_partitions_name
from streaming.delta.table_reader import commits, last_end_offsets, read_arrow
from streaming.deployment import Deployment
from streaming.kafka import offsets as off
from streaming.versions.live_pointer import history, live_table_path, live_version
from streaming.versions.promotion import comparison_offsets
from streaming.wait import wait_until
from tests.integration.browser import (
    CHROMIUM_ARGS,
    artifacts_dir,
    chromium,
    materialize_one_partition,
    skip_first_visit_dialog,
)
from tests.integration.dagster_platform import Platform, running_platform
from tests.integration.user_code import customers_module, user_package

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow(seconds=330),
]

MODULE = "ui_flow_pipelines.customers"
UPPER = '.with_columns(name=pc.utf8_upper(pc.field("name")))'
V1 = customers_module("v1")
V2 = customers_module("v2", change=UPPER)
V3 = customers_module(
    "v3",
    change=UPPER,
    options=', comparison=ComparisonPolicy(expected_changed_columns=frozenset({"name"}))',
)
TIMEOUT_MS = 60_000
REASON = r"column name matches for [\d.]+% of keys"


@pytest.fixture(scope="module")
def code_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with user_package(tmp_path_factory.mktemp("user_code"), "ui_flow_pipelines", V1) as package:
        yield package


class Producer(threading.Thread):
    """Keeps events arriving (load, not synchronisation): the live version keeps materializing."""

    def __init__(self, platform: Platform) -> None:
        super().__init__(daemon=True)
        self.platform = platform
        self.stopped = threading.Event()

    def run(self) -> None:
        seed = 2000
        while not self.stopped.is_set():
            send(self.platform.settings, customer_changes(20, seed=seed))
            seed += 1
            self.stopped.wait(1.0)


def _runs(platform: Platform, job: str | None, **tags: str) -> list[dict[str, Any]]:
    """Runs of ``job`` (any job when None) with these tags, newest first."""
    filters: dict[str, Any] = {"tags": [{"key": k, "value": v} for k, v in tags.items()]}
    if job:
        filters["pipelineName"] = job
    data = platform.api.query(
        """query($filter: RunsFilter) { runsOrError(filter: $filter) {
             ... on Runs { results { runId status runConfigYaml tags { key value } } } } }""",
        {"filter": filters},
    )
    return data["runsOrError"]["results"]


def _promote_runs(platform: Platform, version: str) -> list[dict[str, Any]]:
    return [
        r
        for r in _runs(platform, "promote_version")
        if f"version: {version}" in (r["runConfigYaml"] or "")
    ]


def _repository_path(platform: Platform) -> str:
    """The code location's repository as the UI's URLs name it (the location alone for a
    ``Definitions`` object's implicit repository)."""
    data = platform.api.query(
        "{ repositoriesOrError { ... on RepositoryConnection "
        "{ nodes { name location { name } } } } }"
    )
    [node] = data["repositoriesOrError"]["nodes"]
    name, location = node["name"], node["location"]["name"]
    return location if name == "__repository__" else f"{name}@{location}"


class Ui:
    """The pages a user visits, with a screenshot per step."""

    def __init__(self, page: Any, url: str, artifacts: Path) -> None:
        self.page = page
        self.url = url
        self.artifacts = artifacts

    def goto(self, path: str) -> None:
        self.page.goto(f"{self.url}{path}")

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.artifacts / f"{name}.png"), full_page=True)

    def version_page(self, version: str) -> None:
        """The asset page's partition view of one version: its latest report's metadata."""
        self.goto(f"/assets/tables/customers?view=partitions&partition={version}")

    def expect_text(self, pattern: str, *, reload_until: bool = True) -> None:
        """Wait until the page shows ``pattern`` (a regex), reloading it as reports arrive."""
        from playwright.sync_api import expect

        target = self.page.get_by_text(re.compile(pattern)).first
        if reload_until:

            def shown() -> bool:
                try:
                    target.wait_for(state="visible", timeout=5_000)
                    return True
                except Exception:
                    self.page.reload()
                    return False

            assert wait_until(shown, timeout_s=240, interval_s=1), (
                f"the page never showed {pattern!r}"
            )
        expect(target).to_be_visible(timeout=TIMEOUT_MS)
        target.scroll_into_view_if_needed()  # so the step's screenshot shows what it asserted

    def reload_code_location(self) -> None:
        self.goto("/locations")
        self.page.get_by_role("button", name="Reload").first.click()

    def launch_from_launchpad(self, repository: str, job: str, config: dict[str, Any]) -> None:
        """Open the job's Launchpad, put the run config in its editor, launch."""
        self.goto(f"/locations/{repository}/jobs/{job}/playground")
        editor = self.page.locator(".CodeMirror").first
        editor.wait_for(state="visible", timeout=TIMEOUT_MS)
        # YAML is a superset of JSON: the editor takes the config as one JSON line.
        self.page.evaluate(
            "(text) => document.querySelector('.CodeMirror').CodeMirror.setValue(text)",
            json.dumps(config),
        )
        self.page.get_by_role("button", name="Launch Run").click()


@pytest.mark.timeout(1800)  # three versions side by side, Spark and Dagster on two cores
def test_reprocessing_flow_in_the_dagster_ui(code_dir: Path, tmp_path: Path, shared_broker):
    from playwright.sync_api import sync_playwright

    executable = chromium()
    artifacts = artifacts_dir("browser-reprocessing")
    with (
        running_platform(tmp_path / "home", shared_broker, pipelines=MODULE) as platform,
        sync_playwright() as pw,
    ):
        settings, home = platform.settings, platform.settings.home
        skip_first_visit_dialog(platform.api)
        send(settings, customer_changes(1500, seed=70))  # history from before v1 existed
        producer = Producer(platform)
        producer.start()
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            ui = Ui(
                browser.new_page(viewport={"width": 1500, "height": 1000}),
                _url(platform),
                artifacts,
            )
            repository = _repository_path(platform)

            # 1. v1 from the asset page: Materialize, its only partition, one run
            platform.api.add_partition(versions_partitions_name("customers"), "v1")
            ui.goto("/assets/tables/customers")
            materialize_one_partition(ui.page)
            assert wait_until(lambda: live_version(home, "customers") == "v1", 240, 1)
            ui.version_page("v1")
            ui.expect_text(r"^live_version$")
            ui.expect_text(r"^v1$", reload_until=False)
            ui.shot("1-v1-live")
            [v1_run] = _runs(platform, None, **{PARTITION_TAG: "v1"})

            # 2. the pipeline changes (names upper-cased) under a new version; reload from the UI
            (code_dir / "customers.py").write_text(V2)
            v1_commits_at_v2 = len(commits(_table(platform, "v1")))
            ui.reload_code_location()
            ui.shot("2-code-location-reloaded")
            assert wait_until(
                lambda: _runs(platform, "deploy_customers", **{"kappa/version": "v2"}), 180, 1
            ), "the new-version sensor did not start v2"
            [v2_run] = _runs(platform, "deploy_customers", **{"kappa/version": "v2"})
            tags = {t["key"]: t["value"] for t in v2_run["tags"]}
            assert tags["kappa/role"] == "candidate"
            assert "differs from live v1" in tags["kappa/reason"]

            # 3. v2 side by side: the live version's page shows it catching up
            ui.version_page("v1")
            ui.expect_text(r"candidate\.v2\.caught_up_pct")
            ui.shot("3-v2-candidate-progress")

            # 4. the comparison fails on v2's partition, with its reason; the promotion is refused
            assert wait_until(lambda: _promote_runs(platform, "v2"), 420, 2)
            refused = _promote_runs(platform, "v2")[-1]  # the first one (newest first)
            platform.wait_status(refused["runId"], {"FAILURE"}, 300)
            ui.goto(f"/runs/{refused['runId']}")
            ui.expect_text(REASON, reload_until=False)
            ui.shot("4a-promotion-refused")
            ui.goto("/assets/tables/customers?view=checks")
            ui.page.get_by_text("candidate_values", exact=True).first.click()
            ui.page.get_by_text("Execution history", exact=True).first.click()
            ui.expect_text(REASON, reload_until=False)
            ui.shot("4b-candidate-check-failed")
            # and the live version's page says why the last promotion was refused
            ui.version_page("v1")
            ui.expect_text(r"v2 vs live v1, .*REFUSED")
            ui.shot("4c-live-says-refused")
            assert live_version(home, "customers") == "v1"
            # the refused candidate is of no more use: the user stops it
            platform.api.terminate([r["runId"] for r in _active(platform, "v2")])

            # 5. the change declared as expected (v3): its comparison passes; promote from the UI
            (code_dir / "customers.py").write_text(V3)
            ui.reload_code_location()
            assert wait_until(lambda: _promote_runs(platform, "v3"), 600, 2)
            assert wait_until(
                lambda: any(r["status"] == "SUCCESS" for r in _promote_runs(platform, "v3")),
                600,
                2,
            ), f"v3's comparison did not pass: {_promote_runs(platform, 'v3')}"
            # the live version's page says the comparison passed; promotion is the user's call
            ui.version_page("v1")
            ui.expect_text(r"v3 vs live v1, .*passed")
            ui.shot("5a-v3-comparison-passed")
            assert live_version(home, "customers") == "v1"
            ui.launch_from_launchpad(
                repository, "promote_version", _ops("compare_and_promote", version="v3")
            )
            assert wait_until(lambda: live_version(home, "customers") == "v3", 300, 1)
            promoted = history(home, "customers")[-1]
            assert (promoted.from_version, promoted.to_version) == ("v1", "v3")
            assert promoted.comparison and promoted.comparison["passed"] is True
            assert promoted.actor.startswith("dagster run")
            # v1 kept serving and updating its own table while the candidates rebuilt
            assert len(commits(_table(platform, "v1"))) > v1_commits_at_v2
            assert platform.status(v1_run["runId"]) == "STARTED"

            # the comparison read both tables at exactly the same input offsets, and each equals
            # the independent reference there (v3's with the names upper-cased)
            where = comparison_offsets(settings, "customers", "v1", "v3")
            expected = _reference(platform, off.from_spark(where["offsets"]))
            assert expected
            assert _state_at(platform, "v1", where["old_table_version"]) == expected
            assert _state_at(platform, "v3", where["new_table_version"]) == _upper(expected)
            _assert_candidate_checks_passed(platform, where["offsets"])
            assert _live_reader_state(platform)[0] == "customers__v3"

            # 6. v3 live; roll back from the UI: readers see v1 again, instantly
            ui.version_page("v3")
            ui.expect_text(r"v1 -> v3")
            ui.shot("5b-v3-live")
            ui.launch_from_launchpad(repository, "rollback_version", _ops("rollback_live"))
            assert wait_until(lambda: live_version(home, "customers") == "v1", 300, 1)
            assert _live_reader_state(platform)[0] == "customers__v1"
            ui.version_page("v1")
            ui.expect_text(r"v3 -> v1")
            ui.shot("6-rolled-back-to-v1")

            # 7. promote again (compared again against the live v1), then retire v1: its run
            # stops and its files are gone
            _submit(platform, "promote_version", _ops("compare_and_promote", version="v3"))
            assert live_version(home, "customers") == "v3"
            _submit(platform, "retire_version", _ops("retire_one", version="v1"))
            v1 = Deployment("customers", "v1", home)
            assert not v1.table_path.exists() and not v1.checkpoint_path.exists()
            platform.wait_status(v1_run["runId"], {"CANCELED"}, timeout_s=60)
        finally:
            producer.stopped.set()
            producer.join(timeout=30)
            browser.close()

        # with the producer stopped, the live table converges on the whole log
        records = replay(settings.kafka.bootstrap_servers, "customers")
        ends = log_ends(records)
        assert wait_until(lambda: last_end_offsets(_table(platform, "v3")) == ends, 120)
        assert _live_reader_state(platform) == (
            "customers__v3",
            _upper(customers_state(records)),
        )
        assert [(s.from_version, s.to_version) for s in history(home, "customers")] == [
            (None, "v1"),
            ("v1", "v3"),
            ("v3", "v1"),
            ("v1", "v3"),
        ]


def _url(platform: Platform) -> str:
    return f"http://127.0.0.1:{platform.settings.dagster.port}"


def _ops(op: str, **config: str) -> dict[str, Any]:
    return {"ops": {op: {"config": {"pipeline": "customers", **config}}}}


def _active(platform: Platform, version: str) -> list[dict[str, Any]]:
    runs = _runs(platform, "deploy_customers", **{"kappa/version": version})
    return [r for r in runs if r["status"] in ("QUEUED", "STARTING", "STARTED")]


def _table(platform: Platform, version: str) -> Path:
    return Deployment("customers", version, platform.settings.home).table_path


def _prefix(records: list[Record], at: off.OffsetMap) -> list[Record]:
    return [r for r in records if r.offset < at.get(r.topic, {}).get(r.partition, 0)]


def _reference(platform: Platform, at: off.OffsetMap) -> dict[str, dict[str, Any]]:
    records = replay(platform.settings.kafka.bootstrap_servers, "customers")
    return customers_state(_prefix(records, at))


def _upper(state: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The reference with what v3 changes: names upper-cased."""
    return {
        key: {**row, "name": row["name"].upper() if row["name"] is not None else None}
        for key, row in state.items()
    }


def _state_at(platform: Platform, version: str, table_version: int | None = None) -> dict:
    rows = read_arrow(_table(platform, version), table_version).to_pylist()
    return table_state(rows, "customer_id")


def _live_reader_state(platform: Platform) -> tuple[str, dict]:
    """What a reader outside Dagster sees: the live pointer's table, at its latest commit."""
    path = live_table_path(platform.settings.home, "customers")
    return path.name, table_state(read_arrow(path).to_pylist(), "customer_id")


def _submit(platform: Platform, job: str, run_config: dict[str, Any]) -> str:
    run_id = platform.client.submit_job_execution(job, run_config=run_config)
    assert platform.wait_status(run_id, {"SUCCESS", "FAILURE"}, timeout_s=300) == "SUCCESS"
    return run_id


def _assert_candidate_checks_passed(platform: Platform, offsets: dict[str, Any]) -> None:
    """The promotion reported the three blocking checks, passed, at the compared offsets."""
    instance = DagsterInstance.from_config(str(platform.settings.home.dagster))
    try:
        for name in ("candidate_schema", "candidate_keys", "candidate_values"):
            key = AssetCheckKey(AssetKey(["tables", "customers"]), name)
            [record] = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
            evaluation = record.event.dagster_event.event_specific_data
            assert evaluation.passed, (name, evaluation.description)
            assert "data_docs" in evaluation.metadata
        metadata = evaluation.metadata
        assert metadata["match_rate.email"].value == 1.0
        assert metadata["at_offsets"].value == offsets
    finally:
        instance.dispose()
