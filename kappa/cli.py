"""``kappa``: the platform's operator command line.

Every failure a user can fix is reported as one line on stderr with a non-zero exit code; pass
``--debug`` for the traceback. ``--debug`` also shows the settings in use, secret-looking values
masked.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from kappa.cli_services import add_service_commands
from streaming.settings import Settings, load_settings

Handler = Callable[[Settings, argparse.Namespace], int]
DEPLOYMENT_COLUMNS = (
    "pipeline",
    "version",
    "role",
    "status",
    "progress",
    "lag",
    "rows",
    "run_id",
    "note",
)


def build_parser() -> argparse.ArgumentParser:
    from kappa.table_output import FORMATS
    from streaming.run.job import add_run_arguments

    parser = argparse.ArgumentParser(prog="kappa", description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="settings file (default: platform/kappa.yaml)")
    parser.add_argument("--home", help="platform home: tables, checkpoints, logs (KAPPA_HOME)")
    parser.add_argument("--bootstrap-servers", help="Kafka bootstrap servers")
    parser.add_argument(
        "--kafka",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka client setting, repeatable (e.g. security.protocol=SSL)",
    )
    parser.add_argument("--spark-master", help="Spark master URL (default local[*])")
    parser.add_argument("--broker-port", type=int, help="port of the embedded broker")
    parser.add_argument(
        "--debug", action="store_true", help="show the settings in use and tracebacks"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_service_commands(sub)

    demo = sub.add_parser("demo", help="the demo event generator")
    demo_sub = demo.add_subparsers(dest="demo_command", required=True)
    produce = demo_sub.add_parser("produce", help="produce demo customers and transactions")
    produce.add_argument("--count", type=int, help="events to send (default: until stopped)")
    produce.add_argument("--rate", type=float, help="events per second (default: unlimited)")
    produce.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    produce.set_defaults(handler=_demo_produce)

    run = sub.add_parser("run", help="run one streaming pipeline")
    add_run_arguments(run)
    run.set_defaults(handler=_run)

    table = sub.add_parser("table", help="compacted tables")
    table_sub = table.add_subparsers(dest="table_command", required=True)
    show = table_sub.add_parser("show", help="print a table's current snapshot")
    show.add_argument("name", help="pipeline / table name")
    show.add_argument("--version", help="deployment version (default: the live one)")
    show.add_argument("--format", choices=FORMATS, default="table")
    show.add_argument("--limit", type=int, help="print at most this many rows")
    show.set_defaults(handler=_table_show)
    get = table_sub.add_parser("get", help="print the rows of keys (composite keys as a,b or JSON)")
    get.add_argument("name", help="pipeline / table name")
    get.add_argument("keys", nargs="+", metavar="KEY", help="a key: value, a,b or JSON object")
    get.add_argument("--version", help="deployment version (default: the live one)")
    get.add_argument("--format", choices=FORMATS, default="table")
    get.set_defaults(handler=_table_get)

    sql = sub.add_parser(
        "sql", help="run SQL over the tables (names: pipeline, or pipeline@version)"
    )
    sql.add_argument("query", help='e.g. "SELECT country, count(*) FROM customers GROUP BY 1"')
    mode = sql.add_mutually_exclusive_group()
    mode.add_argument(
        "--consistent",
        action="store_true",
        help="read every table at one cut of the log (refused when none is close enough)",
    )
    mode.add_argument("--latest", action="store_true", help="read each table at its newest commit")
    sql.add_argument("--format", choices=FORMATS, default="table")
    sql.add_argument("--limit", type=int, default=1000, help="print at most this many rows (1000)")
    sql.add_argument(
        "--max-lag",
        type=float,
        metavar="SECONDS",
        help="how old a consistent read's cut may be while newer cuts exist (cuts.max_lag_s)",
    )
    sql.set_defaults(handler=_sql)

    deployments = sub.add_parser("deployments", help="streaming deployments (via Dagster)")
    deployments_sub = deployments.add_subparsers(dest="deployments_command", required=True)
    listing = deployments_sub.add_parser(
        "list", help="each running version: role, status, catch-up progress, lag, rows, run"
    )
    listing.set_defaults(handler=_deployments_list)

    deploy = sub.add_parser("deploy", help="launch a pipeline's deployment (via Dagster)")
    deploy.add_argument("pipeline")
    deploy.add_argument("--version", help="version to run (default: the declared one)")
    deploy.add_argument("--mode", choices=["continuous", "until_caught_up"], default="continuous")
    deploy.add_argument(
        "--forward-only",
        action="store_true",
        help="start from the live version's table and state instead of replaying the log "
        "(refused unless the change is to the output alone; see `kappa versions PIPELINE`)",
    )
    deploy.set_defaults(handler=_deploy)

    reset = sub.add_parser(
        "reset", help="delete every table, checkpoint, pin and pointer (asks first)"
    )
    reset.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    reset.set_defaults(handler=_reset)

    stop = sub.add_parser("stop", help="stop a pipeline's running deployments (via Dagster)")
    stop.add_argument("pipeline")
    stop.add_argument("--version", help="stop only this version's deployment")
    stop.set_defaults(handler=_stop)

    from kappa.cli_versions import add_quality_commands, add_version_commands

    add_version_commands(sub)
    add_quality_commands(sub)

    up = sub.add_parser("up", help="run the whole platform: broker, demo producer, Dagster UI")
    up.add_argument("--rate", type=float, default=200.0, help="demo events per second (200)")
    up.add_argument("--no-producer", action="store_true", help="do not start the demo producer")
    up.add_argument(
        "--skip-log-check",
        action="store_true",
        help="start even if the log ends below deployments' checkpoints (they are not resumed)",
    )
    up.set_defaults(handler=_up)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.debug)
    try:
        settings = load_settings(args.config, overrides=_overrides(args))
        if args.debug:  # what this command runs with (secret-looking values masked)
            print(f"kappa: settings {json.dumps(settings.shown())}", file=sys.stderr)
        return int(args.handler(settings, args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `kappa table show ... | head`: the reader is done, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        message = _user_message(exc)
        if args.debug or message is None:
            raise
        print(f"kappa: error: {message}", file=sys.stderr)
        return 2


def _configure_logging(debug: bool) -> None:
    """Kafka client chatter (connection retries) is shown only with --debug."""
    import logging

    kafka_logger = logging.getLogger("kappa.kafka")
    kafka_logger.propagate = debug
    if not debug:
        kafka_logger.addHandler(logging.NullHandler())
    else:
        logging.basicConfig(level=logging.INFO)


def _user_message(exc: Exception) -> str | None:
    """What a user can act on, as one line: a KappaError's message, or librdkafka's refusal of a
    client setting (it checks them when a client is created); None for any other error."""
    from confluent_kafka import KafkaError, KafkaException

    from streaming.errors import KappaError

    if isinstance(exc, KappaError):
        return str(exc)
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if not isinstance(error, KafkaError) or error.code() != KafkaError._INVALID_ARG:
        return None
    return (
        f"the Kafka client refused a setting: {error.str()}; fix it where it is set "
        "(--kafka KEY=VALUE, KAPPA_KAFKA_<KEY> or kafka.client in the config file)"
    )


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {
        "home": args.home,
        "kafka.bootstrap_servers": args.bootstrap_servers,
        "spark.master": args.spark_master,
        "broker.port": args.broker_port,
    }
    for item in args.kafka:
        key, sep, value = item.partition("=")
        if not sep or not key:
            from streaming.errors import ConfigError

            msg = f"--kafka {item!r} must look like KEY=VALUE, e.g. security.protocol=SASL_SSL"
            raise ConfigError(msg)
        overrides[f"kafka.client.{key.strip()}"] = value
    return overrides


def _demo_produce(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.demo import produce

    try:
        sent = produce(settings, count=args.count, rate=args.rate, seed=args.seed)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 0
    print(f"produced {sent} events to {settings.kafka.bootstrap_servers}")
    return 0


def _run(settings: Settings, args: argparse.Namespace) -> int:
    from streaming.run.job import run_pipeline
    from streaming.run.options import from_flags
    from streaming.run.reporting import LogReporter

    snapshot = run_pipeline(settings, args.pipeline, args.version, from_flags(args), LogReporter())
    print(
        f"{snapshot.deployment}: {snapshot.state}, {snapshot.records_processed} records in "
        f"{snapshot.batches} batches, {snapshot.table_rows} rows, "
        f"{snapshot.dead_lettered_run} dead-lettered, lag {snapshot.total_lag}"
    )
    return 0


def _table_show(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.table_output import print_table

    print_table(settings, args.name, args.version, args.format, args.limit)
    return 0


def _table_get(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.table_output import write_rows
    from streaming.query.lookup import lookup_typed

    rows, asked = lookup_typed(settings, args.name, args.keys, args.version)
    write_rows(rows, args.format, sys.stdout, f"({rows.num_rows} of {asked} keys found)")
    return 0


def _sql(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.table_output import write_rows
    from streaming.query import run_sql

    result = run_sql(
        settings,
        args.query,
        consistent=args.consistent,
        latest=args.latest,
        limit=args.limit,
        max_lag_s=args.max_lag,
    )
    more = f", more not shown (--limit {args.limit})" if result.truncated else ""
    write_rows(result.table, args.format, sys.stdout, f"({result.table.num_rows} rows{more})")
    print(f"kappa: {result.describe()}", file=sys.stderr)
    return 0


def _deployments_list(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.dagster_api import DagsterApi
    from kappa.deployments import deployment_statuses
    from kappa.table_output import write_text_table
    from streaming.define.registry import pipeline_names
    from streaming.engine.client import EngineClient, EngineUnavailableError

    try:
        hosted = {d["id"]: d for d in EngineClient(settings.home, timeout_s=5).deployments()}
    except EngineUnavailableError:
        hosted = None
    names = pipeline_names(settings.pipelines)
    statuses = deployment_statuses(DagsterApi(settings), names, hosted)
    rows = [
        {
            "pipeline": s.pipeline,
            "version": s.version or "",
            "role": s.role or "",
            "status": s.status,
            "progress": s.progress,
            "lag": s.lag,
            "rows": s.rows,
            "run_id": s.run_id or "",
            "note": s.note,
        }
        for s in statuses
    ]
    write_text_table(list(DEPLOYMENT_COLUMNS), rows, sys.stdout)
    return 0


def _stop(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.dagster_api import DagsterApi
    from kappa.deployments import stop_deployment
    from streaming.define.registry import get_pipeline

    get_pipeline(settings.pipelines, args.pipeline)
    ids = stop_deployment(DagsterApi(settings), args.pipeline, args.version)
    print(f"terminating run(s) {', '.join(ids)} of {args.pipeline}")
    return 0


def _up(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.platform_up import run_platform

    return run_platform(
        settings,
        producer_rate=None if args.no_producer else args.rate,
        skip_log_check=args.skip_log_check,
    )


def _deploy(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.deploy import deploy

    run_id, version = deploy(settings, args.pipeline, args.version, args.mode, args.forward_only)
    how = f"{args.mode}, forward-only" if args.forward_only else args.mode
    print(
        f"launched {args.pipeline} {version} ({how}) as run {run_id}: "
        f"http://{settings.dagster.host}:{settings.dagster.port}/runs/{run_id}"
    )
    return 0


def _reset(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.reset import reset

    def confirm(summary: str) -> bool:
        print(summary)
        if args.yes:
            return True
        try:
            return input("Type 'reset' to delete it: ").strip() == "reset"
        except EOFError:
            return False

    deleted = reset(settings.home, confirm)
    if deleted is None:
        print("nothing deleted")
        return 1
    if not deleted:
        print(f"nothing to reset under {settings.home}")
    else:
        print(f"deleted {', '.join(str(p) for p in deleted)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
