"""Operator side of the kappa platform: settings, the embedded broker, the demo producer, the CLI.

Nothing here starts a process, opens a socket or reads the environment at import time.
"""

from kappa.errors import KappaError

__all__ = ["KappaError"]
