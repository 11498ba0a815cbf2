"""The processes of one platform home: everything `kappa up` started, directly or not.

The broker and the engine are detached from `kappa up` (their own sessions), so a process tree
misses them; every process of the platform, though, runs with the home in its environment
(``KAPPA_HOME``) or on its command line (the broker's data directory).
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Member:
    pid: int
    role: str
    rss: int
    cpu_s: float  # user + system time so far
    command: str = ""  # the command line, shortened: what a reader needs to tell processes apart


def _role(cmdline: list[str]) -> str:
    text = " ".join(cmdline)
    if "java" in (cmdline[0] if cmdline else ""):
        if "kafka" in text.lower() or "tansu" in text.lower():
            return "broker"
        return "spark-jvm"
    for marker, role in (
        ("streaming engine", "engine"),
        ("pyspark.daemon", "spark-python"),
        ("pyspark.worker", "spark-python"),
        # The one process executing every deployment's Dagster run (assets.run_host).
        ("assets.run_host", "run-host"),
        ("dagster", "dagster"),
        # Dagster's run workers and step processes (spawned by the code server): per run.
        ("multiprocessing", "dagster-runs"),
        ("demo produce", "producer"),
        ("kappa.cli up", "kappa-up"),
    ):
        if marker in text:
            return role
    return "other"


def _short(cmdline: list[str]) -> str:
    return " ".join(part.rsplit("/", 1)[-1] for part in cmdline[:4])[:80]


def members(home: str) -> list[Member]:
    """Every live process whose environment or command line names ``home``."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            cmdline = proc.info["cmdline"] or []
            named = any(home in part for part in cmdline)
            if not named and proc.environ().get("KAPPA_HOME") != home:
                continue
            times = proc.cpu_times()
            cpu = times.user + times.system
            found.append(
                Member(proc.pid, _role(cmdline), proc.memory_info().rss, cpu, _short(cmdline))
            )
        except (psutil.Error, OSError):
            continue
    return found


def cpu_by_role(before: list[Member], after: list[Member]) -> dict[str, float]:
    """CPU seconds each role spent between two samples, per process: a process that started
    meanwhile counts from 0; one that ended meanwhile is not seen (its time is lost, never
    subtracted)."""
    earlier = {m.pid: m.cpu_s for m in before}
    totals: dict[str, float] = {}
    for member in after:
        spent = member.cpu_s - earlier.get(member.pid, 0.0)
        totals[member.role] = totals.get(member.role, 0.0) + spent
    return totals


def by_role(found: list[Member], measure: str) -> dict[str, float]:
    """``measure`` (``rss`` or ``cpu_s``) summed per role."""
    totals: dict[str, float] = {}
    for member in found:
        totals[member.role] = totals.get(member.role, 0) + getattr(member, measure)
    return totals
