"""``python -m streaming engine``: run the engine until SIGTERM, SIGINT or a shutdown request.

At start it builds the one SparkSession (the Spark master from the settings: local mode, or a
cluster), then listens on 127.0.0.1 (``engine.host``, ``engine.port``; port 0 takes a free one)
and writes its address for clients (``streaming.engine.address``). At a stop request every
deployment stops at a batch boundary, then the session stops and the address is removed.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from types import FrameType

from streaming.engine.address import EngineAddress, new_token, remove_address, write_address
from streaming.engine.engine import Engine
from streaming.engine.server import EngineServer
from streaming.settings import Settings

log = logging.getLogger("streaming.engine")


def serve(settings: Settings) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    # py4j logs every foreachBatch call at INFO: a line per batch of every deployment.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    from streaming.spark.session import build_spark_session

    started = time.monotonic()
    spark = build_spark_session(settings, app_name="kappa-engine")
    # PySpark's SparkContext installs its own SIGINT handler, which cancels every job.
    signal.signal(signal.SIGINT, on_signal)
    engine = Engine(settings, spark)
    token = new_token()
    server = EngineServer(engine, settings.engine.host, settings.engine.port, token, stop.set)
    host, port = server.server_address[:2]
    address = EngineAddress(
        host=settings.engine.advertised_host or str(host),
        port=int(port),
        pid=os.getpid(),
        token=token,
        started_at=time.time(),
        master=spark.sparkContext.master,
    )
    server.serve_in_background()
    write_address(settings.home.engine_address, address)
    log.info(
        "engine ready on %s in %.1f s (Spark master %s, pid %d)",
        address.url,
        time.monotonic() - started,
        address.master,
        address.pid,
    )
    try:
        stop.wait()
    finally:
        log.info("engine stopping: every deployment stops at a batch boundary")
        remove_address(settings.home.engine_address, os.getpid())
        left = engine.shutdown()
        if left:
            log.warning("still running after the wait, stopped with the engine: %s", left)
        server.shutdown()
        spark.stop()
        log.info("engine stopped")
    return 0


def main() -> int:
    from streaming.errors import KappaError
    from streaming.settings import load_settings

    try:
        return serve(load_settings())
    except KappaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
