"""A short fault run (the CI version of ``make faults``): a few SIGKILLs, poison, a read-only disk.

The real streaming process runs in continuous mode while events (1% poison) are produced; it is
killed at seeded moments (one at random, one inside a Delta commit, one between the Delta commit
and Spark's checkpoint commit), its disk turns read-only mid-batch, and after each fault it
resumes. The table must then equal the independent reference replay and the dead-letter table
must hold exactly the poison records, each with its reason.
"""

from __future__ import annotations

import json

import pytest

from bench.faults import render
from bench.faults_checks import IN_DELTA_COMMIT
from bench.faults_process import disk_fault, kills
from bench.faults_run import FaultRun

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=150)]


@pytest.mark.timeout(1500)  # restarts of a Spark process on two cores
def test_kills_poison_and_a_read_only_disk_lose_and_duplicate_nothing(tmp_path):
    run = FaultRun(tmp_path, seed=6, rate=100, max_batch=2000)
    try:
        run.start()  # mounts the home's disk: known from here whether it can turn read-only
        if run.disk.mode == "none":
            pytest.fail("no way to make the home read-only here (needs a tmpfs mount or non-root)")
        killed = kills(
            run, 3, targets=("random moment", "Delta commit", "before checkpoint commit")
        )
        disk_fault(run, "read-only")
        run.finish()
    finally:
        run.close()
    table = render(run.rows)
    failed = {row.fault: row.details for row in run.rows if not row.passed}
    assert not failed, f"{table}\n{json.dumps(failed, indent=1, default=str)[:6000]}"
    assert killed.details["phases"].get(IN_DELTA_COMMIT, 0) >= 1, table
    poison = next(row for row in run.rows if row.fault.startswith("poison"))
    assert poison.count > 0 and poison.details["verdict"]["dead_letters"] == poison.count, table
