"""What each batch commit of a compacted table records, written and read in this one place.

Every micro-batch's Delta commit carries, in its commit info, the batch id, the source end
offsets it reflects (Spark's offset JSON), the deployment and the pipeline's fingerprint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from streaming.kafka import offsets as off

BATCH_ID = "kappa.batch_id"
END_OFFSETS = "kappa.end_offsets"
DEPLOYMENT = "kappa.deployment"
FINGERPRINT = "kappa.fingerprint"


@dataclass(frozen=True)
class Commit:
    """One batch commit of a compacted table."""

    table_version: int
    batch_id: int
    end_offsets: off.OffsetMap
    timestamp_ms: int
    fingerprint: str = ""


def commit_info(
    batch_id: int, end_offsets: dict[str, Any], deployment: str, fingerprint: str
) -> dict[str, str]:
    """The custom commit info of one batch's commit."""
    return {
        BATCH_ID: str(batch_id),
        END_OFFSETS: json.dumps(end_offsets, separators=(",", ":")),
        DEPLOYMENT: deployment,
        FINGERPRINT: fingerprint,
    }


def parse_commit(entry: dict[str, Any]) -> Commit | None:
    """The batch commit a Delta log entry records (None for other entries, e.g. the create)."""
    if BATCH_ID not in entry or END_OFFSETS not in entry:
        return None
    return Commit(
        table_version=int(entry["version"]),
        batch_id=int(entry[BATCH_ID]),
        end_offsets=off.from_spark(json.loads(entry[END_OFFSETS])),
        timestamp_ms=int(entry.get("timestamp", 0)),
        fingerprint=str(entry.get(FINGERPRINT, "")),
    )
