"""A deployment is (pipeline, version): it owns its checkpoint, table and dead-letter table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streaming.define.names import validate_pipeline_name, validate_version


@dataclass(frozen=True)
class Deployment:
    """Where one version of one pipeline keeps its state, under the platform home."""

    pipeline: str
    version: str
    home: Path

    def __post_init__(self) -> None:
        validate_pipeline_name(self.pipeline)
        validate_version(self.version)

    @property
    def id(self) -> str:
        return f"{self.pipeline}__{self.version}"

    @property
    def table_path(self) -> Path:
        return self.home / "tables" / self.id

    @property
    def checkpoint_path(self) -> Path:
        return self.home / "checkpoints" / self.id

    @property
    def dead_letter_path(self) -> Path:
        return self.home / "dead_letters" / self.id

    @property
    def lock_path(self) -> Path:
        return self.home / "locks" / f"{self.id}.lock"

    @property
    def app_id(self) -> str:
        """The Delta application id that makes this deployment's batch commits idempotent."""
        return f"kappa:{self.id}"
