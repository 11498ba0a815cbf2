"""What each batch commit of a compacted table records, written and read in this one place.

Every micro-batch's Delta commit carries, in its commit info, the batch id, the source end
offsets it reflects (Spark's offset JSON), the deployment and the pipeline's fingerprint; a
stateful plan's commit also carries its state's version: per state partition, the batch whose
state files the table reflects (the state to resume from).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streaming.kafka import offsets as off

BATCH_ID = "kappa.batch_id"
END_OFFSETS = "kappa.end_offsets"
DEPLOYMENT = "kappa.deployment"
FINGERPRINT = "kappa.fingerprint"
STATE_VERSIONS = "kappa.state_versions"


@dataclass(frozen=True)
class Commit:
    """One batch commit of a compacted table."""

    table_version: int
    batch_id: int
    end_offsets: off.OffsetMap
    timestamp_ms: int
    fingerprint: str = ""
    state_versions: dict[int, int] | None = None  # state partition -> batch (stateful plans)


def commit_info(
    batch_id: int,
    end_offsets: dict[str, Any],
    deployment: str,
    fingerprint: str,
    state_versions: Mapping[int, int] | None = None,
) -> dict[str, str]:
    """The custom commit info of one batch's commit."""
    info = {
        BATCH_ID: str(batch_id),
        END_OFFSETS: json.dumps(end_offsets, separators=(",", ":")),
        DEPLOYMENT: deployment,
        FINGERPRINT: fingerprint,
    }
    if state_versions is not None:
        versions = {str(p): v for p, v in sorted(state_versions.items())}
        info[STATE_VERSIONS] = json.dumps(versions, separators=(",", ":"))
    return info


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
        state_versions=_state_versions(entry.get(STATE_VERSIONS)),
    )


def _state_versions(value: Any) -> dict[int, int] | None:
    if value is None:
        return None
    parsed = json.loads(value) if isinstance(value, str) else value
    return {int(p): int(v) for p, v in parsed.items()}
