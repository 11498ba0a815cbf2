"""At start: has the broker lost (part of) the log the deployments have already read?

A deployment's checkpoint records, per topic partition, the offset it has planned to read up to.
If the broker's log now ends below that (the broker's log directory was wiped, a topic was
deleted and created again), every such deployment would stop with DATA LOSS
the moment it starts. `kappa up` asks once, before anything is launched, and says what happened
and the two ways out.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass

from streaming.deployment import deployments_on_disk
from streaming.home import Home
from streaming.kafka import offsets as off
from streaming.kafka.log import KafkaLog
from streaming.settings import Settings

# The exit code of `kappa up` when it stops on a lost log (the streaming job's DATA LOSS code).
EXIT_LOG_LOST = 3


@dataclass(frozen=True)
class Shortfall:
    """One partition whose log ends below where a deployment's checkpoint has read."""

    deployment: str
    topic: str
    partition: int
    checkpoint: int
    log_end: int | None  # None: the topic or partition no longer exists

    def describe(self) -> str:
        where = f"{self.topic}-{self.partition}"
        if self.log_end is None:
            return f"{self.deployment}: {where} read up to offset {self.checkpoint}, now gone"
        return (
            f"{self.deployment}: {where} read up to offset {self.checkpoint}, "
            f"the log ends at {self.log_end}"
        )


def checkpoint_positions(home: Home) -> dict[str, off.OffsetMap]:
    """The latest planned input offsets of every deployment that has a checkpoint."""
    positions: dict[str, off.OffsetMap] = {}
    for deployment in deployments_on_disk(home):
        position = deployment.checkpoint.planned_position()
        if position is not None:
            positions[deployment.id] = position
    return positions


def find_shortfalls(settings: Settings, timeout_s: float = 10.0) -> list[Shortfall]:
    """Every partition whose log ends below a deployment's checkpoint."""
    positions = checkpoint_positions(settings.home)
    topics = sorted({t for offsets in positions.values() for t in offsets})
    if not topics:
        return []
    with KafkaLog.of(settings.kafka, timeout_s=timeout_s) as log:
        existing = {t for t, parts in log.partitions(topics).items() if parts}
        ends = log.latest(sorted(existing)) if existing else {}
    return list(_compare(positions, ends))


def _compare(positions: dict[str, off.OffsetMap], ends: off.OffsetMap) -> Iterable[Shortfall]:
    for deployment, offsets in sorted(positions.items()):
        for topic, parts in sorted(offsets.items()):
            for partition, position in sorted(parts.items()):
                end = ends.get(topic, {}).get(partition)
                if end is None or position > end:
                    yield Shortfall(deployment, topic, partition, position, end)


def lost_log_message(shortfalls: list[Shortfall], settings: Settings) -> str:
    """What happened, where, and the two ways out, for `kappa up` to print once."""
    deployments = sorted({s.deployment for s in shortfalls})
    lines = [
        f"The log at {settings.kafka.bootstrap_servers} is shorter than what "
        f"{len(deployments)} deployment(s) have already read: the broker lost records "
        f"(the broker's log directory {settings.home.broker_data} was wiped, or a topic was "
        "deleted and created again).",
        *(f"  {s.describe()}" for s in shortfalls[:12]),
    ]
    if len(shortfalls) > 12:
        lines.append(f"  ... and {len(shortfalls) - 12} more partitions")
    lines += [
        "Their tables and checkpoints are untouched. Two ways out:",
        "  1. start over: `kappa reset` deletes every table, checkpoint, pinned code and live "
        "pointer (after a confirmation), then `kappa up` rebuilds from the log as it is now;",
        "  2. keep the tables and replay into a new version if the log still holds what matters: "
        "`kappa up --skip-log-check`, then `kappa deploy PIPELINE --version NEW` (the "
        f"deployments above are not resumed: {', '.join(deployments)}).",
    ]
    return "\n".join(lines)


def check_log_at_start(settings: Settings, skip: bool) -> set[str] | None:
    """The deployments whose checkpoint is ahead of the log (not to be resumed), or None when
    `kappa up` must stop: the message saying what happened and the ways out is printed once."""
    shortfalls = find_shortfalls(settings)
    lost = {s.deployment for s in shortfalls}
    if not shortfalls:
        return lost
    if skip:
        print(
            f"warning: the log ends below the checkpoints of {', '.join(sorted(lost))}; they are "
            "not resumed (--skip-log-check)",
            file=sys.stderr,
            flush=True,
        )
        return lost
    print(lost_log_message(shortfalls, settings), file=sys.stderr, flush=True)
    return None
