"""The engine: one long-lived Spark application that hosts many deployments.

Each deployment (a pipeline at a version) is a streaming query of the engine's one SparkSession,
started in a thread of its own (``streaming.engine.hosted``) with its own checkpoint, lock and
stop; the deployments' batches share one scheduler pool in the order they arrive
(``streaming.engine.pools``). A deployment whose pipeline raises fails its own query; the
others keep committing. A deployment whose topics have no new records starts no Spark job: its
source finds nothing new at each trigger.

Clients (the Dagster runs that are the deployments' handles, ``kappa``) reach it over HTTP on
127.0.0.1 (``streaming.engine.server``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from pyspark.sql import SparkSession

from streaming.engine.hosted import DeploymentRequest, HostedDeployment
from streaming.engine.pools import QUALITY
from streaming.errors import RunError
from streaming.settings import Settings

STOP_WAIT_S = 60.0


class EngineBusyError(RunError):
    """The deployment already runs in the engine, for another client."""


class UnknownDeploymentError(RunError):
    """The engine hosts no such deployment."""


class Engine:
    def __init__(self, settings: Settings, spark: SparkSession) -> None:
        self.settings = settings
        self.spark = spark
        self.started_at = time.time()
        self._hosted: dict[str, HostedDeployment] = {}
        self._lock = threading.Lock()

    def submit(self, request: DeploymentRequest) -> HostedDeployment:
        """Start ``request``'s deployment, or give the running one back to the run that started
        it (a client reconnecting, or the step of a run whose launch started it). Refused while
        it runs for another run."""
        with self._lock:
            current = self._hosted.get(request.id)
            if current is not None and current.active:
                if current.request.run_id == request.run_id:
                    if request.claim_within_s is None:
                        current.claim()
                    return current
                msg = (
                    f"deployment {request.id} is already running in the engine (run "
                    f"{current.request.run_id or '-'}); stop it first (kappa stop)"
                )
                raise EngineBusyError(msg)
            hosted = HostedDeployment(request, self.settings, self.spark)
            self._hosted[request.id] = hosted
        return hosted.start()

    def get(self, deployment_id: str) -> HostedDeployment:
        with self._lock:
            hosted = self._hosted.get(deployment_id)
        if hosted is None:
            msg = f"the engine hosts no deployment {deployment_id}"
            raise UnknownDeploymentError(msg)
        return hosted

    def stop(self, deployment_id: str) -> HostedDeployment:
        hosted = self.get(deployment_id)
        hosted.stop()
        return hosted

    def deployments(self) -> list[HostedDeployment]:
        with self._lock:
            return list(self._hosted.values())

    def validate(self, pipeline: str, version: str) -> dict[str, Any]:
        """Run ``pipeline``'s quality suite on ``version``'s snapshot with the engine's session,
        in a scheduler pool of its own, so a suite starts no Spark application of its own. The
        result is saved where every reader finds it (the version's validation file)."""
        from streaming.define.registry import get_pipeline
        from streaming.table_quality import run_table_suite

        declared = get_pipeline(self.settings.pipelines, pipeline)
        context = self.spark.sparkContext
        context.setLocalProperty("spark.scheduler.pool", QUALITY)
        try:
            deployment, result = run_table_suite(
                self.settings, declared, version, spark=lambda: self.spark
            )
        finally:
            context.setLocalProperty("spark.scheduler.pool", None)  # type: ignore[arg-type]
        return {
            "deployment": deployment.id,
            "validation": str(deployment.validation_path),
            "success": bool(result.success),
        }

    def describe(self) -> dict[str, Any]:
        hosted = self.deployments()
        return {
            "started_at": self.started_at,
            "master": self.spark.sparkContext.master,
            "deployments": len(hosted),
            "active": sum(1 for h in hosted if h.active),
        }

    def shutdown(self, timeout_s: float = STOP_WAIT_S) -> list[str]:
        """Stop every deployment at a batch boundary; returns those still running after
        ``timeout_s``."""
        hosted = self.deployments()
        for deployment in hosted:
            deployment.stop()
        deadline = time.monotonic() + timeout_s
        return [h.id for h in hosted if not h.join(max(0.0, deadline - time.monotonic()))]
