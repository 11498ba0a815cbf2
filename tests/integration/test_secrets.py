"""Kafka secrets given to `kappa` never show: not in its output (with or without --debug), not in
the files it writes (logs, tables, checkpoints), not in Dagster's storage and metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.support.producing import customer_changes, send
from tests.integration.dagster_platform import running_platform
from tests.integration.helpers import kappa

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=50)]

# Accepted by librdkafka on a plaintext connection (it only applies with SASL), so the platform
# works normally while carrying it everywhere a real credential would go.
SECRET = "hunter2-do-not-print-7f3a"
# A second secret under another marker than password (secret), given the same two ways.
CLIENT_SECRET = "oauth-do-not-print-2c9e"


_RUN_LOGS = """
query Logs($id: ID!) {
  logsForRun(runId: $id) {
    __typename
    ... on EventConnection { events { __typename ... on MessageEvent { message } } }
  }
}
"""


def _files_containing(root: Path, needle: str) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            found.append(str(path.relative_to(root)))
    return found


def test_cli_output_debug_output_and_files_never_show_a_secret(settings, broker):
    send(settings, customer_changes(300, seed=90))
    env = {
        "KAPPA_KAFKA_SSL_KEY_PASSWORD": SECRET,
        "KAPPA_KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET": CLIENT_SECRET,
    }
    flag = f"sasl.password={SECRET}"
    runs = [
        kappa(
            settings, "--debug", "--kafka", flag, "run", "customers", "--until-caught-up", env=env
        ),
        kappa(settings, "--kafka", flag, "table", "show", "customers", env=env),
        # failures, with and without the traceback
        kappa(settings, "--kafka", flag, "run", "nope", "--until-caught-up", env=env),
        kappa(settings, "--debug", "--kafka", flag, "table", "show", "nope", env=env),
        kappa(settings, "--debug", "--kafka", flag, "--kafka", "bad", "tables", env=env),
    ]
    assert runs[0].returncode == 0, runs[0].stderr[-3000:]
    assert runs[1].returncode == 0 and "customer_id" in runs[1].stdout
    assert runs[2].returncode == 2 and "unknown pipeline 'nope'" in runs[2].stderr
    # with --debug the error comes with its traceback (the exit code of an uncaught exception)
    assert runs[3].returncode == 1 and "Traceback" in runs[3].stderr
    assert runs[4].returncode == 1 and "must look like KEY=VALUE" in runs[4].stderr
    assert "kappa: settings" in runs[0].stderr  # --debug shows them, masked
    for result in runs:
        for secret in (SECRET, CLIENT_SECRET):
            assert secret not in result.stdout + result.stderr, result.args
    for secret in (SECRET, CLIENT_SECRET):
        assert _files_containing(settings.home.root, secret) == []


@pytest.mark.slow
def test_dagster_runs_metadata_and_logs_never_show_a_secret(tmp_path, shared_broker):
    home = tmp_path / "home"
    overrides = {"kafka.client.sasl.password": SECRET}
    with running_platform(home, shared_broker, **overrides) as platform:
        assert platform.settings.kafka.client["sasl.password"] == SECRET
        send(platform.settings, customer_changes(300, seed=91))
        run_id = platform.launch("customers", mode="until_caught_up", report_every_s=1.0)
        # (the run's candidate comparison fails without a live version; the table step ran)
        platform.wait_status(run_id, {"SUCCESS", "FAILURE"}, timeout_s=240)
        logs = platform.api.query(_RUN_LOGS, {"id": run_id})
        assert "running in the engine" in str(logs)  # the run's log was read
        assert SECRET not in str(logs)
    # Dagster's storage (runs, events, metadata, compute logs) and every other file in the home.
    assert _files_containing(home, SECRET) == []
