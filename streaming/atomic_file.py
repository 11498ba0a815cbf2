"""Replacing a small file so that readers see the old or the new content, never a mix."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, content: str | bytes, mode: int = 0o644) -> None:
    """Write ``content`` to a hidden temporary file beside ``path``, fsync it, rename it over
    ``path`` and fsync the directory, so the change is whole and survives a crash.

    The temporary name starts with a dot so directory listings that skip hidden names never
    see a half-written file. ``mode`` is set before anything is written (a private file is never
    readable by others, even for a moment).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.fchmod(fd, mode)
    with open(fd, "wb") as handle:
        handle.write(content.encode() if isinstance(content, str) else content)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def publish_written(partial: Path, target: Path, what: str) -> None:
    """Rename ``partial``, which a child process was to write, over ``target``; refuse an empty
    or missing one, so a half-built file never takes ``target``'s name."""
    if not partial.is_file() or partial.stat().st_size == 0:
        msg = f"{what} was not written to {partial}"
        raise RuntimeError(msg)
    os.replace(partial, target)
