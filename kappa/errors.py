"""Exceptions whose message tells the user what to fix."""


class KappaError(Exception):
    """Base class of every error the platform reports to a user as a one-line message."""


class ConfigError(KappaError):
    """A setting is missing or invalid."""


class BrokerError(KappaError):
    """The Kafka broker cannot be reached or managed."""
