"""The embedded broker together with its storage engine: what `kappa up` and `kappa broker` run.

``broker.storage: s3`` (the default) keeps the log in the platform's object store, which is
started before the broker and stopped after it; ``memory`` keeps it in the broker's memory, lost
when the broker stops. The engine a broker was started with is recorded next to its pid, so
``kappa broker status`` reports what runs, not what the settings say now.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kappa.broker import BrokerStatus, EmbeddedBroker
from kappa.object_store import BUCKET, ObjectStore, ObjectStoreStatus
from streaming.settings import Settings

S3_STORAGE = f"s3://{BUCKET}/"


@dataclass(frozen=True)
class LogBrokerStatus:
    broker: BrokerStatus
    engine: str | None
    data_dir: Path | None
    store: ObjectStoreStatus | None

    @property
    def running(self) -> bool:
        return self.broker.running

    def describe(self) -> str:
        lines = [self.broker.describe()]
        if self.running and self.engine == "s3":
            lines.append(
                f"storage: durable (tansu {S3_STORAGE} on the object store), log data in "
                f"{self.data_dir}"
            )
        elif self.running and self.engine == "memory":
            lines.append("storage: memory (the log is lost when the broker stops)")
        if self.store is not None and (self.store.running or self.engine == "s3"):
            lines.append(self.store.describe())
        return "\n".join(lines)


def log_broker_status(settings: Settings) -> LogBrokerStatus:
    broker = EmbeddedBroker(settings).status()
    recorded = _recorded(settings)
    engine = recorded.get("engine") if broker.running else None
    data_dir = Path(recorded["data_dir"]) if engine == "s3" and recorded.get("data_dir") else None
    store = ObjectStore(settings).status()
    return LogBrokerStatus(broker, engine, data_dir, store)


def start_log_broker(settings: Settings) -> LogBrokerStatus:
    """Start the configured engine's parts (object store first) unless the broker runs."""
    if EmbeddedBroker(settings).status().running:
        return log_broker_status(settings)
    engine = settings.broker.storage
    if engine == "memory":
        EmbeddedBroker(settings).start()
        _record(settings, {"engine": engine})
        return log_broker_status(settings)
    store = ObjectStore(settings)
    started_store = not store.status().running
    store.start()
    try:
        durable_broker(settings, store).start()
    except Exception:
        if started_store:
            store.stop()
        raise
    _record(settings, {"engine": engine, "data_dir": str(store.data_dir)})
    return log_broker_status(settings)


def durable_broker(settings: Settings, store: ObjectStore) -> EmbeddedBroker:
    """The embedded broker keeping its log in ``store`` (which must be running to start it)."""
    return EmbeddedBroker(settings, storage=S3_STORAGE, env=store.broker_env())


def stop_log_broker(settings: Settings) -> bool:
    """Stop the broker, then the object store; True if anything was running. A broker whose
    engine is not recorded as memory is stopped as a durable one (after its requests in flight)."""
    memory = _recorded(settings).get("engine") == "memory"
    storage = EmbeddedBroker.MEMORY if memory else S3_STORAGE
    stopped = EmbeddedBroker(settings, storage=storage).stop()
    stopped = ObjectStore(settings).stop() or stopped
    settings.home.broker_engine.unlink(missing_ok=True)
    return stopped


def _recorded(settings: Settings) -> dict[str, str]:
    """The engine ``start_log_broker`` recorded for the running broker ({} if none)."""
    try:
        return json.loads(settings.home.broker_engine.read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _record(settings: Settings, engine: dict[str, str]) -> None:
    settings.home.broker_engine.parent.mkdir(parents=True, exist_ok=True)
    settings.home.broker_engine.write_text(json.dumps(engine))
