"""Delta log entries the sink writes itself, and publishing one as the next table version.

delta-rs 1.6 cannot express "this file now has a deletion vector": its ``AddAction`` has no DV
field and ``create_write_transaction`` refuses a path that is both removed and added. So a
batch's entry is written here as JSON lines: the commit info (with the batch id and source
offsets), the application transaction, then per touched file a ``remove`` of the exact (path,
old DV) pair followed by an ``add`` of the same path with its new DV, and the ``add`` of each
new data file. delta-rs, polars and other Delta readers read these entries like their own.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

from streaming.delta.deletion_vectors import Descriptor
from streaming.delta.table_store import TableStore

CLIENT = "kappa-sink/1"


def log_name(version: int) -> str:
    return f"_delta_log/{version:020d}.json"


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class FileEntry:
    """A live data file: what its ``add`` action says, with its row count and DV."""

    path: str
    size: int
    modification_time: int
    num_records: int
    stats: str  # the add action's JSON stats
    deletion_vector: Descriptor | None = None

    @property
    def key(self) -> tuple[str, str]:
        """The file's identity in the log: (path, DV unique id)."""
        dv = self.deletion_vector
        return self.path, dv.unique_id if dv else ""

    def with_dv(self, descriptor: Descriptor) -> FileEntry:
        """The same file with a (new) DV: its statistics no longer bound only live rows."""
        stats = json.loads(self.stats) if self.stats else {"numRecords": self.num_records}
        stats["tightBounds"] = False
        return replace(self, deletion_vector=descriptor, stats=_dumps(stats))

    def add(self, data_change: bool = True) -> dict[str, Any]:
        action: dict[str, Any] = {
            "path": self.path,
            "partitionValues": {},
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": data_change,
            "stats": self.stats,
        }
        if self.deletion_vector is not None:
            action["deletionVector"] = self.deletion_vector.to_json()
        return {"add": action}

    def remove(self, data_change: bool = True) -> dict[str, Any]:
        action: dict[str, Any] = {
            "path": self.path,
            "deletionTimestamp": now_ms(),
            "dataChange": data_change,
            "extendedFileMetadata": True,
            "partitionValues": {},
            "size": self.size,
        }
        if self.deletion_vector is not None:
            action["deletionVector"] = self.deletion_vector.to_json()
        return {"remove": action}

    @classmethod
    def from_add(cls, action: dict[str, Any]) -> FileEntry:
        stats = action.get("stats") or ""
        dv = action.get("deletionVector")
        return cls(
            path=str(action["path"]),
            size=int(action["size"]),
            modification_time=int(action.get("modificationTime") or 0),
            num_records=int(json.loads(stats)["numRecords"]) if stats else -1,
            stats=stats,
            deletion_vector=Descriptor.from_json(dv) if dv else None,
        )


def commit_info(operation: str, read_version: int, custom: dict[str, str]) -> dict[str, Any]:
    """The entry's first action; ``custom`` keys sit at its top level, as delta-rs puts them."""
    info: dict[str, Any] = {
        "timestamp": now_ms(),
        "operation": operation,
        "operationParameters": {},
        "readVersion": read_version,
        "isBlindAppend": False,
        "clientVersion": CLIENT,
    }
    info.update(custom)
    return {"commitInfo": info}


def txn(app_id: str, batch_id: int) -> dict[str, Any]:
    return {"txn": {"appId": app_id, "version": batch_id, "lastUpdated": now_ms()}}


def publish(store: TableStore, version: int, actions: list[dict[str, Any]]) -> None:
    """Publish ``actions`` as table version ``version``, put-if-absent.

    Raises:
        CommitConflictError: another writer published that version first.
    """
    body = "\n".join(_dumps(a) for a in actions) + "\n"
    store.create(log_name(version), body.encode())


def parse_entry(content: bytes) -> list[dict[str, Any]]:
    """The actions of a published entry, in order (the inverse of ``publish``; blank lines,
    which other writers may leave, are skipped)."""
    return [json.loads(line) for line in content.decode().splitlines() if line.strip()]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
