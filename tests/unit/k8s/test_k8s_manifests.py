"""The Kubernetes starter manifests in platform/k8s: every built-in resource validates against
the Kubernetes schema (strict: no unknown field), and every custom resource names the operator
kind it is written for, with the fields the platform relies on."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

K8S = Path(__file__).resolve().parents[3] / "platform" / "k8s"
KUBERNETES = "1.37.0"
# Kinds of the operators a user installs first; their schemas ship with the operators.
CUSTOM = {
    ("kafka.strimzi.io/v1beta2", "Kafka"),
    ("kafka.strimzi.io/v1beta2", "KafkaNodePool"),
    ("kafka.strimzi.io/v1beta2", "KafkaTopic"),
    ("sparkoperator.k8s.io/v1beta2", "SparkApplication"),
}


def _resources() -> list[tuple[str, dict]]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "dagster-values.yaml":
            continue
        found += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


RESOURCES = _resources()


def test_there_are_manifests_for_every_part():
    kinds = {doc["kind"] for _, doc in RESOURCES}
    assert {"Kafka", "KafkaTopic", "SparkApplication", "PersistentVolumeClaim", "Role"} <= kinds


@pytest.mark.parametrize(
    ("name", "doc"),
    [r for r in RESOURCES if (r[1]["apiVersion"], r[1]["kind"]) not in CUSTOM],
    ids=lambda v: v if isinstance(v, str) else v["kind"],
)
def test_built_in_resources_validate_strictly(name, doc):
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    assert doc["metadata"].get("namespace", "kappa") == "kappa" or doc["kind"] == "Namespace"


def test_custom_resources_are_for_the_operators_installed_first():
    custom = [doc for _, doc in RESOURCES if (doc["apiVersion"], doc["kind"]) in CUSTOM]
    assert len(custom) == 5
    spark = next(doc for doc in custom if doc["kind"] == "SparkApplication")
    # One SparkApplication per engine, reached by clients through a Service on its control port.
    assert spark["spec"]["arguments"] == ["engine"]
    assert spark["spec"]["sparkConf"]["spark.scheduler.mode"] == "FAIR"
    engine_env = {e["name"]: e["value"] for e in spark["spec"]["driver"]["env"]}
    service = next(doc for _, doc in RESOURCES if doc["kind"] == "Service")
    assert service["metadata"]["name"] == engine_env["KAPPA_ENGINE_ADVERTISED_HOST"].split(".")[0]
    assert service["spec"]["ports"][0]["targetPort"] == int(engine_env["KAPPA_ENGINE_PORT"])
    assert service["spec"]["selector"].items() <= spark["spec"]["driver"]["labels"].items() | {
        ("spark-role", "driver")
    }
    mounts = {m["mountPath"] for m in spark["spec"]["executor"]["volumeMounts"]}
    settings = next(doc for _, doc in RESOURCES if doc["kind"] == "ConfigMap")
    assert settings["data"]["KAPPA_HOME"] in mounts  # executors write where the driver commits
    assert settings["data"]["KAPPA_ENGINE_EXTERNAL"] == "true"  # Dagster never starts its own
    topics = {doc["metadata"]["name"] for doc in custom if doc["kind"] == "KafkaTopic"}
    assert topics == {"customers", "transactions"}


def test_dagster_values_run_the_code_location_with_the_shared_home():
    values = yaml.safe_load((K8S / "dagster-values.yaml").read_text())
    location = values["dagster-user-deployments"]["deployments"][0]
    assert location["dagsterApiGrpcArgs"] == ["--module-name", "assets.definitions"]
    assert location["volumeMounts"][0]["mountPath"] == "/kappa-home"
