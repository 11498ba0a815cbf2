"""Operator tools of the kappa platform: the ``kappa`` CLI, the embedded broker, the demo producer,
``kappa up``, process management and the Dagster API client.

Nothing here starts a process, opens a socket or reads the environment at import time.
"""
