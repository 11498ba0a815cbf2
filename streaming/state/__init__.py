"""Durable operator state: keyed Arrow tables, per-batch changelogs and snapshots.

Exports the table conventions (``with_key``, ``key_of``, ``TableDelta``, ``apply_delta``), the
key helpers (``key_mask``, ``last_per_key``) and ``StateStore``.
"""

from streaming.state.keyed_tables import (
    State,
    StateDelta,
    TableDelta,
    apply_delta,
    apply_state_delta,
    is_empty_delta,
    key_of,
    with_key,
)
from streaming.state.keys import joint_codes, key_mask, last_per_key
from streaming.state.store import StateStore, StateStoreError

__all__ = [
    "State",
    "StateDelta",
    "StateStore",
    "StateStoreError",
    "TableDelta",
    "apply_delta",
    "apply_state_delta",
    "is_empty_delta",
    "joint_codes",
    "key_mask",
    "key_of",
    "last_per_key",
    "with_key",
]
