"""Errors of the operator tools (the embedded broker, the Dagster API); all are ``KappaError``s."""

from streaming.errors import KappaError


class OperatorError(KappaError):
    """An operator tool cannot do what was asked (``kappa``)."""


class BrokerError(OperatorError):
    """The embedded broker cannot be started, stopped or found."""


class DagsterApiError(OperatorError):
    """The running Dagster does not answer, or refuses a request."""


class ClusterError(OperatorError):
    """The Spark standalone cluster cannot be started, or is not in the state asked for."""
