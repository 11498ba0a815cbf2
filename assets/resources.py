"""Dagster resources: the platform settings, resolved once per run."""

from __future__ import annotations

from dagster import ConfigurableResource

from streaming.settings import Settings, load_settings


class KappaSettings(ConfigurableResource):
    """The platform's settings (``platform/kappa.yaml`` + environment), as a Dagster resource.

    ``config_file`` and ``home`` override the file and ``KAPPA_HOME`` when set.
    """

    config_file: str | None = None
    home: str | None = None

    def load(self) -> Settings:
        return load_settings(self.config_file, overrides={"home": self.home})
