from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kappa.demo import events
from streaming.define import Topic
from streaming.define.registry import get_pipeline, registry
from streaming.deployment import Deployment
from streaming.errors import InvalidNameError, UnknownPipelineError
from streaming.settings import load_settings


@pytest.mark.parametrize("name", ["", "../etc", "a/b", "Customers", "x" * 49, "1abc", "a b"])
def test_bad_pipeline_names_are_rejected(name):
    with pytest.raises(InvalidNameError):
        Deployment(name, "v1", Path("/tmp/home"))


@pytest.mark.parametrize("version", ["", "..", "v/2", "v..2", "-v", "x" * 33, "v 2"])
def test_bad_versions_are_rejected(version):
    with pytest.raises(InvalidNameError):
        Deployment("customers", version, Path("/tmp/home"))


def test_deployment_paths_are_per_version():
    v1, v2 = (Deployment("customers", v, Path("/h")) for v in ("v1", "v2"))
    assert v1.table_path == Path("/h/tables/customers__v1")
    assert {v1.table_path, v1.checkpoint_path, v1.dead_letter_path}.isdisjoint(
        {v2.table_path, v2.checkpoint_path, v2.dead_letter_path}
    )


DEMO = ("pipelines.customers", "pipelines.customer_spend")


def test_unknown_pipeline_lists_the_known_ones():
    with pytest.raises(UnknownPipelineError, match="customer_spend, customers"):
        get_pipeline(DEMO, "nope")


_PRINT_FINGERPRINTS = """
import json, sys
from streaming.define.registry import registry
modules = tuple(sys.argv[1].split(","))
print(json.dumps({name: p.fingerprint for name, p in registry(modules).items()}))
"""


def _fingerprints_in_a_new_process(hash_seed: str) -> dict[str, str]:
    # A different hash seed per process: anything in the fingerprint that depends on hash(),
    # id() or memory layout would show as a difference.
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", _PRINT_FINGERPRINTS, ",".join(DEMO)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


def test_fingerprints_are_distinct_and_the_same_in_every_process():
    here = {name: p.fingerprint for name, p in registry(DEMO).items()}
    assert len(set(here.values())) == len(here)
    assert all(re.fullmatch(r"[0-9a-f]{16}", f) for f in here.values())
    assert _fingerprints_in_a_new_process("1") == here
    assert _fingerprints_in_a_new_process("2") == here


def test_demo_events_are_deterministic_per_seed():
    def take(seed: int) -> list:
        stream = events(seed=seed, start_ms=0)
        return [next(stream) for _ in range(3000)]

    assert take(1) == take(1)
    assert take(1) != take(2)
    sample = take(3)
    topics = {"customers", "transactions", "searches", "clicks", "profiles", "trades"}
    assert {e.topic for e in sample} == topics
    assert any(e.value is None for e in sample if e.topic == "customers")


def test_demo_trades_come_now_and_then_in_a_burst_two_hours_late():
    stream = events(seed=5, start_ms=10_000_000, late_burst_rate=0.02)
    trades = [e for e in (next(stream) for _ in range(20_000)) if e.topic == "trades"]
    late = [e for e in trades if b"-late" in (e.value or b"")]
    assert late and len(late) % 20 == 0
    for burst in range(0, len(late), 20):
        first = next(t for t in trades if t.value.startswith(late[burst].value[:24]))
        assert 7_200_000 - 600_000 <= first.timestamp - late[burst].timestamp <= 7_200_000


def test_demo_events_come_partly_out_of_order_some_beyond_grace():
    stream = events(seed=4, start_ms=0)
    stamps = [next(stream).timestamp for _ in range(20_000)]
    behind, highest = [], stamps[0]
    for t in stamps[1:]:
        if t < highest:
            behind.append(highest - t)
        highest = max(highest, t)
    assert 0.03 < len(behind) / len(stamps) < 0.08
    beyond = [b for b in behind if b > 600_000]
    assert 0.002 < len(beyond) / len(stamps) < 0.01


def test_every_demo_pipeline_reads_and_publishes_the_topics_declared_in_pipelines_topics():
    import pipelines.topics as declared

    declarations = [t for t in vars(declared).values() if isinstance(t, Topic)]
    inputs = {t.name: t for t in declarations if t.readable}
    outputs = {t.name for t in declarations if not t.readable}
    pipelines = registry(load_settings(env={}).pipelines).values()
    for pipeline in pipelines:
        assert pipeline.plan is not None, f"{pipeline.name} is a plan"
        read = {t.name: t for t in pipeline.plan.inputs}
        for name, topic in read.items():
            if name in outputs:  # a published changelog, read through its pipeline
                publisher = next(p for p in pipelines if p.publish == name)
                assert topic == publisher.output_topic(), pipeline.name
            else:
                assert topic == inputs[name], pipeline.name
    assert {p.publish for p in pipelines if p.publish} == outputs
