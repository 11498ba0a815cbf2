"""The driver's memory does not follow the batch: ``transactions_enriched`` run by
``python -m streaming run`` over the same log in batches of 6,000 records and in one batch of
120,000, the driver process's peak RSS (its own, the JVM and the Python workers are other
processes) differs by less than the memory one batch of rows would take on the driver. Both
tables equal the plain-Python reference."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.support.producing import fraud_events, send
from bench.support.reference import replay_stamped
from streaming.delta.table_reader import commits
from streaming.deployment import Deployment
from streaming.settings import REPO_ROOT, Settings
from tests.integration.helpers import check_commits
from tests.support.enrichment import enriched_reference

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=80)]

NAME = "transactions_enriched"
EVENTS = 120_000
SMALL = 6_000  # records per batch in the small run: about 4 MB of rows, a tenth of the margin
# The noise between two runs of the same process; a batch of 120,000 records held by the driver
# (as Arrow, decoded, and as the operator's input) takes more, about 0.7 kB a record.
MARGIN_KB = 40 * 1024

# Runs the CLI in this interpreter and prints the driver process's own peak RSS (kB) at exit.
_PEAK = (
    "import atexit, resource, runpy, sys\n"
    "atexit.register(lambda: print('PEAK_KB', "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr))\n"
    "sys.argv = ['streaming', *sys.argv[1:]]\n"
    "runpy.run_module('streaming', run_name='__main__')\n"
)


def _driver_peak_kb(settings: Settings, version: str, max_offsets: int) -> int:
    cmd = [sys.executable, "-c", _PEAK, "run", NAME, "--version", version, "--until-caught-up"]
    cmd += ["--max-offsets-per-trigger", str(max_offsets), "--no-follow-live"]
    done = subprocess.run(
        cmd,
        env={**os.environ, **settings.to_env()},
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=900,
        check=False,
    )
    err = done.stderr.decode()
    assert done.returncode == 0, err[-3000:]
    peaks = [line.split()[1] for line in err.splitlines() if line.startswith("PEAK_KB ")]
    assert peaks, err[-3000:]
    return int(peaks[-1])


def _largest_batch(settings: Settings, version: str) -> int:
    """The most records one batch of the version read."""
    table = Deployment(NAME, version, settings.home).table_path
    sizes, before = [], {}
    for commit in commits(table):
        end = {(t, p): o for t, parts in commit.end_offsets.items() for p, o in parts.items()}
        sizes.append(sum(o - before.get(tp, 0) for tp, o in end.items()))
        before = end
    return max(sizes)


def test_the_drivers_peak_memory_does_not_grow_with_the_batch(settings, broker):
    send(settings, fraud_events(EVENTS, seed=31))
    small = _driver_peak_kb(settings, "small", SMALL)
    large = _driver_peak_kb(settings, "large", EVENTS)
    assert _largest_batch(settings, "large") >= EVENTS // 2
    assert large - small < MARGIN_KB, (
        f"peak RSS {small} kB at {SMALL:,} records, {large} kB at more"
    )

    records = replay_stamped(settings.kafka.bootstrap_servers, ["customers", "transactions"])
    for version in ("small", "large"):
        check_commits(settings, NAME, version, records, enriched_reference, "txn_id", every=1000)
