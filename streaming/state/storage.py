"""Where state files live: a flat directory of named files written whole or not at all.

Local directories write a temporary file, fsync it, rename it over the name and fsync the
directory. Any other pyarrow filesystem (S3-compatible storage) writes the object under its
final name, which object stores make visible atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import pyarrow.fs as pafs

from streaming.atomic_file import write_atomically


class StateDirectory(Protocol):
    """A flat namespace of whole files."""

    def write(self, name: str, data: bytes) -> None:
        """Store ``data`` under ``name`` atomically and durably, replacing any previous file."""

    def read(self, name: str) -> bytes:
        """The content of ``name``."""

    def size(self, name: str) -> int:
        """The size of ``name`` in bytes."""

    def names(self) -> list[str]:
        """The names present (no temporary files)."""

    def delete(self, name: str) -> None:
        """Remove ``name``; no error if it is absent."""


class LocalDirectory:
    """A directory on the local filesystem."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def write(self, name: str, data: bytes) -> None:
        write_atomically(self.path / name, data)

    def read(self, name: str) -> bytes:
        return (self.path / name).read_bytes()

    def size(self, name: str) -> int:
        return (self.path / name).stat().st_size

    def names(self) -> list[str]:
        if not self.path.is_dir():
            return []
        return sorted(p.name for p in self.path.iterdir() if not p.name.startswith("."))

    def delete(self, name: str) -> None:
        (self.path / name).unlink(missing_ok=True)


class ArrowDirectory:
    """A directory on any pyarrow filesystem (e.g. ``pyarrow.fs.S3FileSystem``)."""

    def __init__(self, filesystem: pafs.FileSystem, path: str) -> None:
        self.filesystem = filesystem
        self.path = path.rstrip("/")

    def write(self, name: str, data: bytes) -> None:
        self.filesystem.create_dir(self.path, recursive=True)
        with self.filesystem.open_output_stream(f"{self.path}/{name}") as stream:
            stream.write(data)

    def read(self, name: str) -> bytes:
        with self.filesystem.open_input_stream(f"{self.path}/{name}") as stream:
            return stream.read()

    def size(self, name: str) -> int:
        return int(self.filesystem.get_file_info(f"{self.path}/{name}").size)

    def names(self) -> list[str]:
        selector = pafs.FileSelector(self.path, allow_not_found=True)
        infos = self.filesystem.get_file_info(selector)
        return sorted(
            info.base_name
            for info in infos
            if info.type == pafs.FileType.File and not info.base_name.startswith(".")
        )

    def delete(self, name: str) -> None:
        info = self.filesystem.get_file_info(f"{self.path}/{name}")
        if info.type != pafs.FileType.NotFound:
            self.filesystem.delete_file(f"{self.path}/{name}")


def open_directory(location: str | Path) -> StateDirectory:
    """A local path, or a URI pyarrow understands (``s3://bucket/prefix``, ``file:///...``)."""
    text = str(location)
    if "://" not in text:
        return LocalDirectory(text)
    filesystem, path = pafs.FileSystem.from_uri(text)
    if isinstance(filesystem, pafs.LocalFileSystem):
        return LocalDirectory(path)
    return ArrowDirectory(filesystem, path)
