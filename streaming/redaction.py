"""Which settings hold secrets, and how they are shown: masked wherever settings are printed,
logged or attached to Dagster metadata."""

from __future__ import annotations

from collections.abc import Mapping

# A setting whose name holds one of these is a secret.
_SECRET_MARKERS = ("password", "secret", "token", "key.pem", "private", "credential", "jaas")
MASK = "***"


def is_secret_setting(name: str) -> bool:
    """Whether a setting's name says its value is a secret (a password, key, token, ...)."""
    lowered = name.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def redacted(values: Mapping[str, str]) -> dict[str, str]:
    """``values`` with the value of every secret-looking setting masked."""
    return {k: (MASK if is_secret_setting(k) else v) for k, v in values.items()}
