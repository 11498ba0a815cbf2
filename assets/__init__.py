"""Dagster definitions of the kappa platform: topics, streaming tables, checks, jobs and sensors.

Dagster steers; it never sits in the data path. ``assets.definitions.defs`` is what
``workspace.yaml`` loads.
"""
