"""The platform's typed settings, read once at the edge.

Precedence: explicit overrides (command-line flags) > environment variables > the config file
(``platform/kappa.yaml``, which holds the defaults of the Spark settings, the pipelines and the
topics) > the defaults below. This module is the only one that reads the environment or the
file; everything else receives a frozen :class:`Settings`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    field_validator,
)

from streaming.dotted import get_dotted, set_dotted
from streaming.errors import ConfigError
from streaming.home import Home, as_home
from streaming.redaction import MASK, is_secret_setting, redacted  # noqa: F401 (importable here too)

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG_FILE = REPO_ROOT / "platform" / "kappa.yaml"
RUN_ID_ENV = "KAPPA_RUN_ID"  # set for a deployment launched by a Dagster run
CRASH_AT_ENV = "KAPPA_CRASH_AT"  # set by fault tests: streaming.run.crash_point

_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
# Environment variables and the setting each one sets (besides KAPPA_KAFKA_<KEY>, a client
# setting, and KAPPA_SPARK_CONF, Spark settings as JSON).
_ENV = {
    "KAPPA_HOME": "home",
    "KAPPA_PIPELINES": "pipelines",
    "KAPPA_CACHE_DIR": "cache_dir",
    "KAFKA_BOOTSTRAP_SERVERS": "kafka.bootstrap_servers",
    "KAPPA_BROKER_PORT": "broker.port",
    "KAPPA_BROKER_CONTROLLER_PORT": "broker.controller_port",
    "KAPPA_BROKER_HEAP": "broker.heap",
    "KAPPA_BROKER_JAVA_OPTIONS": "broker.java_options",
    "KAPPA_PRODUCER_LINGER_MS": "producer.linger_ms",
    "KAPPA_SPARK_MASTER": "spark.master",
    "KAPPA_JVM_ARCHIVE": "spark.jvm_archive",
    "PYSPARK_PYTHON": "spark.pyspark_python",
    "JAVA_HOME": "spark.java_home",
    "SPARK_HOME": "spark.spark_home",
    "KAPPA_CLUSTER_PORT": "cluster.port",
    "KAPPA_CLUSTER_UI_PORT": "cluster.ui_port",
    "KAPPA_DAGSTER_PORT": "dagster.port",
    "KAPPA_ENGINE_HOST": "engine.host",
    "KAPPA_ENGINE_PORT": "engine.port",
    "KAPPA_ENGINE_ADVERTISED_HOST": "engine.advertised_host",
    "KAPPA_ENGINE_EXTERNAL": "engine.external",
    "KAPPA_OWN_APPLICATION": "engine.own_application",
    "KAPPA_RETRY_DELAY_S": "dagster.retry_delay_s",
    "KAPPA_SENSOR_INTERVAL_S": "dagster.sensor_interval_s",
    "KAPPA_RUN_HOST": "dagster.run_host",
    "KAPPA_RETENTION_HOURS": "versions.retention_hours",
    "KAPPA_QUALITY_AUTO": "quality.auto",
    "KAPPA_QUALITY_EVERY_S": "quality.every_s",
    "KAPPA_QUALITY_LOCAL_MAX_ROWS": "quality.local_max_rows",
    "KAPPA_CUTS_ENABLED": "cuts.enabled",
    "KAPPA_CUT_INTERVAL_S": "cuts.interval_s",
    "KAPPA_CUT_MAX_LAG_S": "cuts.max_lag_s",
}


def _strings(value: Any) -> Any:
    """Setting values as librdkafka and Spark want them: strings, booleans spelled in lower case."""
    if not isinstance(value, Mapping):
        return value
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


StringMap = Annotated[dict[str, str], BeforeValidator(_strings)]
HomeSetting = Annotated[Home, BeforeValidator(as_home), PlainSerializer(str)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSettings(_Frozen):
    """The Kafka cluster: where it is, client settings, and how the platform creates topics."""

    bootstrap_servers: str = "127.0.0.1:9092"
    client: StringMap = Field(default_factory=dict)
    topic_partitions: int = Field(default=4, ge=1, le=1024)
    topic_replication_factor: int = Field(default=1, ge=1, le=16)
    topic_config: StringMap = Field(default_factory=dict)  # every topic the platform creates
    topic_overrides: dict[str, StringMap] = Field(default_factory=dict)  # per topic name

    @field_validator("bootstrap_servers")
    @classmethod
    def _check_bootstrap(cls, value: str) -> str:
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                msg = f"bootstrap server {server!r} must look like host:port"
                raise ValueError(msg)
        return value

    def client_config(self) -> dict[str, str]:
        """The librdkafka configuration shared by every client (bootstrap plus pass-through)."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.client}

    def redacted_client(self) -> dict[str, str]:
        """Client settings safe to print or attach to metadata: secret values are masked."""
        return redacted(self.client)

    def config_of_topic(self, topic: str) -> dict[str, str]:
        """The settings a topic is created with: the platform's defaults, then the topic's own."""
        return {**self.topic_config, **self.topic_overrides.get(topic, {})}


class BrokerSettings(_Frozen):
    """The embedded Apache Kafka broker (one KRaft node; ``kappa.broker``): where it listens, the
    port of its controller, and its JVM heap. Its log lives under the platform home."""

    host: str = "127.0.0.1"
    port: int = Field(default=9092, ge=1, le=65535)
    controller_port: int = Field(default=9093, ge=1, le=65535)
    heap: str = Field(default="1g", pattern=r"^[0-9]+[kmgtKMGT]$")
    java_options: str = ""  # more JVM options for the broker, e.g. "-XX:TieredStopAtLevel=1"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class ProducerSettings(_Frozen):
    """How the demo producer batches: a record waits ``linger_ms`` at most, or ``batch_bytes``."""

    linger_ms: int = Field(default=100, ge=0, le=60_000)
    batch_bytes: int = Field(default=1_000_000, ge=1_000, le=100_000_000)


class SparkSettings(_Frozen):
    """Where Spark runs and with which settings, and the Java and Python it runs with."""

    master: str = "local[*]"
    conf: StringMap = Field(default_factory=dict)
    jvm_archive: str = ""  # the driver's class archive: "" (the cached one), "off", or a path
    pyspark_python: str | None = None  # the workers' Python, when not this interpreter
    java_home: str | None = None
    spark_home: str | None = None


class ClusterSettings(_Frozen):
    """The Spark standalone cluster ``kappa cluster start`` runs from the installed pyspark: a
    master and ``workers`` workers on 127.0.0.1. Pipelines use it when ``spark.master`` is
    its ``master_url``."""

    host: str = "127.0.0.1"
    port: int = Field(default=7077, ge=1, le=65535)
    ui_port: int = Field(default=8080, ge=1, le=65535)
    workers: int = Field(default=2, ge=1, le=64)
    worker_cores: int = Field(default=1, ge=1)
    worker_memory: str = Field(default="2g", pattern=r"^[0-9]+[kmgt]$")

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"


class DagsterSettings(_Frozen):
    host: str = "127.0.0.1"
    port: int = Field(default=3000, ge=1, le=65535)
    # The first delay before a crashed deployment is retried; each next one adds twice as much.
    retry_delay_s: float = Field(default=5.0, gt=0)
    # How often the sensors look for a new version, a caught-up candidate or a suite that is
    # due; Dagster's daemon evaluates sensors at most every 5 s, whatever is asked below that.
    sensor_interval_s: int = Field(default=10, ge=1)
    run_host: bool = True  # deployments' runs as threads of one run host (assets.run_host)


class EngineSettings(_Frozen):
    """The engine (``streaming.engine``): the one Spark application that hosts the
    deployments, and where its control interface listens."""

    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)  # 0: a free port, written in the home
    # The host clients reach the engine at, when it listens on all interfaces (a Kubernetes
    # Service's name); the bound host when empty.
    advertised_host: str = ""
    # Started and restarted by something else (a SparkApplication on Kubernetes): clients wait
    # for it instead of starting one of their own.
    external: bool = False
    # Pipelines whose deployments run in a Spark application of their own (hard isolation, at
    # the cost of a JVM, a driver and Python workers each) instead of in the engine.
    own_application: tuple[str, ...] = ()

    @field_validator("own_application", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        """A comma-separated string (KAPPA_OWN_APPLICATION) or a list of pipeline names."""
        if isinstance(value, str):
            return tuple(n.strip() for n in value.split(",") if n.strip())
        return value


class VersionSettings(_Frozen):
    """Side-by-side versions: how long a replaced version is kept, how long a comparison waits."""

    retention_hours: float = Field(default=24.0, ge=0)
    compare_wait_s: float = Field(default=300.0, gt=0)


class QualitySettings(_Frozen):
    """Whether and how often ``quality_sensor`` runs each running version's suite by itself, and
    which tables a suite checks with pandas in its own process instead of on Spark."""

    # Off, a suite runs only when asked: the check's Execute in the UI or `kappa quality report
    # --run`.
    auto: bool = True
    every_s: float = Field(default=600.0, gt=0)
    # A suite on Spark is dozens of small jobs that queue behind the deployments' batches; up to
    # this many stored rows the snapshot is read into memory and checked with pandas instead
    # (0: always on Spark).
    local_max_rows: int = Field(default=200_000, ge=0)


class CutSettings(_Frozen):
    """Shared cut points of the log (``streaming.kafka.cuts``): how often deployments take one,
    how long cuts are kept, and how far behind the newest cut a consistent read may be."""

    # Off, batches end where they would and consistent reads find no cut.
    enabled: bool = True
    # A caught-up deployment commits at every cut it sees; below the trigger interval (1 s),
    # the first deployment of each trigger takes a cut and the others stop at it.
    interval_s: float = Field(default=0.5, gt=0)
    retention_s: float = Field(default=600.0, gt=0)
    max_lag_s: float = Field(default=30.0, gt=0)


class Settings(_Frozen):
    """Everything a component needs to know about where the platform runs."""

    home: HomeSetting = Home(REPO_ROOT / ".kappa")
    # What the bootstrap builds or resolves once per machine: the JVM libraries (Kafka, Spark's
    # Kafka connector) and the Spark driver's class archive. Default: $XDG_CACHE_HOME/kappa.
    cache_dir: Path = Field(default_factory=lambda: Path.home() / ".cache" / "kappa")
    pipelines: tuple[str, ...] = ()  # the modules whose PIPELINE the platform serves
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    broker: BrokerSettings = Field(default_factory=BrokerSettings)
    producer: ProducerSettings = Field(default_factory=ProducerSettings)
    spark: SparkSettings = Field(default_factory=SparkSettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    dagster: DagsterSettings = Field(default_factory=DagsterSettings)
    engine: EngineSettings = Field(default_factory=EngineSettings)
    versions: VersionSettings = Field(default_factory=VersionSettings)
    quality: QualitySettings = Field(default_factory=QualitySettings)
    cuts: CutSettings = Field(default_factory=CutSettings)

    @field_validator("pipelines", mode="before")
    @classmethod
    def _check_modules(cls, value: Any) -> Any:
        """A comma-separated string (KAPPA_PIPELINES) or a list; at least one module name."""
        modules = [m.strip() for m in value.split(",")] if isinstance(value, str) else value
        if isinstance(modules, list | tuple):
            bad = [m for m in modules if not isinstance(m, str) or not _MODULE.fullmatch(m)]
            if bad or not modules:
                msg = f"name importable pipeline modules, e.g. pipelines.customers (got {value!r})"
                raise ValueError(msg)
        return modules

    def shown(self) -> dict[str, Any]:
        """These settings as they are shown (``kappa --debug``, a deployment's start in its log
        and in Dagster): JSON values, secret-looking Kafka client and Spark settings masked."""
        shown = self.model_dump(mode="json")
        shown["kafka"]["client"] = self.kafka.redacted_client()
        shown["spark"]["conf"] = redacted(self.spark.conf)
        return shown

    def to_env(self) -> dict[str, str]:
        """Environment variables that reproduce these settings in a child process."""
        values = self.model_dump(mode="json")
        env = {}
        for var, dotted in _ENV.items():
            value = get_dotted(values, dotted)
            if value not in (None, "", []):
                env[var] = ",".join(value) if isinstance(value, list) else str(value)
        if self.spark.conf:
            env["KAPPA_SPARK_CONF"] = json.dumps(self.spark.conf)
        for key, value in self.kafka.client.items():
            env["KAPPA_KAFKA_" + key.upper().replace(".", "_")] = value
        return env


def launching_run_id(env: Mapping[str, str] | None = None) -> str | None:
    """The Dagster run that launched this process, if one did."""
    return (os.environ if env is None else env).get(RUN_ID_ENV) or None


def crash_request(env: Mapping[str, str] | None = None) -> str | None:
    """Where a fault test asked the driver to crash (``<point>:<batch>``), if it did."""
    return (os.environ if env is None else env).get(CRASH_AT_ENV) or None


def load_settings(
    config_file: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build :class:`Settings` from the config file, the environment and explicit overrides.

    Args:
        config_file: YAML file; defaults to ``$KAPPA_CONFIG`` or ``platform/kappa.yaml``.
        env: the environment to read (``os.environ`` when None).
        overrides: dotted keys set by flags, e.g. ``{"kafka.bootstrap_servers": "h:9092"}``.

    Raises:
        ConfigError: the file is unreadable or a value is invalid; the message names the key.
    """
    env = os.environ if env is None else env
    path = Path(config_file or env.get("KAPPA_CONFIG") or DEFAULT_CONFIG_FILE)
    data = _read_config_file(path)
    _merge_env(data, env)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            set_dotted(data, dotted, value)
    try:
        broker = BrokerSettings.model_validate(data.get("broker") or {})
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path, "broker.")) from None
    kafka = data.setdefault("kafka", {})
    if not kafka.get("bootstrap_servers"):
        kafka["bootstrap_servers"] = broker.address
    if data.get("cache_dir") is None:
        cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        data["cache_dir"] = Path(cache) / "kappa"
    base = path.resolve().parent.parent if path.parent.name == "platform" else Path.cwd()
    if "home" in data:
        home = Path(str(data["home"])).expanduser()
        data["home"] = home if home.is_absolute() else (base / home)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None


def _read_config_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        msg = f"config file {path} does not exist; set KAPPA_CONFIG or pass --config"
        raise ConfigError(msg)
    try:
        loaded = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        msg = f"config file {path} is not valid YAML: {exc}".replace("\n", " ")
        raise ConfigError(msg) from None
    if not isinstance(loaded, dict):
        msg = f"config file {path} must hold a mapping at top level"
        raise ConfigError(msg)
    return loaded


def _merge_env(data: dict[str, Any], env: Mapping[str, str]) -> None:
    for var, dotted in _ENV.items():
        if env.get(var):
            set_dotted(data, dotted, env[var])
    if env.get("KAPPA_SPARK_CONF"):
        try:
            extra = json.loads(env["KAPPA_SPARK_CONF"])
        except json.JSONDecodeError:
            msg = 'KAPPA_SPARK_CONF must be a JSON object, e.g. \'{"spark.executor.memory": "2g"}\''
            raise ConfigError(msg) from None
        if not isinstance(extra, dict):
            msg = "KAPPA_SPARK_CONF must be a JSON object of Spark settings"
            raise ConfigError(msg)
        for key, value in extra.items():
            set_dotted(data, f"spark.conf.{key}", value)
    for var, value in env.items():
        if var.startswith("KAPPA_KAFKA_") and value:
            key = var.removeprefix("KAPPA_KAFKA_").lower().replace("_", ".")
            set_dotted(data, f"kafka.client.{key}", value)


def _describe(exc: ValidationError, path: Path, prefix: str = "") -> str:
    problems = []
    for error in exc.errors():
        where = prefix + ".".join(str(p) for p in error["loc"]) or "(top level)"
        problems.append(f"{where}: {error['msg']}")
    return f"invalid settings ({path} / environment / flags): " + "; ".join(problems)
