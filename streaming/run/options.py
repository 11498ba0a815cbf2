"""The options of a deployment's run, written once: names, defaults, limits and help.

:class:`LaunchOptions` are what a user chooses when launching a deployment; ``kappa run`` and
``python -m streaming run`` take them as flags (:func:`add_flags`) and Dagster's launch config
of ``deploy_<pipeline>`` is built from the same fields. :class:`RunOptions` adds the flags only
the command line has and the values the platform sets itself.
"""

from __future__ import annotations

import argparse
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from streaming.errors import RunError
from streaming.kafka.offsets import CATCH_UP_BATCH_RECORDS, DEFAULT_BATCH_RECORDS
from streaming.run.health import HealthThresholds


def _flag(name: str, **extra: Any) -> dict[str, Any]:
    return {"flag": name, **extra}


class LaunchOptions(BaseModel):
    """How a deployment runs: the flags of the command line and Dagster's launch config."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["continuous", "until_caught_up"] = Field(
        default="continuous",
        description="continuous: keep the query running until stopped. until_caught_up: process "
        "what is in the log now (availableNow trigger), then finish",
        json_schema_extra=_flag("--until-caught-up", const="until_caught_up"),
    )
    trigger_interval: str = Field(
        default="1 second",
        description="micro-batch interval in continuous mode",
        json_schema_extra=_flag("--trigger-interval"),
    )
    max_offsets_per_trigger: int | None = Field(
        default=None,
        gt=0,
        description="records per micro-batch at most (a backlog is read in batches this size; "
        f"default: {DEFAULT_BATCH_RECORDS:,}, and {CATCH_UP_BATCH_RECORDS:,} until caught up)",
        json_schema_extra=_flag("--max-offsets-per-trigger"),
    )
    starting_offsets: str = Field(
        default="earliest",
        description="where a new deployment starts: earliest, latest, or JSON offsets like "
        '{"customers": {"0": 1200, "1": 0}}; ignored when the deployment has a checkpoint',
        json_schema_extra=_flag("--starting-offsets"),
    )
    starting_timestamp_ms: int | None = Field(
        default=None,
        ge=0,
        description="start a new deployment at the first records at or after this time (epoch ms)",
        json_schema_extra=_flag("--starting-timestamp"),
    )
    forward_only: bool = Field(
        default=False,
        description="start a new version from the live version's table and state at its latest "
        "commit instead of replaying the log (only for a change of the output alone; see `kappa "
        "versions`); a restart of a version that started so resumes it",
        json_schema_extra=_flag("--forward-only"),
    )
    force_replay: bool = Field(
        default=False,
        description="replay from the earliest offsets even if retention removed the log's start",
        json_schema_extra=_flag("--force"),
    )
    # A Dagster run's report is three events in Dagster's event log (a materialization or
    # observation, two check evaluations): the whole demo's 18 deployments write 3.6 a second.
    report_every_s: float = Field(
        default=15.0,
        gt=0,
        description="seconds between health reports",
        json_schema_extra=_flag("--report-every"),
    )
    lag_threshold: int = Field(
        default=10_000,
        ge=0,
        description="records of lag above which the deployment is lagging",
        json_schema_extra=_flag("--lag-threshold"),
    )
    stall_after_s: float = Field(
        default=60.0,
        gt=0,
        description="seconds without a batch, with input waiting, before it is stalled",
        json_schema_extra=_flag("--stall-after"),
    )

    @property
    def until_caught_up(self) -> bool:
        return self.mode == "until_caught_up"

    @property
    def batch_records(self) -> int:
        """Records per micro-batch at most: the option's, or by default larger batches while
        catching up (the run ends at the log's end) than while following the log."""
        if self.max_offsets_per_trigger is not None:
            return self.max_offsets_per_trigger
        return CATCH_UP_BATCH_RECORDS if self.until_caught_up else DEFAULT_BATCH_RECORDS

    @property
    def thresholds(self) -> HealthThresholds:
        return HealthThresholds(self.lag_threshold, self.stall_after_s)


class RunOptions(LaunchOptions):
    """Everything a run needs: the launch options, the command line's version options, and what
    the platform sets itself (no flag)."""

    until_live: bool = Field(
        default=False,
        description="stop at exactly the input offsets the live version has committed (to "
        "compare with it)",
        json_schema_extra=_flag("--until-live"),
    )
    follow_live: bool = Field(
        default=True,
        description="while not live, cut batches at the live version's commits (so the two "
        "compare at equal offsets)",
        json_schema_extra=_flag(
            "--no-follow-live",
            help="while not live, do not cut batches at the live version's commits (then it "
            "cannot be compared with it)",
        ),
    )
    ending_offsets: str | None = None  # JSON offsets the run stops at (set by --until-live)
    fail_on_data_loss: bool = True
    graceful_stop_timeout_s: float = 20.0


def add_flags(parser: argparse.ArgumentParser, model: type[BaseModel] = RunOptions) -> None:
    """One flag per option field that names one; unset flags leave the field's default."""
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra
        if not isinstance(extra, dict) or "flag" not in extra:
            continue
        flag = str(extra["flag"])
        common = {"dest": name, "default": argparse.SUPPRESS}
        text = str(extra.get("help", field.description))
        if "const" in extra:
            action, const = "store_const", extra["const"]
            parser.add_argument(flag, action=action, const=const, help=text, **common)
        elif field.annotation is bool:
            action = "store_false" if field.default else "store_true"
            parser.add_argument(flag, action=action, help=text, **common)
        else:
            if field.default is not None:
                text += f" (default: {field.default})"
            kind = _scalar(field.annotation)
            parser.add_argument(flag, type=kind, help=text, metavar=name.upper(), **common)


def from_flags(args: argparse.Namespace, model: type[RunOptions] = RunOptions) -> RunOptions:
    """The options the parsed flags give (defaults for the flags not given).

    Raises:
        RunError: a value is out of range; the message names the flag.
    """
    given = {n: getattr(args, n) for n in model.model_fields if hasattr(args, n)}
    try:
        return model(**given)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = model.model_fields[str(error["loc"][0])]
            extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
            problems.append(f"{extra.get('flag', error['loc'][0])}: {error['msg']}")
        raise RunError("; ".join(problems)) from None


def to_flags(options: LaunchOptions) -> list[str]:
    """The flags that give ``options`` back through :func:`add_flags` (defaults left out)."""
    argv: list[str] = []
    for name, field in type(options).model_fields.items():
        extra = field.json_schema_extra
        value = getattr(options, name)
        if not isinstance(extra, dict) or "flag" not in extra or value == field.default:
            continue
        if "const" in extra or isinstance(value, bool):
            argv.append(str(extra["flag"]))
        elif value is not None:
            argv += [str(extra["flag"]), str(value)]
    return argv


def _scalar(annotation: Any) -> type:
    """The one type of ``int | None`` style annotations, for argparse."""
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [a for a in get_args(annotation) if a is not type(None)]
        return kinds[0]
    return annotation
