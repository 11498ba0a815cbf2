"""Where a table's files live: a local (or shared) directory, or a prefix in an S3 bucket.

The sink writes its data files, DV files and log entries through :class:`TableStore` (obstore,
the Python binding of the object store delta-rs itself uses), so the same code runs on a path
and on S3. A log entry is published put-if-absent: on a file system a staged file hard-linked
to the entry's name, on S3 a PUT with ``If-None-Match: *``. Either fails if another writer
published that version first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from streaming.errors import TableError

# delta-rs storage options (the names of its environment variables) a location may carry.
ENDPOINT = "AWS_ENDPOINT_URL"
ACCESS_KEY = "AWS_ACCESS_KEY_ID"
SECRET_KEY = "AWS_SECRET_ACCESS_KEY"
REGION = "AWS_REGION"
ALLOW_HTTP = "AWS_ALLOW_HTTP"
_TO_OBSTORE = {
    ENDPOINT: "endpoint",
    ACCESS_KEY: "access_key_id",
    SECRET_KEY: "secret_access_key",
    REGION: "region",
}


class CommitConflictError(TableError):
    """Another writer published the same table version first."""


@dataclass(frozen=True)
class TableLocation:
    """A table's root: a local path or ``s3://bucket/prefix``, and the options to reach it.

    ``str()`` gives the URI alone, never the options (they may hold credentials).
    """

    uri: str
    options: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, where: TableLocation | Path | str) -> TableLocation:
        if isinstance(where, TableLocation):
            return where
        text = str(where)
        return cls(text if "://" in text else str(Path(text).resolve()))

    def __str__(self) -> str:
        return self.uri

    @property
    def is_local(self) -> bool:
        return "://" not in self.uri or self.uri.startswith("file://")

    @property
    def local_path(self) -> Path:
        if not self.is_local:
            msg = f"{self.uri} is not on a local file system"
            raise TableError(msg)
        return Path(self.uri.removeprefix("file://"))

    def delta_options(self) -> dict[str, str] | None:
        """Storage options for delta-rs (None for a local table)."""
        return dict(self.options) if self.options else None

    def child(self, name: str) -> TableLocation:
        return TableLocation(f"{self.uri.rstrip('/')}/{name}", self.options)


class TableStore:
    """The files of one table, by path relative to its root. Opened lazily (no I/O here)."""

    def __init__(self, location: TableLocation) -> None:
        self.location = location
        self._store: Any = None

    def _opened(self) -> Any:
        if self._store is None:
            from obstore.store import LocalStore, from_url

            if self.location.is_local:
                root = self.location.local_path
                self._store = LocalStore(str(root), mkdir=True)
            else:
                opts = self.location.options
                config = {_TO_OBSTORE[k]: v for k, v in opts.items() if k in _TO_OBSTORE}
                client = {"allow_http": opts.get(ALLOW_HTTP, "false").lower() == "true"}
                self._store = from_url(self.location.uri, config=config, client_options=client)
        return self._store

    def read(self, name: str) -> bytes:
        return self._get(name).to_bytes()

    def read_parquet(self, name: str, columns: list[str] | None = None) -> pa.Table:
        import pyarrow.parquet as pq

        return pq.read_table(pa.py_buffer(self._get(name)), columns=columns)

    def _get(self, name: str) -> Any:
        import obstore
        from obstore.exceptions import NotFoundError

        try:
            return obstore.get(self._opened(), name).bytes()
        except (FileNotFoundError, NotFoundError):
            msg = f"{self.location}: {name} is missing; were the table's files removed by hand?"
            raise TableError(msg) from None

    def write(self, name: str, data: bytes) -> None:
        import obstore

        obstore.put(self._opened(), name, data)

    def create(self, name: str, data: bytes) -> None:
        """Write ``name`` only if it does not exist yet.

        Raises:
            CommitConflictError: it exists (another writer created it first).
        """
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        try:
            obstore.put(self._opened(), name, data, mode="create")
        except (AlreadyExistsError, PreconditionError) as exc:
            msg = f"{self.location}: {name} was written by another writer first"
            raise CommitConflictError(msg) from exc

    def exists(self, name: str) -> bool:
        import obstore
        from obstore.exceptions import NotFoundError

        try:
            obstore.head(self._opened(), name)
        except (FileNotFoundError, NotFoundError):
            return False
        return True

    def list(self, prefix: str | None = None) -> Iterator[tuple[str, int, datetime]]:
        """(relative path, size, last modified) of every file under ``prefix``."""
        import obstore

        for chunk in obstore.list(self._opened(), prefix):
            for meta in chunk:
                yield meta["path"], int(meta["size"]), meta["last_modified"]

    def delete(self, names: list[str]) -> None:
        import obstore

        if names:
            obstore.delete(self._opened(), names)
