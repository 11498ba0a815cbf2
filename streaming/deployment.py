"""A deployment is (pipeline, version): it owns its checkpoint, table and dead-letter table.

Names are validated before they touch the filesystem, so two versions never share state and
no name can escape the platform home.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from streaming.errors import InvalidNameError

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")


def validate_pipeline_name(name: str) -> str:
    if not _NAME.fullmatch(name or ""):
        msg = (
            f"pipeline name {name!r} is invalid: use 1-48 characters, lower-case letters, digits "
            "and '_', starting with a letter"
        )
        raise InvalidNameError(msg)
    return name


def validate_version(version: str) -> str:
    if not _VERSION.fullmatch(version or "") or ".." in version:
        msg = (
            f"version {version!r} is invalid: use 1-32 characters from letters, digits, '_', '-' "
            "and '.', starting with a letter or digit, without '..'"
        )
        raise InvalidNameError(msg)
    return version


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
