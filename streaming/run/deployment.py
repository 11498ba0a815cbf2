"""A deployment is (pipeline, version): it owns its table, checkpoint, dead letters, lock, pinned
code, alignment cap and log, all named after its id under the platform home."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streaming.define.names import validate_pipeline_name, validate_version
from streaming.home import Home, as_home


@dataclass(frozen=True)
class Deployment:
    """Where one version of one pipeline keeps its state, under the platform home."""

    pipeline: str
    version: str
    home: Home

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", as_home(self.home))
        validate_pipeline_name(self.pipeline)
        validate_version(self.version)

    @property
    def id(self) -> str:
        return f"{self.pipeline}__{self.version}"

    @property
    def table_path(self) -> Path:
        return self.home.table(self.id)

    @property
    def checkpoint_path(self) -> Path:
        return self.home.checkpoint(self.id)

    @property
    def state_path(self) -> Path:
        """The operator state of a stateful plan, one file per batch id."""
        return self.home.operator_state(self.id)

    @property
    def dead_letter_path(self) -> Path:
        return self.home.dead_letters(self.id)

    @property
    def lock_path(self) -> Path:
        return self.home.lock(self.id)

    @property
    def code_pin_path(self) -> Path:
        """The copy of the pipeline module this deployment runs (see ``versions.code_pins``)."""
        return self.home.code_pin(self.id)

    @property
    def alignment_path(self) -> Path:
        """The cap a non-live version reads its source up to (``streaming.versions.alignment``)."""
        return self.home.alignment_cap(self.id)

    @property
    def log_path(self) -> Path:
        return self.home.deployment_log(self.id)

    @property
    def app_id(self) -> str:
        """The Delta application id that makes this deployment's batch commits idempotent."""
        return f"kappa:{self.id}"
