"""Running a list of checks on a Spark or pandas DataFrame with Great Expectations 1.x.

Each run uses its own context: an ephemeral one, or a file one under ``docs_dir`` when Data
Docs are wanted. The DataFrame is registered as a dataframe asset of a Spark or a pandas data
source and validated as one whole-dataframe batch; GE's result is reduced to
:class:`~quality.outcomes.ExpectationOutcome` values. Great Expectations is imported here
lazily, so importing :mod:`quality` stays cheap.
"""

from __future__ import annotations

import datetime as dt
import importlib
import threading
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quality.composite_key import key_text
from quality.data_docs import DataDocsLinks, build_data_docs, file_context, quiet
from quality.formatting import jsonable, show
from quality.outcomes import ExpectationOutcome

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations import ExpectationSuite
    from great_expectations.data_context import AbstractDataContext
    from pyspark.sql import DataFrame

    Frame = DataFrame | pd.DataFrame

DATASOURCE = "kappa_spark"
PANDAS_DATASOURCE = "kappa_pandas"
EXAMPLES = 5
_FILE_PROJECT = threading.Lock()


def import_in_background() -> threading.Thread:
    """Start importing Great Expectations (2-3 s of Python) in a daemon thread.

    Callers that first run a long Spark job overlap the two: the driver thread only waits on
    the JVM meanwhile. A later ``import great_expectations`` waits for this one to finish.
    """
    thread = threading.Thread(
        target=importlib.import_module,
        args=("great_expectations",),
        name="import-great-expectations",
        daemon=True,
    )
    thread.start()
    return thread


@dataclass(frozen=True)
class Check:
    """One expectation to run.

    Attributes:
        name: short stable id for reports and metadata keys.
        description: what is expected, in words.
        expectation: class name in ``great_expectations.expectations``.
        kwargs: the expectation's arguments.
        where: ``(column, value)``: judge only rows whose column equals value (a GE row
            condition), e.g. ``("_status", "both")``.
        group: which check of a comparison it belongs to (its outcome carries it).
    """

    name: str
    description: str
    expectation: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    where: tuple[str, Any] | None = None
    group: str | None = None


@dataclass(frozen=True)
class GxRun:
    """What a GE validation run produced."""

    success: bool
    outcomes: tuple[ExpectationOutcome, ...]
    run_time: str
    docs: DataDocsLinks | None = None


def run_checks(
    df: Frame,
    checks: Sequence[Check],
    *,
    suite_name: str,
    key_column: str | Sequence[str] | None = None,
    docs_dir: str | Path | None = None,
) -> GxRun:
    """Validate ``df`` against ``checks`` with Great Expectations.

    The suite first runs for counts only (one Spark job per expectation domain and one per
    map expectation), then the failed expectations run again, as the suite
    ``<suite_name>.evidence``, for example values and keys: GE spends several more jobs per
    expectation on examples even when there are none to find.

    Args:
        df: the data, a Spark DataFrame (cache it first when it is expensive, GE scans it
            several times) or a pandas one.
        checks: the expectations, in report order.
        suite_name: the GE suite (and asset) name; also names the Data Docs pages.
        key_column: a column whose values identify failing rows in the evidence, or the
            columns of a composite key (shown as ``quality.composite_key.key_text``).
        docs_dir: keep both runs in a file GE project in this directory and build its Data
            Docs (the page returned is the counts run's; the evidence run is in the index).

    Returns:
        The overall success, one outcome per check and, with ``docs_dir``, the Data Docs links.
    """
    # A file GE project is one set of files (its config, stores and Data Docs) that GE reads and
    # rewrites without locking: two suites at once in one process (the engine validates for
    # several Dagster runs) read each other's half-written config.
    with nullcontext() if docs_dir is None else _FILE_PROJECT:
        return _checks(df, checks, suite_name, key_column, docs_dir)


def _checks(
    df: Frame,
    checks: Sequence[Check],
    suite_name: str,
    key_column: str | Sequence[str] | None,
    docs_dir: str | Path | None,
) -> GxRun:
    import great_expectations as gx

    full: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": EXAMPLES}
    keys = [key_column] if isinstance(key_column, str) else list(key_column or ())
    if keys and all(k in df.columns for k in keys):
        full["unexpected_index_column_names"] = keys
    counts_only = {"result_format": "BASIC", "partial_unexpected_count": 0}

    if docs_dir is None:
        context: AbstractDataContext = quiet(gx.get_context(mode="ephemeral"))
    else:
        context = file_context(docs_dir)
    result, run_id = _validate(context, df, checks, suite_name, counts_only)
    outcomes = _outcomes(result, checks, keys, df)
    failed = {o.name for o in outcomes if not o.success and o.unexpected_count}
    if failed:
        again = [c for c in checks if c.name in failed]
        evidence, _ = _validate(context, df, again, f"{suite_name}.evidence", full)
        found = {o.name: o for o in _outcomes(evidence, again, keys, df)}
        outcomes = [
            o.model_copy(
                update={
                    "unexpected_examples": found[o.name].unexpected_examples,
                    "unexpected_keys": found[o.name].unexpected_keys,
                }
            )
            if o.name in found
            else o
            for o in outcomes
        ]
    docs = None
    if docs_dir is not None:
        docs = build_data_docs(context=context, validation_id=_result_id(result, run_id))
    return GxRun(
        success=bool(result.success),
        outcomes=tuple(outcomes),
        run_time=run_id.run_time.isoformat(),
        docs=docs,
    )


def expectation_suite(name: str, checks: Sequence[Check]) -> ExpectationSuite:
    """The checks as a GE ``ExpectationSuite`` (each expectation's meta names its check)."""
    import great_expectations as gx
    from great_expectations.expectations.row_conditions import Column

    expectations = []
    for check in checks:
        kwargs = dict(check.kwargs)
        if check.where is not None:
            kwargs["row_condition"] = Column(check.where[0]) == check.where[1]
        meta = {"kappa_check": check.name, "description": check.description}
        expectations.append(getattr(gx.expectations, check.expectation)(**kwargs, meta=meta))
    return gx.ExpectationSuite(name=name, expectations=expectations)


def _validate(
    context: Any,
    df: Frame,
    checks: Sequence[Check],
    suite_name: str,
    result_format: Mapping[str, Any],
) -> tuple[Any, Any]:
    """Register the asset and suite in ``context`` and run them on ``df``."""
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier

    # A validation definition names its data source's asset: one per source, so a file project
    # that validated a table with one can validate it with the other.
    if _is_pandas(df):
        source = context.data_sources.add_or_update_pandas(PANDAS_DATASOURCE)
        definition_name = f"{suite_name} (pandas)"
    else:
        source = context.data_sources.add_or_update_spark(DATASOURCE)
        definition_name = suite_name
    asset = next((a for a in source.assets if a.name == suite_name), None)
    asset = asset or source.add_dataframe_asset(suite_name)
    batch = next((b for b in asset.batch_definitions if b.name == "whole"), None)
    batch = batch or asset.add_batch_definition_whole_dataframe("whole")

    suite = context.suites.add_or_update(expectation_suite(suite_name, checks))
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=definition_name, data=batch, suite=suite)
    )
    run_id = RunIdentifier(run_name=suite_name, run_time=dt.datetime.now(dt.UTC))
    result = definition.run(
        batch_parameters={"dataframe": df}, result_format=dict(result_format), run_id=run_id
    )
    return result, run_id


def _is_pandas(df: Frame) -> bool:
    return type(df).__module__.startswith("pandas.")


def _outcomes(
    result: Any, checks: Sequence[Check], keys: Sequence[str], df: Frame
) -> list[ExpectationOutcome]:
    by_name = {check.name: check for check in checks}
    present = set(df.columns)
    outcomes = [_outcome(r, by_name, keys, present) for r in result.results]
    order = {check.name: i for i, check in enumerate(checks)}
    outcomes.sort(key=lambda o: order.get(o.name, len(order)))
    return outcomes


def _result_id(result: Any, run_id: Any) -> Any:
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    batch_id = next((r.expectation_config.kwargs.get("batch_id") for r in result.results), None)
    return ValidationResultIdentifier(
        expectation_suite_identifier=ExpectationSuiteIdentifier(name=result.suite_name),
        run_id=run_id,
        batch_identifier=batch_id,
    )


def _error(exception_info: Any, kwargs: Mapping[str, Any], present: set[str]) -> str | None:
    if not exception_info:
        return None
    infos = [exception_info] if "raised_exception" in exception_info else exception_info.values()
    raised = [i for i in infos if isinstance(i, Mapping) and i.get("raised_exception")]
    if not raised:
        return None
    named = [kwargs.get(k) for k in ("column", "column_A", "column_B") if kwargs.get(k)]
    missing = [c for c in named if c not in present]
    if missing:
        return f"column {', '.join(missing)} does not exist"
    lines = str(raised[0].get("exception_message") or "error").strip().splitlines()
    return lines[-1] if lines else "error"


def _example(value: Any, pair: bool) -> str:
    if pair and isinstance(value, list | tuple) and len(value) == 2:
        return f"{show(value[0])} -> {show(value[1])}"
    return show(value)


def _observed(result: Mapping[str, Any]) -> Any:
    observed = jsonable(result.get("observed_value"))
    mismatched = (result.get("details") or {}).get("mismatched")
    if isinstance(mismatched, Mapping):
        return {
            "observed": observed,
            "missing": sorted(jsonable(mismatched.get("missing") or [])),
            "unexpected": sorted(jsonable(mismatched.get("unexpected") or [])),
        }
    return observed


def _outcome(
    res: Any, checks: Mapping[str, Check], key: Sequence[str], present: set[str]
) -> ExpectationOutcome:
    config = res.expectation_config
    meta = config.meta or {}
    name = meta.get("kappa_check", config.type)
    check = checks.get(name)
    kwargs = config.kwargs
    column = kwargs.get("column")
    if column is None and "column_A" in kwargs:
        column = f"{kwargs['column_A']} = {kwargs['column_B']}"
    if column is None and "column_list" in kwargs:
        column = ", ".join(kwargs["column_list"])
    result = res.result or {}
    # pandas gives numpy scalars, which a composite key's JSON would spell as strings
    index_rows = [
        {k: v.item() if hasattr(v, "item") else v for k, v in row.items()}
        if isinstance(row, Mapping)
        else row
        for row in result.get("partial_unexpected_index_list") or []
    ]
    keys = tuple(
        show(row[key[0]]) if len(key) == 1 else key_text(row, key)
        for row in index_rows
        if key and isinstance(row, Mapping) and all(k in row for k in key)
    )
    count = result.get("unexpected_count")
    return ExpectationOutcome(
        name=name,
        expectation_type=config.type,
        success=bool(res.success),
        column=column,
        description=meta.get("description", check.description if check else ""),
        mostly=kwargs.get("mostly", check.kwargs.get("mostly") if check else None),
        element_count=result.get("element_count"),
        unexpected_count=None if count is None else int(count),
        unexpected_percent=result.get("unexpected_percent"),
        missing_count=result.get("missing_count"),
        observed_value=_observed(result),
        unexpected_examples=tuple(
            _example(v, "column_A" in kwargs)
            for v in (result.get("partial_unexpected_list") or [])[:EXAMPLES]
        ),
        unexpected_keys=keys[:EXAMPLES],
        error=_error(res.exception_info, kwargs, present),
        group=check.group if check else None,
    )
