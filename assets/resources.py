"""Dagster resources: the platform settings, and the Spark session of checks and version jobs.

Spark inside Dagster (quality suites, comparisons, promotions) comes from ``dagster_pyspark``'s
lazy resource, configured from the platform settings: a step that needs no Spark starts none.
"""

from __future__ import annotations

import os

from dagster import ConfigurableResource, InitResourceContext
from dagster_pyspark import LazyPySparkResource

from streaming.settings import Settings, load_settings
from streaming.spark.session import python_environment, session_conf


class KappaSettings(ConfigurableResource):
    """The platform's settings (``platform/kappa.yaml`` + environment), as a Dagster resource.

    ``config_file`` and ``home`` override the file and ``KAPPA_HOME`` when set.
    """

    config_file: str | None = None
    home: str | None = None

    def load(self) -> Settings:
        return load_settings(self.config_file, overrides={"home": self.home})


class KappaSpark(LazyPySparkResource):
    """The platform's Spark session for a step, built on first use.

    ``spark_config`` holds every setting (master and application name included); the Python
    the session's workers run is this environment's, as for the streaming jobs.
    """

    python_env: dict[str, str]

    def setup_for_execution(self, context: InitResourceContext) -> None:
        os.environ.update(self.python_env)


def spark_resource(settings: Settings) -> KappaSpark:
    return KappaSpark(
        spark_config=session_conf(settings, app_name="kappa-dagster"),
        python_env=python_environment(settings.spark),
    )
