"""Nested settings addressed by dotted keys, as flags and environment variables name them
(``broker.port``, ``kafka.client.security.protocol``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set a nested key; below ``kafka.client.`` and ``spark.conf.`` the rest is one key."""
    for mapping in ("kafka.client.", "spark.conf."):
        if dotted.startswith(mapping):
            parents, leaf = mapping.rstrip(".").split("."), dotted.removeprefix(mapping)
            break
    else:
        *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[leaf] = value


def get_dotted(data: Mapping[str, Any], dotted: str) -> Any:
    """The value at a key two levels deep at most (``broker.port``), or None."""
    parent, _, leaf = dotted.rpartition(".")
    return (data.get(parent) or {}).get(leaf) if parent else data.get(leaf)
