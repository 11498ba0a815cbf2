"""Quix Streams in a virtual environment of its own, created in the cache at first use.

Quix Streams 3.28.1 (the newest on PyPI on 2026-11-27) requires ``confluent-kafka<2.13`` (it
would install 2.12.2) and ``pydantic<2.14``, while the project pins confluent-kafka 2.16.1; in
the project's environment pip would downgrade the platform's Kafka client. So it lives in
``<cache>/venvs/quixstreams-<version>/``, and the Quix application (``quix_app.py``) imports
nothing from this repository.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

VERSION = "3.28.1"
APP = Path(__file__).with_name("quix_app.py")
_DONE = ".installed"


def python(cache_dir: Path) -> Path:
    """The Quix environment's interpreter, installing it first if needed (about 30 s).

    A venv's scripts name its own path, so it is made in place; the marker file is written
    last, and a venv without it (an install that was interrupted) is made again."""
    venv = cache_dir / "venvs" / f"quixstreams-{VERSION}"
    if not (venv / _DONE).is_file():
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        # The base interpreter: the environment must outlive this project's .venv.
        base = getattr(sys, "_base_executable", sys.executable)
        try:
            subprocess.run([base, "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
            subprocess.run([*pip, f"quixstreams=={VERSION}"], check=True)
        except (OSError, subprocess.CalledProcessError):
            shutil.rmtree(venv, ignore_errors=True)
            raise
        (venv / _DONE).write_text(f"quixstreams=={VERSION}\n")
    return venv / "bin" / "python"


def command(cache_dir: Path, *args: str) -> list[str]:
    return [str(python(cache_dir)), str(APP), *args]
