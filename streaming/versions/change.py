"""A new version against the live one: what kind of change it is, whether it may start
forward-only, and what each way of starting it costs.

The live version's code is its pin (``streaming.deployment.code_pin``), so the comparison is with
what the live version runs, whatever the files on disk say now; the new version's is its pin
once it has one, else the declared code. The differences and their categories are
``streaming.versions.plan_diff``'s; the costs ``streaming.versions.change_cost``'s.

A version may start forward-only (from the live version's table and state at its latest commit,
``streaming.versions.forward_only``) when its change is ``output`` or ``none`` and its table
keeps the live table's columns: the rows before the cut keep the old code's values, so they must
fit the new table as they are.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from streaming.define.pipeline import Pipeline
from streaming.deployment import Deployment
from streaming.deployment.code_pin import pinned_pipeline
from streaming.deployment.record import PIN_MANIFEST
from streaming.errors import KappaError, VersionError
from streaming.settings import Settings
from streaming.versions.change_cost import ChangeCosts, costs_from_live
from streaming.versions.forward_only import completed_start
from streaming.versions.live_pointer import live_version
from streaming.versions.plan_diff import Category, Difference, differences

FORWARD_ONLY_CATEGORIES = (Category.OUTPUT, Category.NONE)


class ChangeUnknownError(VersionError):
    """The live version's code is not known (it has no pin), so nothing can be compared."""


class VersionChange(BaseModel):
    """How ``version`` differs from ``live_version`` (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    pipeline: str
    live_version: str
    version: str
    category: Category
    differences: tuple[Difference, ...]
    forward_only_allowed: bool
    refusal: str = ""  # why it may not start forward-only, naming what differs
    costs: ChangeCosts | None = None

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(f"{d.category}: {d.reason}" for d in self.differences)

    def summary(self) -> str:
        """One line: the category, the first difference, whether forward-only may start."""
        first = self.differences[0].reason if self.differences else "nothing differs"
        more = len(self.differences) - 1
        also = f" (and {more} more)" if more > 0 else ""
        allowed = "allowed" if self.forward_only_allowed else "not allowed"
        return f"{self.category}: {first}{also}; forward-only {allowed}"

    def lines(self) -> list[str]:
        """The change as text: category, every difference, forward-only, the costs."""
        lines = [f"change from live {self.live_version}: {self.category}"]
        lines += [f"  - {reason}" for reason in self.reasons or ("none: nothing differs",)]
        if self.forward_only_allowed:
            how = f"kappa deploy {self.pipeline} --version {self.version} --forward-only"
            lines.append(f"forward-only: allowed ({how})")
        else:
            lines.append(f"forward-only: not allowed: {self.refusal}")
        if self.costs is not None:
            lines += self.costs.lines()
        return lines


def categorise(
    old: Pipeline, new: Pipeline, live: str, version: str, costs: ChangeCosts | None = None
) -> VersionChange:
    """The change from ``old`` (the live version ``live``) to ``new`` (at ``version``)."""
    found = differences(old, new)
    if all(d.category == Category.NONE for d in found) and old.fingerprint != new.fingerprint:
        files = []
        if old.project_code is not None and new.project_code is not None:
            files = new.project_code.changed_files(old.project_code)
        where = ", ".join(files) or "its code"
        found.append(
            Difference(
                category=Category.NONE,
                reason=f"{where} changed, but not what the table is computed from",
            )
        )
    category = found[0].category if found else Category.NONE
    refusal = ""
    if category not in FORWARD_ONLY_CATEGORIES:
        reaching = [d.reason for d in found if d.category == category]
        refusal = (
            f"{new.name} {version} changes its {category} ({'; '.join(reaching)}); a version "
            "starts forward-only only when its change is to the output (row-wise columns, "
            "filters, select, the output topic) or none. Deploy it with a full replay"
        )
    elif old.table_schema != new.table_schema:
        refusal = (
            f"{new.name} {version} changes the table's columns ({_names(old)} -> {_names(new)}): "
            "the rows before the cut would not fit them. Deploy it with a full replay"
        )
    return VersionChange(
        pipeline=new.name,
        live_version=live,
        version=version,
        category=category,
        differences=tuple(found),
        forward_only_allowed=not refusal,
        refusal=refusal,
        costs=costs,
    )


def _names(pipeline: Pipeline) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in pipeline.table_schema)


def pinned_code(settings: Settings, declared: Pipeline, version: str) -> Pipeline | None:
    """The code ``version`` of the pipeline runs, from its pin (None: it has none yet). Loading
    a pin writes nothing."""
    deployment = Deployment(declared.name, version, settings.home)
    if not (deployment.code_pin_path / PIN_MANIFEST).exists():
        return None
    return pinned_pipeline(settings.home, declared, version).pipeline


def change_from_live(
    settings: Settings,
    declared: Pipeline,
    version: str | None = None,
    rates: tuple[float, ...] | None = None,
) -> VersionChange | None:
    """How ``version`` (default: the declared one) differs from the live version; None when
    there is no live version or it is the live one. With ``rates`` (the processed records per
    second versions reported; empty when none did), the costs too (asks the broker; none when
    it does not answer).

    Raises:
        ChangeUnknownError: the live version has no pinned code to compare with.
    """
    version = version or declared.version
    live = live_version(settings.home, declared.name)
    if live is None or live == version:
        return None
    old = pinned_code(settings, declared, live)
    if old is None:
        msg = (
            f"{declared.name}: the live version {live} has no pinned code "
            f"({Deployment(declared.name, live, settings.home).code_pin_path}), so what "
            f"{version} changes cannot be told"
        )
        raise ChangeUnknownError(msg)
    new = pinned_code(settings, declared, version) or declared
    costs = None
    if rates is not None:
        live_deployment = Deployment(declared.name, live, settings.home)
        try:
            costs = costs_from_live(settings, new.topics, live_deployment, rates)
        except KappaError:  # the broker does not answer: the change without its costs
            costs = None
    return categorise(old, new, live, version, costs)


def forward_only_refusal(settings: Settings, declared: Pipeline, version: str) -> str:
    """Why ``version`` may not start forward-only, naming what differs ("" when it may, or when
    it started so already: a restart resumes what was copied)."""
    if completed_start(Deployment(declared.name, version, settings.home)) is not None:
        return ""
    change = change_from_live(settings, declared, version)
    if change is None:
        return (
            f"{declared.name} {version} cannot start forward-only: it needs another version that "
            "is live to start from"
        )
    return change.refusal
