"""`kappa` subcommands about versions: tables, versions, history, promote, rollback, retire,
diff."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Iterable

from streaming.define.pipeline import Pipeline
from streaming.define.registry import get_pipeline, pipeline_names
from streaming.deployment import deployment_id
from streaming.settings import Settings
from streaming.versions.live_pointer import history


def add_version_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    tables = sub.add_parser("tables", help="pipelines with their live and deployed versions")
    tables.set_defaults(handler=_tables)

    versions = sub.add_parser(
        "versions",
        help="a pipeline's versions: role, forward-only start, and what a version not deployed "
        "yet changes from the live one (category, reasons, cost of a full replay and of a "
        "forward-only start)",
    )
    versions.add_argument("pipeline")
    versions.add_argument("version", nargs="?", help="only this version, with its change")
    versions.set_defaults(handler=_versions)

    log = sub.add_parser("history", help="the live-pointer switch log of a pipeline")
    log.add_argument("pipeline")
    log.set_defaults(handler=_history)

    promote = sub.add_parser("promote", help="make a version live (gated by the comparison)")
    promote.add_argument("pipeline")
    promote.add_argument("version")
    promote.add_argument("--force", action="store_true", help="promote even if checks fail")
    promote.add_argument("--reason", default="manual promotion")
    promote.set_defaults(handler=_promote)

    rollback = sub.add_parser("rollback", help="switch back to the previously live version")
    rollback.add_argument("pipeline")
    rollback.set_defaults(handler=_rollback)

    retire = sub.add_parser("retire", help="delete a stopped, non-live version's state")
    retire.add_argument("pipeline")
    retire.add_argument("version")
    retire.set_defaults(handler=_retire)

    diff = sub.add_parser("diff", help="compare two versions at the same input offsets")
    diff.add_argument("pipeline")
    diff.add_argument("old", help="the live version")
    diff.add_argument("new", help="the candidate version")
    diff.set_defaults(handler=_diff)


def _tables(settings: Settings, args: argparse.Namespace) -> int:
    from streaming.versions.overview import overview

    for name in pipeline_names(settings.pipelines):
        view = overview(settings, name)
        others = [v for v in view.versions if v.version != view.live_version]
        described = [
            f"{v.version} ({v.role}"
            + ("" if v.caught_up_pct is None else f", {v.caught_up_pct:.1f}% caught up")
            + (", running" if v.running else "")
            + ")"
            for v in others
        ]
        print(
            f"{name:<20} live={view.live_version or '-':<8} declared={view.declared_version:<8} "
            f"other versions: {', '.join(described) or '-'}"
        )
    return 0


def _versions(settings: Settings, args: argparse.Namespace) -> int:
    from streaming.versions.overview import overview

    pipeline = get_pipeline(settings.pipelines, args.pipeline)
    view = overview(settings, pipeline.name)
    print(f"{pipeline.name}: live {view.live_version or '-'}, declared {view.declared_version}")
    rows = {v.version: v for v in view.versions}
    shown = [*rows, *([] if view.declared_deployed else [view.declared_version])]
    for version in [args.version] if args.version else shown:
        row = rows.get(version)
        if row is None:
            declared = "declared, " if version == view.declared_version else ""
            print(f"  {version:<10} {declared}not deployed")
        else:
            progress = "" if row.caught_up_pct is None else f", {row.caught_up_pct:.1f}% caught up"
            running = ", running" if row.running else ""
            start = f", forward-only from {row.forward_only_from}" if row.forward_only_from else ""
            print(f"  {version:<10} {row.role}{running}{progress}{start}")
        if version != view.live_version and (row is None or args.version):
            for line in _change_lines(settings, pipeline, version, rows):
                print(f"      {line}")
    return 0


def _change_lines(
    settings: Settings, pipeline: Pipeline, version: str, deployed: Iterable[str]
) -> list[str]:
    """What ``version`` changes from the live one, with both costs at the rates the deployed
    versions last reported to Dagster (the platform's figure when it does not answer)."""
    from kappa.dagster_api import DagsterApi
    from kappa.deployments import reported_rates
    from kappa.errors import DagsterApiError
    from streaming.versions.change import change_from_live

    try:
        rates = reported_rates(DagsterApi(settings, timeout_s=5), pipeline.name, deployed)
    except DagsterApiError:
        rates = ()
    change = change_from_live(settings, pipeline, version, rates=rates)
    if change is None:
        return ["no live version to compare with"]
    return change.lines()


def _history(settings: Settings, args: argparse.Namespace) -> int:
    get_pipeline(settings.pipelines, args.pipeline)
    for record in history(settings.home, args.pipeline):
        when = dt.datetime.fromtimestamp(record.at, dt.UTC).isoformat(timespec="seconds")
        checked = (
            "" if record.comparison is None else f" comparison={json.dumps(record.comparison)}"
        )
        print(
            f"{when} {record.from_version or '-'} -> {record.to_version} ({record.reason}){checked}"
        )
    return 0


def _promote(settings: Settings, args: argparse.Namespace) -> int:
    from streaming.versions.promotion import promote

    done = promote(settings, args.pipeline, args.version, force=args.force, reason=args.reason)
    if done.comparison is not None:
        print(done.comparison.render_text())
    print(
        f"{args.pipeline}: live version {done.switch.from_version or '-'} -> "
        f"{done.switch.to_version}"
    )
    return 0


def _rollback(settings: Settings, args: argparse.Namespace) -> int:
    from streaming.versions.promotion import rollback

    record = rollback(settings, args.pipeline)
    print(f"{args.pipeline}: rolled back {record.from_version} -> {record.to_version}")
    return 0


def _retire(settings: Settings, args: argparse.Namespace) -> int:
    from kappa.dagster_api import DagsterApi
    from streaming.versions.retire import stop_and_retire

    pipeline = get_pipeline(settings.pipelines, args.pipeline)
    removed = stop_and_retire(
        settings,
        pipeline.name,
        args.version,
        lambda run_id: DagsterApi(settings).terminate([run_id]),
    )
    print(f"retired {deployment_id(pipeline.name, args.version)}: removed {len(removed)} path(s)")
    return 0


def _diff(settings: Settings, args: argparse.Namespace) -> int:
    from streaming.versions.promotion import compare_versions

    result = compare_versions(settings, args.pipeline, args.old, args.new)
    print(result.render_text())
    return 0 if result.passed else 1


def add_quality_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    quality = sub.add_parser("quality", help="data quality results")
    quality_sub = quality.add_subparsers(dest="quality_command", required=True)
    report = quality_sub.add_parser("report", help="the latest quality results of a table")
    report.add_argument("pipeline")
    report.add_argument("--version", help="deployment version (default: the live one)")
    report.add_argument("--run", action="store_true", help="validate the snapshot now first")
    report.set_defaults(handler=_quality_report)


def _quality_report(settings: Settings, args: argparse.Namespace) -> int:
    from quality import load_result, render
    from streaming.table_quality import run_table_suite
    from streaming.versions.live_pointer import resolve_deployment

    pipeline = get_pipeline(settings.pipelines, args.pipeline)
    deployment = resolve_deployment(settings, pipeline.name, args.version)
    if args.run:
        run_table_suite(settings, pipeline, deployment.version)
    path = deployment.validation_path
    if not path.exists():
        print(
            f"kappa: error: no quality results for {deployment.id} yet; run the "
            "`table_quality` job in Dagster or pass --run",
            file=sys.stderr,
        )
        return 2
    print(render(load_result(path)))
    for comparison in deployment.comparisons():
        if comparison.candidate == deployment and comparison.result_path.exists():
            print(render(load_result(comparison.result_path)))
    return 0
