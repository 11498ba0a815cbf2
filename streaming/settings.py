"""The platform's typed settings, read once at the edge.

Precedence: explicit overrides (command-line flags) > environment variables > the config file
(``platform/kappa.yaml``) > defaults. :func:`load_settings` is the only place that reads the
environment or the file; everything else receives a frozen :class:`Settings`.
"""

from __future__ import annotations

import json
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

from streaming.errors import ConfigError
from streaming.home import Home, as_home

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG_FILE = REPO_ROOT / "platform" / "kappa.yaml"

_SECRET_MARKERS = ("password", "secret", "token", "key.pem", "private", "credential", "jaas")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSettings(_Frozen):
    bootstrap_servers: str = "127.0.0.1:9092"
    client: dict[str, str] = Field(default_factory=dict)
    topic_partitions: int = Field(default=4, ge=1, le=1024)
    topic_replication_factor: int = Field(default=1, ge=1, le=16)

    @field_validator("bootstrap_servers")
    @classmethod
    def _check_bootstrap(cls, value: str) -> str:
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                msg = f"bootstrap server {server!r} must look like host:port"
                raise ValueError(msg)
        return value

    @field_validator("client", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): _setting_str(v) for k, v in value.items()}
        return value

    def client_config(self) -> dict[str, str]:
        """The librdkafka configuration shared by every client (bootstrap plus pass-through)."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.client}

    def redacted_client(self) -> dict[str, str]:
        """Client settings safe to print or attach to metadata: secret values are masked."""
        return {k: ("***" if is_secret_setting(k) else v) for k, v in self.client.items()}


class BrokerSettings(_Frozen):
    host: str = "127.0.0.1"
    port: int = Field(default=9092, ge=1, le=65535)


class SparkSettings(_Frozen):
    master: str = "local[*]"
    conf: dict[str, str] = Field(default_factory=dict)

    @field_validator("conf", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): _setting_str(v) for k, v in value.items()}
        return value


class DagsterSettings(_Frozen):
    host: str = "127.0.0.1"
    port: int = Field(default=3000, ge=1, le=65535)


class VersionSettings(_Frozen):
    """Side-by-side versions: how long a replaced version is kept, how long a comparison waits."""

    retention_hours: float = Field(default=24.0, ge=0)
    compare_wait_s: float = Field(default=300.0, gt=0)


class Settings(_Frozen):
    """Everything a component needs to know about where the platform runs."""

    home: Annotated[Home, BeforeValidator(as_home), PlainSerializer(str)] = Home(
        REPO_ROOT / ".kappa"
    )
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    broker: BrokerSettings = Field(default_factory=BrokerSettings)
    spark: SparkSettings = Field(default_factory=SparkSettings)
    dagster: DagsterSettings = Field(default_factory=DagsterSettings)
    versions: VersionSettings = Field(default_factory=VersionSettings)

    def to_env(self) -> dict[str, str]:
        """Environment variables that reproduce these settings in a child process."""
        env = {
            "KAPPA_HOME": str(self.home),
            "KAFKA_BOOTSTRAP_SERVERS": self.kafka.bootstrap_servers,
            "KAPPA_BROKER_PORT": str(self.broker.port),
            "KAPPA_SPARK_MASTER": self.spark.master,
            "KAPPA_DAGSTER_PORT": str(self.dagster.port),
            "KAPPA_RETENTION_HOURS": str(self.versions.retention_hours),
        }
        if self.spark.conf:
            env["KAPPA_SPARK_CONF"] = json.dumps(self.spark.conf)
        for key, value in self.kafka.client.items():
            env["KAPPA_KAFKA_" + key.upper().replace(".", "_")] = value
        return env


def is_secret_setting(name: str) -> bool:
    lowered = name.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


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
    import os

    env = os.environ if env is None else env
    path = Path(config_file or env.get("KAPPA_CONFIG") or DEFAULT_CONFIG_FILE)
    data = _read_config_file(path)
    _merge_env(data, env)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(data, dotted, value)
    kafka = data.setdefault("kafka", {})
    if not kafka.get("bootstrap_servers"):
        broker = data.get("broker") or {}
        kafka["bootstrap_servers"] = f"{broker.get('host', '127.0.0.1')}:{broker.get('port', 9092)}"
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
    simple = {
        "KAPPA_HOME": "home",
        "KAFKA_BOOTSTRAP_SERVERS": "kafka.bootstrap_servers",
        "KAPPA_BROKER_PORT": "broker.port",
        "KAPPA_SPARK_MASTER": "spark.master",
        "KAPPA_DAGSTER_PORT": "dagster.port",
        "KAPPA_RETENTION_HOURS": "versions.retention_hours",
    }
    for var, dotted in simple.items():
        if env.get(var):
            _set_dotted(data, dotted, env[var])
    if env.get("KAPPA_SPARK_CONF"):
        try:
            extra = json.loads(env["KAPPA_SPARK_CONF"])
        except json.JSONDecodeError:
            msg = 'KAPPA_SPARK_CONF must be a JSON object, e.g. \'{"spark.executor.memory": "2g"}\''
            raise ConfigError(msg) from None
        if not isinstance(extra, dict):
            msg = "KAPPA_SPARK_CONF must be a JSON object of Spark settings"
            raise ConfigError(msg)
        conf = data.setdefault("spark", {}).setdefault("conf", {}) or {}
        conf.update(extra)
        data["spark"]["conf"] = conf
    for var, value in env.items():
        if var.startswith("KAPPA_KAFKA_") and value:
            key = var.removeprefix("KAPPA_KAFKA_").lower().replace("_", ".")
            client = data.setdefault("kafka", {}).setdefault("client", {}) or {}
            client[key] = value
            data["kafka"]["client"] = client


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    if dotted.startswith("kafka.client."):
        parents, leaf = ["kafka", "client"], dotted.removeprefix("kafka.client.")
    else:
        *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[leaf] = value


def _setting_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _describe(exc: ValidationError, path: Path) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        problems.append(f"{where}: {error['msg']}")
    return f"invalid settings ({path} / environment / flags): " + "; ".join(problems)
