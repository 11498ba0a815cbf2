"""Where the engines' answers differ: the stateful workloads on disordered data.

The timed runs use data on which every engine's semantics give the platform's answer (in order
for the joins, out of order only within the grace period for the windows). Here the log has 5%
of its records out of order within the grace period and 0.5% beyond it (late), and each engine's
output is compared with the exact answer (``reference``, the platform's definition). What to
expect, and what the comparison shows:

- the platform: the exact answer at every commit; late records dead-lettered (the same set as the
  reference's, whatever the batch sizes), out-of-order records within grace correct earlier rows;
- Kafka Streams and Quix Streams join a transaction with the customer as of its time when they
  process it: a customer change that arrives later, but is stamped earlier, does not correct the
  rows already emitted; Quix's interval join looks up clicks for an arriving search only at or
  after the search's time, so a search that arrives after its click is missed; late records are
  dropped by each engine's own rule (Kafka Streams: the task's stream time, over both topics of a
  join; Quix: per key or per partition, per store);
- Spark: the watermark is global and moves between micro-batches, so which records are dropped as
  late depends on how the log was cut into batches: the same log at two batch sizes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.peers.backlog import write_workload_backlog
from bench.peers.engines import BATCH, Engine, Platform, RunSpec, Spark
from bench.peers.runs import cold_run, work_dir
from bench.peers.workloads import WITH_LATE
from streaming.settings import Settings

WORKLOADS = ("fraud", "spend", "clicks")
SMALL_BATCH = 2_000  # Spark's other batch size


def run(
    engines: list[Engine],
    settings: Settings,
    root: Path,
    events: int,
    keys: int,
    seed: int,
    workloads: tuple[str, ...] = WORKLOADS,
) -> dict[str, Any]:
    """Each stateful workload on one disordered log, once per engine (Spark twice)."""
    bootstrap = settings.kafka.bootstrap_servers
    found: dict[str, Any] = {}
    for name in (w for w in WORKLOADS if w in workloads):
        backlog = write_workload_backlog(settings, name, keys, seed, events, WITH_LATE)
        workload, expected, late = backlog.workload, backlog.expected, set(backlog.reference.late)
        print(
            f"  {name}: {events:,} records, {len(late):,} late by the reference, "
            f"{len(expected):,} rows expected",
            flush=True,
        )
        runs: dict[str, Any] = {}
        for engine in engines:
            if name not in engine.workloads:
                continue
            variants = [(engine, engine.name)]
            if isinstance(engine, Spark):
                small = Spark(settings, {**engine.options, "spark_batch": SMALL_BATCH})
                variants = [
                    (engine, f"spark batch {BATCH:,}"),
                    (small, f"spark batch {SMALL_BATCH:,}"),
                ]
            for variant, label in variants:
                run_id = f"sem-{name}-{variant.name}-{len(runs)}"
                spec = RunSpec(workload, run_id, work_dir(root, run_id), bootstrap, False)
                result = cold_run(variant, spec, settings, backlog.written, expected)
                outcome = {"verdict": result["verdict"]}
                if isinstance(variant, Platform):
                    outcome["dead_lettered_late"] = _late_dead_letters(variant, spec, late)
                runs[label] = outcome
                print(f"    {label}: {_describe(outcome)}", flush=True)
        found[name] = {
            "records": events,
            "late": len(late),
            "expected_rows": len(expected),
            "runs": runs,
        }
    return found


def _late_dead_letters(platform: Platform, spec: RunSpec, late: set) -> dict[str, Any]:
    """The platform's dead letters with reason ``late`` against the reference's late records."""
    from streaming.delta.dead_letters import DeadLetters
    from streaming.deployment import Deployment

    deployment = Deployment(spec.workload.pipeline, platform.version(spec), platform.home(spec))
    rows = DeadLetters(deployment.dead_letter_path, deployment.app_id).read().to_pylist()
    lettered = {(r["topic"], r["partition"], r["offset"]) for r in rows if r["error"] == "late"}
    return {"same": lettered == late, "dead_lettered": len(lettered), "reference": len(late)}


def _describe(outcome: dict[str, Any]) -> str:
    verdict = outcome["verdict"]
    if verdict["same"]:
        text = f"SAME as the exact answer ({verdict['rows']:,} rows)"
    else:
        text = (
            f"DIFFERENT from the exact answer: {verdict['differ']:,} rows differ, "
            f"{verdict['missing']:,} missing, {verdict['extra']:,} extra"
        )
    late = outcome.get("dead_lettered_late")
    if late is not None:
        same = "the same records" if late["same"] else "NOT the same records"
        text += f"; {late['dead_lettered']:,} dead-lettered as late ({same} as the reference)"
    examples = "".join(f"\n        e.g. {e}" for e in verdict["examples"])
    return text + examples
