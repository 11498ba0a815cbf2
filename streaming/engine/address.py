"""Where a running engine listens, written by the engine and read by its clients.

``$KAPPA_HOME/run/engine.json`` holds the host, the port, the engine's pid and a token every
request must carry. The file is readable by its owner only: whoever can read it can steer the
engine, as whoever can write the platform home can. The run host (``assets.run_host``) keeps its
address the same way, in a dataclass of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from streaming.atomic_file import write_atomically


@dataclass(frozen=True)
class EngineAddress:
    host: str
    port: int
    pid: int
    token: str
    started_at: float
    master: str

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def new_token() -> str:
    return secrets.token_urlsafe(24)


Address = TypeVar("Address")


def write_address(path: Path, address: Any) -> None:
    """Write ``address`` (a dataclass) where its clients read it, for its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(asdict(address)), mode=0o600)


def read_address(path: Path, kind: type[Address]) -> Address | None:
    """The address in ``path``, or None when none was written (or it is unreadable)."""
    try:
        return kind(**json.loads(path.read_text()))
    except (FileNotFoundError, ValueError, TypeError):
        return None


def remove_address(path: Path, pid: int | None = None) -> None:
    """Remove the address file (only if it is ``pid``'s, when given)."""
    current = read_address(path, dict)
    if current is not None and pid is not None and current.get("pid") != pid:
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
