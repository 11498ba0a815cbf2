"""``kappa up`` (the README's run command): broker, engine, demo producer and Dagster UI, stopped
as one.

Before anything starts, the log is checked against the deployments' checkpoints (a lost log is
reported once, with the ways out). The engine (``streaming.engine``, the Spark application every
deployment runs in) starts before Dagster, and is started again if it dies; the deployments
that ran in it come back by themselves (their Dagster runs start them again). Once Dagster
serves, the deployments that were running when the platform last stopped are launched again
(``kappa.resume``). Ctrl-C (or SIGTERM) first notes and terminates the active Dagster runs, so
streaming deployments stop at a micro-batch boundary, then stops Dagster, the engine, the
producer and the broker, and finally kills anything any of them left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from types import FrameType

from kappa.broker import EmbeddedBroker
from kappa.dagster_api import ACTIVE_STATUSES, DagsterApi
from kappa.log_check import EXIT_LOG_LOST, check_log_at_start
from kappa.resume import remember_running, resume_at_start
from streaming.define.registry import all_topics, published_topics
from streaming.engine.client import EngineClient, ensure_engine, stop_engine
from streaming.kafka.admin import ensure_topics
from streaming.processes import ManagedProcess
from streaming.settings import REPO_ROOT, Settings
from streaming.wait import wait_until

# How stale the list of running deployments may be when the platform dies without a Ctrl-C.
REMEMBER_EVERY_S = 5.0


def dagster_home(settings: Settings) -> str:
    home = settings.home.dagster
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO_ROOT / "platform" / "dagster.yaml", home / "dagster.yaml")
    return str(home)


def child_env(settings: Settings) -> dict[str, str]:
    return {
        **os.environ,
        **settings.to_env(),
        "DAGSTER_HOME": dagster_home(settings),
        "PYTHONUNBUFFERED": "1",
    }


def dagster_dev(settings: Settings) -> ManagedProcess:
    """`dagster dev` (webserver + daemon) on the configured host and port."""
    return ManagedProcess(
        "dagster",
        [
            sys.executable,
            "-m",
            "dagster",
            "dev",
            "-w",
            str(REPO_ROOT / "workspace.yaml"),
            "-h",
            settings.dagster.host,
            "-p",
            str(settings.dagster.port),
        ],
        settings.home.log("dagster"),
        env=child_env(settings),
        cwd=REPO_ROOT,
    )


def run_platform(
    settings: Settings, producer_rate: float | None, skip_log_check: bool = False
) -> int:
    stopping = False
    resumed = False
    started_at = time.time()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    broker = EmbeddedBroker(settings)
    embedded = settings.kafka.bootstrap_servers == broker.address
    started_broker = embedded and not broker.status().running
    children: list[ManagedProcess] = []
    try:
        if embedded:
            print(broker.start().describe(), flush=True)
        not_resumable = check_log_at_start(settings, skip_log_check)
        if not_resumable is None:
            return EXIT_LOG_LOST
        topics = {*all_topics(settings.pipelines), *published_topics(settings.pipelines)}
        ensure_topics(settings, sorted(topics))
        env = child_env(settings)
        if producer_rate:
            children.append(
                ManagedProcess(
                    "producer",
                    [
                        sys.executable,
                        "-m",
                        "kappa.cli",
                        "demo",
                        "produce",
                        "--rate",
                        str(producer_rate),
                    ],
                    settings.home.log("producer"),
                    env=env,
                    cwd=REPO_ROOT,
                ).start()
            )
            print(
                f"demo producer: {producer_rate:g} events/s (log {settings.home.log('producer')})"
            )
        dagster = dagster_dev(settings).start()
        children.append(dagster)
        # Started while Dagster starts: the Spark application takes the longer of the two.
        started_engine = time.monotonic()
        engine = ensure_engine(settings)
        print(
            f"engine: Spark {engine.health()['master']}, ready in "
            f"{time.monotonic() - started_engine:.0f} s (log {settings.home.log('engine')})",
            flush=True,
        )
        api = DagsterApi(settings, timeout_s=2.0)
        ready = wait_until(
            lambda: stopping or not dagster.alive() or dagster_ready(api), timeout_s=120
        )
        if ready and dagster.alive() and not stopping:
            print(
                f"Dagster UI: http://{settings.dagster.host}:{settings.dagster.port} "
                "(Ctrl-C stops everything)",
                flush=True,
            )
            resumed = resume_at_start(settings, api, started_at, not_resumable, lambda: stopping)
        remembered_at = 0.0
        while not stopping and all(c.alive() for c in children):
            # Until the previous deployments are relaunched, their list must not be replaced.
            if resumed and time.monotonic() - remembered_at >= REMEMBER_EVERY_S:
                remember_running(settings, api)
                remembered_at = time.monotonic()
                _keep_engine(settings)
            time.sleep(0.2)
        dead = [c.name for c in children if not c.alive()]
        if dead and not stopping:
            print(f"{', '.join(dead)} exited; see {settings.home.logs}; stopping", file=sys.stderr)
            return 1
        return 0
    finally:
        if any(c.name == "dagster" for c in children):
            print("stopping: terminating active runs...", flush=True)
            if resumed:
                remember_running(settings, DagsterApi(settings, timeout_s=5.0))
            _terminate_runs(settings)
        for child in reversed(children):
            child.stop(signal.SIGTERM if child.name != "dagster" else signal.SIGINT)
            if child.name == "dagster" and stop_engine(settings.home):
                print("engine stopped", flush=True)
        if stop_engine(settings.home):  # started, and Dagster never was
            print("engine stopped", flush=True)
        if started_broker:
            broker.stop()
        print("platform stopped", flush=True)


def _keep_engine(settings: Settings) -> None:
    """Start the engine again if it died; the deployments' runs start them in it again."""
    if EngineClient(settings.home, timeout_s=5.0).answers():
        return
    print("engine not answering; starting it again", file=sys.stderr, flush=True)
    try:
        ensure_engine(settings)
    except Exception as exc:  # the next look tries again; the runs wait for it meanwhile
        print(f"engine did not start: {exc}", file=sys.stderr, flush=True)


def dagster_ready(api: DagsterApi) -> bool:
    """Whether the Dagster webserver answers GraphQL."""
    try:
        api.runs(limit=1)
    except Exception:  # not listening yet, or not answering GraphQL yet
        return False
    return True


def _terminate_runs(settings: Settings, timeout_s: float = 40.0) -> None:
    # Generous: at Ctrl-C the machine may be busy with every deployment's last batch, and a
    # GraphQL call that times out leaves the runs to be killed with the process tree instead.
    api = DagsterApi(settings, timeout_s=20.0)
    try:
        active = api.active_runs()
        api.terminate([r.run_id for r in active], starting_wait_s=20.0)
        # Until each run has ended, not only been asked to: a step stopping its deployment at a
        # batch boundary leaves its run CANCELING meanwhile.
        ending = (*ACTIVE_STATUSES, "CANCELING")
        if wait_until(lambda: not api.runs(ending), timeout_s=timeout_s, interval_s=0.5):
            return
        # A step still waiting for its deployment's batch boundary: the engine's shutdown, next,
        # stops the deployment at one, and the run's worker goes with the process tree.
        late = [r.run_id for r in api.runs(ending)]
        api.mark_canceled(late)
        print(
            f"{len(late)} run(s) had not ended {timeout_s:.0f} s after their termination; "
            "marked canceled, their deployments stop with the engine",
            file=sys.stderr,
        )
    except Exception as exc:  # Dagster may already be down; the process tree is killed anyway
        print(f"could not terminate runs through Dagster: {exc}", file=sys.stderr)
