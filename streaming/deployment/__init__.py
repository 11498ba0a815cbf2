"""A deployment: one version of one pipeline, and everything it owns under the platform home.

- ``record``: the :class:`Deployment` record (identity and every path it owns), where retire,
  ``kappa reset`` and the tools find what to read or delete;
- ``checkpoint``: the one reader of its Spark checkpoint;
- ``lock``: one running copy per deployment;
- ``code_pin``: the code it runs, pinned at its first start.
"""

from streaming.deployment.checkpoint import SparkCheckpoint
from streaming.deployment.lock import DeploymentBusyError, DeploymentLock
from streaming.deployment.record import (
    Comparison,
    Deployment,
    deployment_id,
    deployments_on_disk,
    derived_state,
)

__all__ = [
    "Comparison",
    "Deployment",
    "DeploymentBusyError",
    "DeploymentLock",
    "SparkCheckpoint",
    "deployment_id",
    "deployments_on_disk",
    "derived_state",
]
