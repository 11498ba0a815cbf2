"""The code location: everything ``workspace.yaml`` loads."""

from __future__ import annotations

from dagster import Definitions, PipesSubprocessClient

from assets.resources import KappaSettings
from assets.tables import table_asset
from assets.topics import topic_asset
from streaming.pipelines import PIPELINES

TOPICS = sorted({t for p in PIPELINES.values() for t in p.topics})

defs = Definitions(
    assets=[*(topic_asset(t) for t in TOPICS), *(table_asset(p) for p in PIPELINES.values())],
    resources={
        "kappa": KappaSettings(),
        "pipes_subprocess_client": PipesSubprocessClient(termination_timeout_seconds=30),
    },
)
