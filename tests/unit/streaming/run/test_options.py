"""Run options are written once: the command line's flags and Dagster's launch config come from
the same fields, with the same defaults."""

from __future__ import annotations

import argparse

import pytest

from assets.own_process import streaming_command
from assets.tables import StreamingRunConfig
from streaming.errors import KappaError
from streaming.kafka.offsets import CATCH_UP_BATCH_RECORDS, DEFAULT_BATCH_RECORDS
from streaming.run.job import add_run_arguments
from streaming.run.options import LaunchOptions, RunOptions, from_flags, to_flags


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return parser.parse_args(["customers", *argv])


def test_no_flags_means_the_defaults():
    assert from_flags(_parse()) == RunOptions()
    assert RunOptions().mode == "continuous" and RunOptions().follow_live


def test_the_documented_flags_set_their_options():
    options = from_flags(
        _parse(
            "--until-caught-up",
            "--max-offsets-per-trigger",
            "900",
            "--report-every",
            "2.5",
            "--starting-timestamp",
            "1700000000000",
            "--force",
            "--until-live",
            "--no-follow-live",
        )
    )
    assert options.until_caught_up and options.max_offsets_per_trigger == 900
    assert options.report_every_s == 2.5 and options.starting_timestamp_ms == 1_700_000_000_000
    assert options.force_replay and options.until_live and not options.follow_live
    assert options.thresholds.lag_records == 10_000


def test_flags_give_back_the_options_they_came_from():
    options = LaunchOptions(
        mode="until_caught_up", trigger_interval="0.5 seconds", lag_threshold=7, force_replay=True
    )
    assert (
        from_flags(_parse(*to_flags(options))).model_dump(include=set(LaunchOptions.model_fields))
        == options.model_dump()
    )


def test_an_out_of_range_flag_is_a_user_error_naming_the_flag():
    with pytest.raises(KappaError, match="--max-offsets-per-trigger"):
        from_flags(_parse("--max-offsets-per-trigger", "0"))


def test_dagster_launch_config_has_every_launch_option_with_its_default():
    fields = StreamingRunConfig.to_config_schema().as_field().config_type.fields
    for name, field in LaunchOptions.model_fields.items():
        assert fields[name].description == field.description
        if field.default is not None:
            assert fields[name].default_value == field.default
    # The version is the run's partition, not a launch option.
    assert "version" not in fields and "until_live" not in fields


def test_a_launch_config_becomes_the_job_flags(tmp_path):
    from streaming.define.registry import get_pipeline
    from streaming.settings import load_settings

    pipeline = get_pipeline(load_settings(env={}).pipelines, "customers")
    config = StreamingRunConfig(mode="until_caught_up", starting_offsets="latest")
    options = LaunchOptions.model_validate(config.model_dump())
    argv = streaming_command(pipeline.name, "v3", options)
    assert argv[argv.index("run") :][:5] == ["run", "customers", "--pipes", "--version", "v3"]
    again = from_flags(_parse(*argv[argv.index("v3") + 1 :]))
    assert again.until_caught_up and again.starting_offsets == "latest"
    assert not again.forward_only


def test_forward_only_is_a_launch_option_and_a_flag():
    config = StreamingRunConfig(forward_only=True)
    options = LaunchOptions.model_validate(config.model_dump())
    assert to_flags(options) == ["--forward-only"]
    assert from_flags(_parse("--forward-only")).forward_only


def test_a_run_until_caught_up_reads_larger_batches_unless_told():
    assert from_flags(_parse()).batch_records == DEFAULT_BATCH_RECORDS
    assert from_flags(_parse("--until-caught-up")).batch_records == CATCH_UP_BATCH_RECORDS
    told = from_flags(_parse("--until-caught-up", "--max-offsets-per-trigger", "700"))
    assert told.batch_records == 700
    # Dagster's launch config and an engine request carry the option as it was given.
    config = StreamingRunConfig(mode="until_caught_up")
    launched = RunOptions.model_validate(
        LaunchOptions.model_validate(config.model_dump()).model_dump()
    )
    assert launched.batch_records == CATCH_UP_BATCH_RECORDS
