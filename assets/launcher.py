"""Launching a streaming deployment from a Dagster step and relaying what it reports.

The Dagster run is the deployment's handle for as long as it runs: launching it starts the
deployment, its step relays the deployment's reports as events on the version's partition
(``assets.relay``), and terminating the run stops the deployment at a micro-batch boundary.

Where the deployment runs:

- in the engine (``assets.engine_link``, the default): a streaming query of the platform's one
  long-lived Spark application, which the step starts if none answers;
- in a Spark application of its own (``assets.own_process``), for the pipelines listed under
  ``engine.own_application``: a ``python -m streaming run`` subprocess reporting through Pipes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dagster import AssetExecutionContext

from assets.engine_link import run_in_engine
from assets.own_process import run_in_own_process
from streaming.deployment import Deployment
from streaming.run.options import LaunchOptions
from streaming.settings import Settings


def in_own_application(settings: Settings, pipeline: str) -> bool:
    return pipeline in settings.engine.own_application


def run_deployment(
    context: AssetExecutionContext,
    deployment: Deployment,
    options: LaunchOptions,
    settings: Settings,
) -> Iterator[Any]:
    """Run the deployment to its end (caught up, stopped, failed), yielding Dagster events."""
    if in_own_application(settings, deployment.pipeline):
        yield from run_in_own_process(context, deployment, options, settings)
    else:
        yield from run_in_engine(context, deployment, options, settings)
