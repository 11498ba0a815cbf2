"""The platform's errors: one root, one subclass per concern.

Every error a user can fix is a :class:`KappaError` whose message says what happened and what to
do; the command lines print it as one line and Dagster shows it as the run's failure. Errors of a
single module live next to it and subclass the concern's class here.
"""


class KappaError(Exception):
    """Base class of every error the platform reports to a user as a one-line message."""


class ConfigError(KappaError):
    """A setting is missing or invalid."""


class JvmLibraryError(KappaError):
    """A JVM library the platform runs (``streaming.jars``) is not resolved, or cannot be."""


class DefineError(KappaError, ValueError):
    """A pipeline declaration is invalid (``streaming.define``)."""


class InvalidNameError(DefineError):
    """A pipeline or version name is unsafe to use in paths and identifiers."""


class UnknownPipelineError(DefineError):
    """No pipeline with that name is registered."""


class PipelineRegistryError(DefineError):
    """The configured pipeline modules cannot be loaded."""


class KafkaLogError(KappaError):
    """Reading or managing the Kafka log failed (``streaming.kafka``)."""


class SourceOptionError(KafkaLogError):
    """An option of the Kafka source is invalid."""


class BrokerUnavailableError(KafkaLogError):
    """The Kafka cluster did not answer in time."""


class DataLossError(KafkaLogError):
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


class TableError(KappaError):
    """A compacted or dead-letter table cannot be read or written (``streaming.delta``)."""


class TableNotFoundError(TableError, FileNotFoundError):
    """No table at the path: its pipeline has not committed a batch yet."""


class QueryError(KappaError):
    """A query over the tables cannot be answered as asked (``streaming.query``): bad SQL, an
    unknown table or key, or no consistent cut of the log."""


class RunError(KappaError):
    """A deployment cannot start or its query failed (``streaming.run``)."""


class VersionError(KappaError):
    """A version operation is refused (``streaming.versions``): promote, rollback, retire."""
