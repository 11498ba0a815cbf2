"""Faults of the streaming process and its disk, injected into a :class:`FaultRun`: SIGKILLs of
the whole process group at chosen moments, and a disk that fills up or turns read-only mid-batch.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict
from typing import Any

from bench import faults_checks as checks
from bench.faults_run import FaultRow, FaultRun, wait_for

KILL_TARGETS = ("random moment", "Delta commit", "before checkpoint commit", "start-up")


def kills(run: FaultRun, count: int, targets: tuple[str, ...] = KILL_TARGETS) -> FaultRow:
    """SIGKILL the process group ``count`` times at seeded moments, restarting after each.

    The moments cycle through ``targets`` (see :data:`KILL_TARGETS`).
    """
    phases: Counter[str] = Counter()
    landed: list[dict[str, Any]] = []
    resumes: list[float] = []
    survivors = 0
    pending: int | None = None  # log entries when the process was last restarted
    for i in range(count):
        target = targets[i % len(targets)]
        if pending is not None and target != "start-up":
            resumes.append(run.wait_resumed(pending))
        before = run.position()
        if not arm(run, target, pending):
            target += " (window missed, killed anyway)"
        survivors += run.stream.kill()
        after = run.position()
        phase = after.phase(before.orphans)
        phases[phase] += 1
        landed.append({"kill": i + 1, "target": target, "phase": phase, **_ids(after)})
        pending = run.log_entries()
        run.stream.start()
    if pending is not None:
        resumes.append(run.wait_resumed(pending))
    verdict = run.verify()
    outcome = "; ".join(f"{n} {phase}" for phase, n in phases.most_common())
    outcome += (
        f"; {survivors} processes survived a kill; {len(resumes)} resume times measured "
        f"(the other restarts were killed again during start-up)"
    )
    row = FaultRow(
        "SIGKILL of the process group (driver, JVM, workers)",
        count,
        outcome,
        verdict.ok and survivors == 0 and phases[checks.IN_DELTA_COMMIT] > 0,
        verdict.lost + verdict.extra,
        verdict.duplicated,
        resumes,
        {"kills": landed, "phases": dict(phases), "verdict": verdict.to_dict()},
    )
    run.rows.append(row)
    return row


def arm(run: FaultRun, target: str, restarted_at_entries: int | None) -> bool:
    """Wait until the moment ``target`` names; False if that window never came."""
    if target == "start-up":  # seconds after the restart, before or around its first batch
        time.sleep(run.rng.uniform(0.5, 8.0))  # the fault's moment, not a synchronisation
        return restarted_at_entries is None or run.log_entries() == restarted_at_entries
    if target == "random moment":
        time.sleep(run.rng.uniform(0.0, 4.0))  # the fault's moment, not a synchronisation
        return True
    data, logs = checks.watch_files(run.deployment.table_path)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now_data, now_logs = checks.watch_files(run.deployment.table_path)
        if target == "Delta commit" and now_data > data and now_logs == logs:
            # The window between the data files and the log entry can be a millisecond:
            # freeze the process group, then look again. Still no log entry: the kill lands
            # inside the commit. Otherwise let it go on and wait for the next batch.
            run.stream.freeze()
            if checks.watch_files(run.deployment.table_path)[1] == logs:
                return True
            run.stream.thaw()
            now_data, now_logs = checks.watch_files(run.deployment.table_path)
        if target == "before checkpoint commit" and now_logs > logs:
            return True
        if now_logs > logs:  # missed this commit's window: wait for the next one
            data, logs = now_data, now_logs
        time.sleep(0.001)
    return False


def disk_fault(run: FaultRun, kind: str) -> FaultRow:
    """Fill the home's filesystem up, or remount it read-only, while a batch is in flight."""
    wait_for(lambda: checks.in_flight(run.deployment), 60, "a micro-batch in flight", poll_s=0.002)
    if kind == "full":
        run.disk.fill()
    else:
        run.disk.read_only()
    faulted_at = time.monotonic()
    code = run.stream.wait_exit(120)
    exited_s = time.monotonic() - faulted_at
    error = run.stream.error_line()
    if code is None:
        run.stream.kill()
    if kind == "full":
        run.disk.free()
    else:
        run.disk.read_write()
    entries = run.log_entries()
    run.stream.start()
    resumed = run.wait_resumed(entries)
    verdict = run.verify()
    stopped = code not in (None, 0)
    reason = "is full" if kind == "full" else "read-only filesystem"
    clear = reason in error and "resumes from its checkpoint" in error
    outcome = (
        f"exit code {code} after {exited_s:.1f} s: {error[:300]}"
        if stopped
        else "did not stop within 120 s (killed)"
    )
    row = FaultRow(
        f"disk {'full' if kind == 'full' else 'read-only'} mid-batch ({run.disk.mode})",
        1,
        outcome,
        stopped and clear and verdict.ok,
        verdict.lost + verdict.extra,
        verdict.duplicated,
        [resumed],
        {"exit_code": code, "error": error, "clear": clear, "verdict": verdict.to_dict()},
    )
    run.rows.append(row)
    return row


def _ids(pos: checks.Position) -> dict[str, Any]:
    data = asdict(pos)
    data["orphans"] = len(pos.orphans)
    return data
