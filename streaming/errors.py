"""Errors raised by the streaming layer; each message says what happened and what to do."""


class StreamingError(Exception):
    """Base class of streaming-layer errors."""


class SourceOptionError(StreamingError):
    """An option of the Kafka source is invalid."""


class DataLossError(StreamingError):
    """Records the query still needed are gone from the log; the query stops rather than skip.

    Set the source option ``failOnDataLoss=false`` only if skipping them is acceptable, or
    reprocess the pipeline from the earliest offsets into a new version.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"DATA LOSS: {detail}. The query stopped instead of skipping records; reprocess from "
            "the earliest offsets into a new version (or set failOnDataLoss=false to skip)."
        )
        self.detail = detail


class BrokerUnavailableError(StreamingError):
    """The Kafka cluster did not answer in time."""


class UnknownPipelineError(StreamingError):
    """No pipeline with that name is registered."""


class InvalidNameError(StreamingError):
    """A pipeline or version name is unsafe to use in paths and identifiers."""


class PipelineRegistryError(StreamingError):
    """The configured pipeline modules cannot be loaded."""
