"""A run terminated while Dagster handles one of the step's events closes the step's generator
instead of raising inside it: the launcher must still stop the job and record the stop (a
deployment in a Spark application of its own).

The step runs in process on a real Dagster instance, and the job is a real subprocess speaking
Pipes. Closing the generator after its first event is what Dagster does when the termination
lands between two events.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psutil
import pytest
from dagster import (
    DagsterEventType,
    DagsterInstance,
    EventRecordsFilter,
    StaticPartitionsDefinition,
    asset,
    materialize,
)

from assets.own_process import run_command
from streaming.deployment import Deployment
from streaming.home import Home
from streaming.settings import Settings

pytestmark = pytest.mark.integration

# Reports one progress message, then stops cleanly on SIGINT (exit 0), like a streaming job at a
# batch boundary.
_JOB = """
import os, signal, sys, threading
from pathlib import Path
from dagster_pipes import open_dagster_pipes
stop = threading.Event()
signal.signal(signal.SIGINT, lambda *_: stop.set())
Path(sys.argv[1]).write_text(str(os.getpid()))
with open_dagster_pipes() as pipes:
    pipes.report_custom_message({"kind": "progress", **%r})
    stop.wait(60)
sys.exit(0)
"""

_PROGRESS = {
    "pipeline": "probe",
    "version": "v1",
    "deployment": "probe@v1",
    "fingerprint": "f",
    "state": "running",
    "committed_offsets": {},
    "latest_offsets": {},
    "lag": {},
    "total_lag": 0,
    "batches": 1,
    "records_processed": 1,
    "input_rows_per_s": 1.0,
    "processed_rows_per_s": 1.0,
    "last_batch_duration_s": 0.1,
    "last_batch_at": None,
    "table_rows": 1,
    "table_version": 1,
    "table_path": "/nowhere",
    "dead_lettered_total": 0,
    "dead_lettered_run": 0,
    "duration_s": 1.0,
    "role": "candidate",
}


def test_closing_the_step_after_an_event_stops_the_job_and_records_the_stop(tmp_path: Path):
    settings = Settings(home=Home(tmp_path / "home"), pipelines=("pipelines.customers",))
    deployment = Deployment("probe", "v1", settings.home)
    pid_file = tmp_path / "job.pid"
    command = [sys.executable, "-c", _JOB % (_PROGRESS,), str(pid_file)]

    @asset(partitions_def=StaticPartitionsDefinition(["v1"]), output_required=False)
    def probe(context):  # type: ignore[no-untyped-def]  # Dagster reads the annotation: none
        events = run_command(context, deployment, command, settings)
        yield next(events)
        events.close()

    instance = DagsterInstance.ephemeral()
    # The step then fails (a Pipes step must yield its results), as a terminated run ends.
    materialize([probe], instance=instance, partition_key="v1", raise_on_error=False)

    assert not psutil.pid_exists(int(pid_file.read_text()))
    records = instance.get_event_records(
        EventRecordsFilter(DagsterEventType.ASSET_OBSERVATION), ascending=True
    )
    states = [
        {k: getattr(v, "value", v) for k, v in r.asset_observation.metadata.items()}
        for r in records
    ]
    assert [(s["state"], s.get("exit_code")) for s in states] == [("running", None), ("stopped", 0)]
