"""What starting a new version costs, estimated two ways.

- **A full replay** reads the whole log again: the records now in the pipeline's topics, at the
  replay rate measured where known (the highest ``processed_rows_per_s`` the live version or a
  candidate last reported: a rate per batch, so a caught-up version's small batches make it an
  underestimate), else :data:`PLATFORM_REPLAY_RATE`.
- **A forward-only start** copies the live version's table and state
  (``streaming.versions.forward_only``) at :data:`COPY_BYTES_PER_S`, then processes the records
  the live version has not committed yet at the same rate.

Both leave out what every start pays alike (the Spark application's start).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from streaming.delta.log_replay import replay
from streaming.delta.table_reader import last_end_offsets
from streaming.delta.table_store import TableLocation, TableStore
from streaming.deployment import Deployment
from streaming.errors import TableError
from streaming.kafka import offsets as off
from streaming.kafka.log import KafkaLog
from streaming.settings import Settings

# Records per second a replay takes when no version of the pipeline reported a rate: below the
# slowest stateful replay measured on two shared cores (README, Performance), so an estimate
# errs long rather than short.
PLATFORM_REPLAY_RATE = 5_000.0
# Bytes per second a copy of table and state files takes (the state is decoded and written
# again): a tenth of what a local disk copies, for shared or network storage.
COPY_BYTES_PER_S = 50e6


class ChangeCosts(BaseModel):
    """Estimated seconds of a full replay and of a forward-only start, with their inputs."""

    model_config = ConfigDict(frozen=True)

    records_in_log: int
    replay_rate_per_s: float
    rate_measured: bool  # False: the platform's figure, no version reported a rate
    full_replay_s: float
    copy_bytes: int
    records_after_cut: int
    forward_only_s: float

    def lines(self) -> list[str]:
        rate = "measured" if self.rate_measured else "platform figure"
        return [
            f"full replay: ~{duration(self.full_replay_s)} ({self.records_in_log:,} records at "
            f"{self.replay_rate_per_s:,.0f} records/s, {rate})",
            f"forward-only: ~{duration(self.forward_only_s)} (copy {self.copy_bytes / 1e6:,.1f} "
            f"MB of table and state at {COPY_BYTES_PER_S / 1e6:.0f} MB/s, then "
            f"{self.records_after_cut:,} records)",
        ]


def duration(seconds: float) -> str:
    """``3h 05m``, ``4m 10s``, ``12s`` or ``0.4s``."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def estimate(
    records_in_log: int, records_after_cut: int, copy_bytes: int, rates: Iterable[float]
) -> ChangeCosts:
    """The costs for these sizes; ``rates``: the processed records per second versions of the
    pipeline reported (none, or only zeros: the platform's figure)."""
    measured = [r for r in rates if r > 0]
    rate = max(measured) if measured else PLATFORM_REPLAY_RATE
    return ChangeCosts(
        records_in_log=records_in_log,
        replay_rate_per_s=rate,
        rate_measured=bool(measured),
        full_replay_s=records_in_log / rate,
        copy_bytes=copy_bytes,
        records_after_cut=records_after_cut,
        forward_only_s=copy_bytes / COPY_BYTES_PER_S + records_after_cut / rate,
    )


def costs_from_live(
    settings: Settings, topics: tuple[str, ...], live: Deployment, rates: Iterable[float] = ()
) -> ChangeCosts:
    """The costs of a new version reading ``topics`` beside the ``live`` deployment, from the
    log's bounds now (asks the broker) and the live version's files."""
    with KafkaLog.of(settings.kafka, timeout_s=5.0) as log:
        earliest, latest = log.bounds(topics)
    position = last_end_offsets(live.table_path) or earliest
    return estimate(
        records_in_log=off.total_lag(earliest, latest),
        records_after_cut=off.total_lag(position, latest),
        copy_bytes=table_bytes(live.table_path) + folder_bytes(live.state_path),
        rates=rates,
    )


def table_bytes(path: Path) -> int:
    """The bytes of a table's live data files and their deletion vectors (0 without a table)."""
    if not path.exists():
        return 0  # (opening a store would create the folder)
    store = TableStore(TableLocation.of(path))
    try:
        snapshot = replay(store)
    except TableError:
        return 0
    dv_files = {
        e.deletion_vector.file_name
        for e in snapshot.files.values()
        if e.deletion_vector is not None and e.deletion_vector.storage_type == "u"
    }
    sizes = {name: size for name, size, _ in store.list() if name in dv_files}
    return sum(e.size for e in snapshot.files.values()) + sum(sizes.values())


def folder_bytes(path: Path) -> int:
    """The bytes of every file under ``path`` (0 when it does not exist)."""
    if not path.is_dir():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
