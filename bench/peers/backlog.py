"""A workload's backlog: its topics made afresh, every record written as fast as possible and
fed to the plain-Python reference, and the reference's table computed once; and the private
embedded broker the benchmarks write it to."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.peers.producing import LogWriter, Written, recreate_topics, write_backlog
from bench.peers.reference import Reference, reference_for
from bench.peers.workloads import Disorder, Workload, backlog_disorder, make
from streaming.settings import Settings


@dataclass(frozen=True)
class Backlog:
    workload: Workload
    written: Written
    reference: Reference
    expected: dict[Any, tuple]  # the reference's table over the whole backlog
    seconds: float  # how long writing it took


def write_workload_backlog(
    settings: Settings,
    name: str,
    keys: int,
    seed: int,
    events: int,
    disorder: Disorder | None = None,
) -> Backlog:
    """``events`` records of workload ``name`` (disordered as its backlog is by default)."""
    workload = make(name, keys, seed, backlog_disorder(name) if disorder is None else disorder)
    recreate_topics(settings, workload.topics)
    reference = reference_for(name)
    writer = LogWriter(settings.kafka.bootstrap_servers, reference.add)
    seconds = write_backlog(writer, workload, events)
    return Backlog(workload, writer.written, reference, reference.table(), seconds)


@contextmanager
def private_broker(prefix: str, keep: bool = False) -> Iterator[tuple[Path, Settings]]:
    """A temporary directory and an embedded broker in it, with the settings that reach it;
    the broker stopped and the directory removed (unless ``keep``) on the way out."""
    from bench.support.settings import private_settings
    from kappa.broker import EmbeddedBroker

    root = Path(tempfile.mkdtemp(prefix=prefix))
    settings = private_settings(root / "broker-home", full_jit=True, **{"broker.heap": "1g"})
    broker = EmbeddedBroker(settings)
    broker.start()
    try:
        yield root, settings
    finally:
        broker.stop()
        if keep:
            print(f"kept {root}", flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
