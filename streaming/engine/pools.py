"""The engine's Spark scheduler pools: which work shares the executors with which.

The engine runs Spark's FAIR scheduler between a few pools, and each pool serves its jobs in
the order they were submitted (FIFO, Spark's default inside a pool it creates on first use).
Deployments that follow the log share one pool, so their micro-batches run in the order they
arrive: a deployment with records waiting waits for the batches queued before its own, never
longer. A pool per deployment would not: when pools tie on running tasks, as they do whenever a
task slot frees and every waiting pool runs nothing, Spark picks the pool whose name sorts
first, so under load the deployments late in the alphabet never run (``bench/RESULTS.md``, the
whole demo's first start). Runs that replay to a fixed end (``--until-caught-up``, a comparison
at the live version's offsets) and quality suites have pools of their own, so their large
batches share the executors with the deployments' pool instead of queueing ahead of it.
"""

from __future__ import annotations

from streaming.run.options import RunOptions

DEPLOYMENTS = "deployments"
REPLAYS = "replays"
QUALITY = "quality"


def deployment_pool(options: RunOptions) -> str:
    """The pool of a deployment's batches: replays to a fixed end apart from those that follow
    the log."""
    return REPLAYS if options.until_caught_up or options.until_live else DEPLOYMENTS
