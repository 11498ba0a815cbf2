"""Dagster jobs, sensors and metadata that drive the version lifecycle of
``streaming.versions``."""
