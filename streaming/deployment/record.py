"""A deployment is one version of one pipeline, and this module is the one place that says what
it owns.

Its identity is (pipeline, version), with the fingerprint of the code it runs (recorded in its
code pin, see ``streaming.deployment.code_pin``). Every file it owns is named after its id
``<pipeline>__<version>`` under the platform home:

=============================================  ===============================================
``tables/<id>/``                               its compacted Delta table
``checkpoints/<id>/``                          Spark's checkpoint (read by ``SparkCheckpoint``)
``state/<id>/partition-<n>/``                  the operator state of a stateful plan, one
                                               store per input partition (``whole/`` when the
                                               state is not split)
``dead_letters/<id>/``                         the records it could not use (a Delta table)
``locks/<id>.lock``                            held while it runs
``code/<id>/``                                 its pinned code: the modules it runs
``alignment/<id>.json``                        how far a non-live version may read
``forward_only/<id>.json``                     a forward-only version's start: the live
                                               version and cut it was copied from
``logs/<id>.log``                              its process's output when Dagster runs it
``quality/validations/<id>.json``              its latest quality suite result
``quality/docs/<id>/``                         that result's Data Docs
``quality/comparisons/<pipeline>__<a>__<b>.*`` the comparisons it took part in (result,
                                               offsets), and their Data Docs under
                                               ``quality/docs/``
=============================================  ===============================================

Retiring a version deletes exactly these (:meth:`Deployment.remove`); ``kappa reset`` deletes
them for every deployment (:func:`derived_state`), along with what belongs to a pipeline rather
than to one of its versions: the live pointers and their history (``live/``). A deployment that
publishes its changes also has names on the broker, not files: its transactional producer and
the consumer group that records what it published (``streaming.run.publication``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from streaming.define.names import validate_pipeline_name, validate_version
from streaming.deployment.checkpoint import SparkCheckpoint
from streaming.deployment.lock import DeploymentLock
from streaming.errors import InvalidNameError
from streaming.home import Home, as_home

SEPARATOR = "__"


def deployment_id(pipeline: str, version: str) -> str:
    """A deployment's name, ``<pipeline>__<version>``: its folders, its Spark query, its pool."""
    return f"{pipeline}{SEPARATOR}{version}"


PIN_MANIFEST = "pin.json"
WHOLE_STATE = -1  # the state partition of a plan whose state is not split by input partition
# The state partitions of a regrouping plan's groups (``streaming.define.chaining``), one per
# bucket, numbered from here so that they never meet an input partition's.
GROUP_STATE = 1_000_000


def group_state(bucket: int) -> int:
    """The state partition of a regrouping plan's bucket of groups."""
    return GROUP_STATE + bucket


def state_partition_path(state_path: Path | str, partition: int) -> Path:
    """The store of one state partition under a deployment's ``state_path`` (executors compute
    it from the path the driver hands them)."""
    if partition == WHOLE_STATE:
        name = "whole"
    elif partition >= GROUP_STATE:
        name = f"groups-{partition - GROUP_STATE:04d}"
    else:
        name = f"partition-{partition:04d}"
    return Path(state_path) / name


@dataclass(frozen=True)
class Place:
    """Where one kind of a deployment's files lives: a folder of the home, and the suffix after
    the deployment's id (none: a folder named after the id). Read as an attribute of a
    :class:`Deployment`, it is that deployment's path there."""

    folder: tuple[str, ...]
    suffix: str = ""

    @overload
    def __get__(self, deployment: None, owner: type) -> Place: ...
    @overload
    def __get__(self, deployment: Deployment, owner: type) -> Path: ...
    def __get__(self, deployment: Deployment | None, owner: type) -> Place | Path:
        return self if deployment is None else self.of(deployment.home, deployment.id)

    def under(self, home: Home) -> Path:
        return home.root.joinpath(*self.folder)

    def of(self, home: Home, deployment_id: str) -> Path:
        return self.under(home) / f"{deployment_id}{self.suffix}"

    def ids(self, home: Home) -> Iterator[str]:
        """The ids of the deployments that have such a file."""
        folder = self.under(home)
        if not folder.is_dir():
            return
        for path in folder.iterdir():
            name = path.name
            if self.suffix and not (name.endswith(self.suffix) and path.is_file()):
                continue
            if not self.suffix and not path.is_dir():
                continue
            yield name[: len(name) - len(self.suffix)] if self.suffix else name


TABLE = Place(("tables",))
CHECKPOINT = Place(("checkpoints",))
STATE = Place(("state",))
DEAD_LETTERS = Place(("dead_letters",))
LOCK = Place(("locks",), ".lock")
CODE_PIN = Place(("code",))
ALIGNMENT = Place(("alignment",), ".json")
FORWARD_ONLY = Place(("forward_only",), ".json")
LOG = Place(("logs",), ".log")
VALIDATION = Place(("quality", "validations"), ".json")
VALIDATION_DOCS = Place(("quality", "docs"))
COMPARISONS = Place(("quality", "comparisons"), ".json")

# Everything a deployment owns but the comparisons it took part in.
OWNED = (
    TABLE,
    CHECKPOINT,
    STATE,
    DEAD_LETTERS,
    LOCK,
    CODE_PIN,
    ALIGNMENT,
    FORWARD_ONLY,
    LOG,
    VALIDATION,
    VALIDATION_DOCS,
)
# Folders that hold nothing but deployments' files (the logs folder also holds the platform's
# own process logs, and quality/docs the comparisons' pages).
OWN_FOLDERS = tuple(place for place in OWNED if place not in (LOG, VALIDATION_DOCS))


@dataclass(frozen=True)
class Deployment:
    """One version of one pipeline under a platform home, and the paths of everything it owns."""

    pipeline: str
    version: str
    home: Home

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", as_home(self.home))
        validate_pipeline_name(self.pipeline)
        validate_version(self.version)

    @classmethod
    def from_id(cls, deployment_id: str, home: Home) -> Deployment:
        """The deployment named ``<pipeline>__<version>``.

        Raises:
            InvalidNameError: the id is not a deployment's.
        """
        pipeline, separator, version = deployment_id.rpartition(SEPARATOR)
        if not separator:
            msg = f"{deployment_id!r} is not a deployment id (<pipeline>__<version>)"
            raise InvalidNameError(msg)
        return cls(pipeline, version, home)

    # -- identity -------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return deployment_id(self.pipeline, self.version)

    @property
    def app_id(self) -> str:
        """The Delta application id that makes this deployment's batch commits idempotent."""
        return f"kappa:{self.id}"

    @property
    def fingerprint(self) -> str | None:
        """The fingerprint of the code it runs, from its pin (None before its first start)."""
        try:
            manifest = json.loads((self.code_pin_path / PIN_MANIFEST).read_text())
        except FileNotFoundError:
            return None
        return str(manifest["fingerprint"])

    # -- what it owns: each a path named after its id (the table above) ----------------------

    table_path = TABLE
    checkpoint_path = CHECKPOINT
    state_path = STATE  # the operator state of a stateful plan (streaming.state.StateStore)
    dead_letter_path = DEAD_LETTERS
    lock_path = LOCK
    code_pin_path = CODE_PIN  # the code it runs (streaming.deployment.code_pin)
    alignment_path = ALIGNMENT  # how far a non-live version reads (streaming.versions.alignment)
    # Where a forward-only version started from (streaming.versions.forward_only).
    forward_only_path = FORWARD_ONLY
    log_path = LOG
    validation_path = VALIDATION  # its latest quality suite result (streaming.table_quality)
    validation_docs_path = VALIDATION_DOCS

    def comparison_with(self, candidate: Deployment) -> Comparison:
        """Where the comparison of ``candidate`` with this (live) version is kept."""
        return Comparison(self, candidate)

    def comparisons(self) -> list[Comparison]:
        """The saved comparisons this version took part in, on either side."""
        found = []
        for name in sorted({_without_position(n) for n in COMPARISONS.ids(self.home)}):
            rest, _, new = name.rpartition(SEPARATOR)
            pipeline, _, old = rest.rpartition(SEPARATOR)
            if pipeline == self.pipeline and self.version in (old, new):
                try:
                    live = Deployment(pipeline, old, self.home)
                    found.append(Comparison(live, Deployment(pipeline, new, self.home)))
                except InvalidNameError:
                    continue  # not a comparison's file
        return found

    def owned_paths(self) -> list[Path]:
        """Every path this deployment owns, whether it exists yet or not."""
        paths = [place.of(self.home, self.id) for place in OWNED]
        for comparison in self.comparisons():
            paths += comparison.paths()
        return paths

    @property
    def checkpoint(self) -> SparkCheckpoint:
        """The one reader of its Spark checkpoint."""
        return SparkCheckpoint(self.checkpoint_path)

    @property
    def lock(self) -> DeploymentLock:
        return DeploymentLock(self.lock_path)

    def remove(self) -> list[Path]:
        """Delete every file it owns; returns the paths that existed. The caller makes sure it
        does not run (``streaming.versions.retire``)."""
        removed = []
        for path in self.owned_paths():
            if path.is_dir():
                shutil.rmtree(path)
                removed.append(path)
            elif path.exists():
                path.unlink()
                removed.append(path)
        return removed


@dataclass(frozen=True)
class Comparison:
    """Where one comparison of a candidate with the version live then is kept."""

    live: Deployment
    candidate: Deployment

    @property
    def name(self) -> str:
        return SEPARATOR.join((self.live.pipeline, self.live.version, self.candidate.version))

    @property
    def result_path(self) -> Path:
        """The verdict (``quality.ComparisonResult`` as JSON)."""
        return COMPARISONS.of(self.live.home, self.name)

    @property
    def position_path(self) -> Path:
        """Where it was made: the input offsets and both tables' versions."""
        return self.result_path.with_suffix(".at.json")

    @property
    def docs_path(self) -> Path:
        return VALIDATION_DOCS.of(self.live.home, self.name)

    def paths(self) -> list[Path]:
        return [self.result_path, self.position_path, self.docs_path]


def _without_position(name: str) -> str:
    """A comparison's name from the stem of its result or of its position file beside it."""
    return name.removesuffix(".at")


def deployments_on_disk(home: Home, pipeline: str | None = None) -> list[Deployment]:
    """Every deployment (of ``pipeline``, or of any) that owns a file under ``home``."""
    found: set[Deployment] = set()
    for place in (*OWN_FOLDERS, LOG):
        for deployment_id in place.ids(home):
            try:
                deployment = Deployment.from_id(deployment_id, home)
            except InvalidNameError:
                continue  # not a deployment's (the broker's log, say)
            if pipeline is None or deployment.pipeline == pipeline:
                found.add(deployment)
    return sorted(found, key=lambda d: d.id)


def derived_state(home: Home) -> list[Path]:
    """What ``kappa reset`` deletes: every deployment's files (their folders whole, their logs
    one by one), the live pointers with their history, the cut log (its offsets may point past a
    log that was lost) and every quality result. The log, the platform's own process logs and
    Dagster's history are kept."""
    folders = [home.root / place.folder[0] for place in OWN_FOLDERS]  # quality/ as a whole
    logs = [d.log_path for d in deployments_on_disk(home)]
    return [*dict.fromkeys(folders), home.live, home.cuts.parent, *logs]
