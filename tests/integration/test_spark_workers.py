"""Spark's Python workers in a platform session fork from the platform's daemon
(``streaming.spark.worker_daemon``): the task code is loaded before a task arrives, and what it
allocated is out of the per-task garbage collection's reach."""


def probe(rows):  # type: ignore[no-untyped-def]
    import gc
    import sys

    list(rows)
    yield gc.get_freeze_count(), "streaming.run.partition_task" in sys.modules


def test_workers_start_with_the_task_code_loaded_and_frozen(spark):  # type: ignore[no-untyped-def]
    results = spark.sparkContext.parallelize(range(4), 2).mapPartitions(probe).collect()
    assert len(results) == 2
    for frozen, loaded in results:
        assert loaded
        # pyspark, pyarrow and the platform's modules: tens of thousands of objects.
        assert frozen > 10_000
