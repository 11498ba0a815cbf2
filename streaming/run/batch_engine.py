"""What computes and writes one micro-batch for the deployment's ``BatchWriter``
(``streaming.run.micro_batch``), which then commits it: a plan's engine
(``streaming.run.planned_batch``) or the deprecated per-batch transform's
(``streaming.run.transform_batch``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Written:
    """What an engine wrote of one batch, for the writer to commit: the dead letters first,
    then the table."""

    input_rows: int
    dead_letters: pa.Table | None  # the dead-letter files' entries (None: none were written)
    shares: pa.Table | None = None  # the table's written shares (``streaming.delta.data_files``)
    changes: pa.Table | None = None  # or, for a table that takes no shares, its changes
    state_versions: dict[int, int] | None = None  # a plan's state versions after the batch


class BatchEngine(Protocol):
    def write(
        self, batch: DataFrame, batch_id: int, ends: dict[str, Any], committed: int | None
    ) -> Written:
        """Compute and write batch ``batch_id`` (the source's records, ending at ``ends``),
        the table's last commit being batch ``committed``."""
        ...

    def committed(self, batch_id: int, written: Written) -> None:
        """The table committed ``batch_id`` as ``written``."""
        ...

    def close(self) -> None:
        """Release what the engine holds once the query is over."""
        ...
