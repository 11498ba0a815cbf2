"""Fault injection: the customers pipeline keeps an exact table through kills, poison and bad disks.

    make faults [ARGS="--kills 20 --outage 30 --seed 1"]
    .venv/bin/python -m bench.faults --help

It runs the real ``python -m streaming run customers`` (continuous mode) on a stream of events
produced throughout (``--rate`` events/s, about 1% poison records of 11 kinds, 10% tombstones) and,
while it runs, injects:

1. SIGKILL of the whole process group (driver, JVM, Python workers), ``--kills`` times, at
   seeded moments: random ones, during start-up, inside the Delta commit (data files written,
   log entry not) and between the Delta commit and Spark's checkpoint commit; each kill's phase is
   read afterwards from the checkpoint and the Delta log. The process is restarted after each.
2. The disk holding the platform home (a tmpfs) filling up, then turning read-only, mid-batch:
   the process must stop with a clear error, then resume cleanly once the disk is fixed.
3. The broker down for ``--outage`` seconds and restarted with its log, and, separately, the log
   lost under a running query (its topic deleted and created again): the pipeline must stop
   with ``DATA LOSS`` (exit code 3) rather than skip.

After each fault group the table is compared with an independent replay of the topic
(``bench/support/reference.py``) at the table's last commit, and the dead-letter table with the
poison records produced. Zero lost and zero duplicated rows is the pass condition. The results
table is printed and written to ``bench/results/faults.json``; the exit code is 0 only if every
row passes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from bench.faults_broker import broker_outage_run, lost_log_data_loss
from bench.faults_process import disk_fault, kills
from bench.faults_run import FaultRow, FaultRun

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=summary)
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs (default 20)")
    parser.add_argument("--rate", type=float, default=200, help="events/s produced (default 200)")
    parser.add_argument("--max-batch", type=int, default=5000, help="maxOffsetsPerTrigger")
    parser.add_argument("--seed", type=int, default=1, help="seed of events and kill moments")
    parser.add_argument("--outage", type=float, default=30, help="broker outage seconds (0: skip)")
    parser.add_argument("--no-disk", action="store_true", help="skip the disk faults")
    parser.add_argument("--no-lost-log", action="store_true", help="skip the data-loss case")
    parser.add_argument("--work", type=Path, help="working directory (default: a fresh temp dir)")
    parser.add_argument("--out", type=Path, default=RESULTS / "faults.json", help="JSON results")
    args = parser.parse_args(argv)
    # The producer's librdkafka lines (e.g. "FAIL ... Connection refused" while the broker is
    # down on purpose) come through logging: named, so they do not read like the harness's verdict.
    logging.basicConfig(format="[%(name)s] %(levelname)s %(message)s")

    work = args.work or Path(tempfile.mkdtemp(prefix="kappa-faults-"))
    started = time.monotonic()
    run = FaultRun(work, args.seed, args.rate, max_batch=args.max_batch)
    rows: list[FaultRow] = []
    try:
        _step("starting broker, event stream and pipeline", started)
        run.start()
        if args.kills > 0:
            _step(f"{args.kills} kills", started)
            kills(run, args.kills)
        if not args.no_disk:
            _step("disk full", started)
            disk_fault(run, "full")
            _step("disk read-only", started)
            disk_fault(run, "read-only")
        _step("catching up and verifying", started)
        run.finish()
    except Exception as exc:  # report what ran, then the failure
        run.rows.append(FaultRow("harness", 1, f"aborted: {exc}", False))
    finally:
        rows += [*run.rows, run.unplanned_stops_row()]
        run.close()
    if args.outage > 0:
        _step(f"broker down {args.outage:.0f} s", started)
        rows += broker_outage_run(work, args.seed, args.rate, args.max_batch, args.outage)
    if not args.no_lost_log:
        _step("log lost under a running query", started)
        rows.append(lost_log_data_loss(work, args.seed))
    elapsed = time.monotonic() - started
    print(render(rows))
    report = {
        "command": " ".join(["python -m bench.faults", *(argv or sys.argv[1:])]),
        "seed": args.seed,
        "rate": args.rate,
        "disk_mode": run.disk.mode if not args.no_disk else "skipped",
        "elapsed_s": round(elapsed, 1),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "work_dir": str(work),
        "rows": [asdict(r) for r in rows],
        "passed": all(r.passed for r in rows),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    verdict = "PASS" if report["passed"] else "FAIL"
    print(f"\n{verdict} in {elapsed:.0f} s; results in {args.out}; logs in {work / 'logs'}")
    return 0 if report["passed"] else 1


def _step(what: str, started: float) -> None:
    print(f"[{time.monotonic() - started:6.1f} s] {what}", flush=True)


def render(rows: list[FaultRow]) -> str:
    """The fault table as Markdown."""
    lines = [
        "| fault | count | outcome | lost | duplicated | resume | result |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lost = "-" if r.lost is None else str(r.lost)
        dup = "-" if r.duplicated is None else str(r.duplicated)
        outcome = r.outcome.replace("|", "/").replace("\n", " ")
        result = "PASS" if r.passed else "FAIL"
        lines.append(
            f"| {r.fault} | {r.count} | {outcome} | {lost} | {dup} | {r.resume_text()} | {result} |"
        )
    return "\n".join(lines)


def machine() -> dict[str, object]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    memory_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(memory_kb / 1024 / 1024, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": (java.stderr or java.stdout).splitlines()[0] if java.returncode == 0 else "?",
    }


if __name__ == "__main__":
    sys.exit(main())
