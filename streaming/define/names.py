"""Pipeline and version names: checked before they touch the filesystem, so no name can escape
the platform home or make two deployments share state."""

from __future__ import annotations

import re

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
