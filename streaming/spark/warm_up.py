"""The workload a driver JVM runs once to write the class archive of
``streaming.spark.jvm_archive``: what a pipeline's driver runs (a session, a Python streaming
source, a batch collected as Arrow, a shuffle), then the JVM exits and dumps the classes it
loaded.

``python -m streaming.spark.warm_up <archive>`` is the child process
``streaming.spark.jvm_archive.build`` starts.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from streaming.settings import Settings, load_settings
from streaming.spark.session import build_spark_session


def dump(settings: Settings, target: Path) -> None:
    """Run what a pipeline's driver runs, then stop the JVM so it writes the archive."""

    class WarmUpReader(DataSourceStreamReader):
        def initialOffset(self) -> dict:
            return {"n": 0}

        def latestOffset(self) -> dict:
            return {"n": 2}

        def partitions(self, start: dict, end: dict) -> list[InputPartition]:
            return [InputPartition(i) for i in range(start["n"], end["n"])]

        def read(self, partition: InputPartition) -> Iterator:
            import pyarrow as pa

            yield pa.RecordBatch.from_pydict({"id": [partition.value], "v": ["x"]})

    class WarmUpSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "kappa_warm_up"

        def schema(self) -> str:
            return "id long, v string"

        def streamReader(self, schema: object) -> WarmUpReader:
            return WarmUpReader()

    options = f"-XX:ArchiveClassesAtExit={target} -Xlog:cds=off -Xlog:cds+dynamic=off"
    conf = {**settings.spark.conf, "spark.driver.extraJavaOptions": options}
    warm_up = settings.spark.model_copy(update={"master": "local[2]", "conf": conf})
    spark = build_spark_session(settings.model_copy(update={"spark": warm_up}), archive=False)
    spark.dataSource.register(WarmUpSource)
    collected: list[int] = []

    def sink(batch: object, batch_id: int) -> None:
        collected.append(batch.toArrow().num_rows)  # type: ignore[attr-defined]

    query = (
        spark.readStream.format("kappa_warm_up")
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(target.with_suffix(".checkpoint")))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    numbers = spark.range(1000)
    numbers.groupBy((numbers.id % 7).alias("k")).count().toArrow()
    jvm = spark.sparkContext._gateway.proc  # type: ignore[attr-defined]
    spark.stop()
    shutil.rmtree(target.with_suffix(".checkpoint"), ignore_errors=True)
    jvm.stdin.close()  # the gateway JVM exits when its stdin closes, writing the archive
    jvm.wait(timeout=300)


if __name__ == "__main__":
    dump(load_settings(), Path(sys.argv[1]))
