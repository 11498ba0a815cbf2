"""`kappa` subcommands for the platform's background services: the embedded broker, the engine
and a Spark standalone cluster (each: start, stop, status)."""

from __future__ import annotations

import argparse

from streaming.settings import Settings


def add_service_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    broker = sub.add_parser("broker", help="the embedded Apache Kafka broker (one KRaft node)")
    broker.add_argument("action", choices=["start", "stop", "status"])
    broker.set_defaults(handler=_broker)

    engine = sub.add_parser(
        "engine", help="the engine: the Spark application every deployment runs in"
    )
    engine.add_argument("action", choices=["start", "stop", "status"])
    engine.set_defaults(handler=_engine)

    cluster = sub.add_parser(
        "cluster", help="a Spark standalone cluster on 127.0.0.1 (master and workers)"
    )
    cluster.add_argument("action", choices=["start", "stop", "status"])
    cluster.set_defaults(handler=_cluster)


def _broker(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.broker import EmbeddedBroker

    broker = EmbeddedBroker(settings)
    if args.action == "start":
        print(broker.start().describe())
    elif args.action == "stop":
        print("broker stopped" if broker.stop() else "broker was not running")
    else:
        status = broker.status()
        print(status.describe())
        return 0 if status.running else 1
    return 0


def _engine(settings: Settings, args: argparse.Namespace) -> int:
    from streaming.engine.client import EngineClient, ensure_engine, stop_engine

    if args.action == "start":
        client = ensure_engine(settings)
        address = client.address()
        print(f"engine on {address.url} (pid {address.pid}, Spark {address.master})")
    elif args.action == "stop":
        print("engine stopped" if stop_engine(settings.home) else "engine was not running")
    else:
        client = EngineClient(settings.home)
        if not client.answers():
            print(f"engine not running for {settings.home}")
            return 1
        address, health = client.address(), client.health()
        print(f"engine on {address.url} (pid {address.pid}, Spark {address.master})")
        for row in client.deployments():
            error = f"  {row['error']}" if row["error"] else ""
            print(f"  {row['id']:<32} {row['state']:<10} run {row['run_id'] or '-'}{error}")
        print(f"{health['active']} of {health['deployments']} deployments active")
    return 0


def _cluster(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.cluster import SparkCluster

    cluster = SparkCluster(settings)
    if args.action == "start":
        status = cluster.start()
        print(status.describe())
        print(f"run pipelines on it with KAPPA_SPARK_MASTER={status.master_url}")
    elif args.action == "stop":
        print("Spark cluster stopped" if cluster.stop() else "Spark cluster was not running")
    else:
        status = cluster.status()
        print(status.describe())
        return 0 if status.running else 1
    return 0
