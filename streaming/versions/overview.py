"""One pipeline's versions at a glance: live, candidates and their progress, which started
forward-only and from which cut, the last comparison, the switch history, and what the declared
version changes when it is not the live one. Shown as asset metadata in Dagster and by ``kappa
tables`` and ``kappa versions``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from streaming.define.registry import get_pipeline
from streaming.delta.table_reader import last_end_offsets
from streaming.deployment import Deployment
from streaming.settings import Settings
from streaming.versions.alignment import progress
from streaming.versions.change import VersionChange
from streaming.versions.forward_only import read_start
from streaming.versions.live_pointer import Switch
from streaming.versions.promotion import comparison_offsets
from streaming.versions.state import Role, pipeline_versions


@dataclass(frozen=True)
class VersionRow:
    """One deployed version in the overview."""

    version: str
    role: str  # streaming.versions.state.Role
    running: bool
    behind_live: int | None
    caught_up_pct: float | None
    comparison: dict[str, Any] | None = None  # the last comparison with the live version
    forward_only_from: str = ""  # the cut it started from, when it started forward-only


@dataclass(frozen=True)
class Overview:
    pipeline: str
    declared_version: str
    live_version: str | None
    versions: tuple[VersionRow, ...]
    history: tuple[Switch, ...] = field(default_factory=tuple)
    # The declared version's change from the live one (when asked for, and it is not live).
    change: VersionChange | None = None

    @property
    def candidates(self) -> list[VersionRow]:
        return [v for v in self.versions if v.role == Role.CANDIDATE]

    def last_verdict(self) -> str | None:
        """The most recent comparison with the live version, and why it passed or failed."""
        compared = [v for v in self.versions if v.comparison]
        if not compared:
            return None
        row = max(compared, key=lambda v: str((v.comparison or {}).get("compared_at", "")))
        comparison = row.comparison or {}
        outcome = "passed" if comparison.get("passed") else "REFUSED"
        failures = "; ".join(str(f) for f in comparison.get("failures") or ())
        why = f": {failures}" if failures else ""
        at = str(comparison.get("compared_at", ""))[:19].replace("T", " ")
        return f"{row.version} vs live {self.live_version}, {at} UTC: {outcome}{why}"

    @property
    def declared_deployed(self) -> bool:
        return any(v.version == self.declared_version for v in self.versions)

    def markdown(self) -> str:
        rows = [
            "| version | role | running | behind live | caught up | started | last comparison |",
            "|---|---|---|---|---|---|---|",
        ]
        for v in self.versions:
            started = f"forward-only from {v.forward_only_from}" if v.forward_only_from else ""
            rows.append(
                f"| {v.version} | {v.role} | {'yes' if v.running else 'no'} | "
                f"{'' if v.behind_live is None else v.behind_live} | "
                f"{'' if v.caught_up_pct is None else f'{v.caught_up_pct:.1f}%'} | "
                f"{started} | {_comparison_text(v.comparison)} |"
            )
        if not self.declared_deployed:
            rows.append(f"| {self.declared_version} | declared, not deployed | no |  |  |  |  |")
        return "\n".join(rows)

    def change_markdown(self) -> str:
        """The declared version's change from the live one, as a list ("" when none is known)."""
        if self.change is None:
            return ""
        return "\n".join(f"- {line.strip().removeprefix('- ')}" for line in self.change.lines())

    def history_markdown(self, last: int = 10) -> str:
        rows = ["| at (UTC) | from | to | reason | comparison | by |", "|---|---|---|---|---|---|"]
        for s in self.history[-last:]:
            at = datetime.fromtimestamp(s.at, UTC).strftime("%Y-%m-%d %H:%M:%S")
            rows.append(
                f"| {at} | {s.from_version or '-'} | {s.to_version} | {s.reason} | "
                f"{_comparison_text(s.comparison)} | {s.actor} |"
            )
        return "\n".join(rows)


def _comparison_text(comparison: dict[str, Any] | None) -> str:
    if not comparison:
        return ""
    if comparison.get("passed"):
        return "passed" + (" (forced)" if comparison.get("forced") else "")
    failures = comparison.get("failures") or []
    return "FAILED: " + "; ".join(str(f) for f in failures)[:200].replace("|", "/")


def overview(
    settings: Settings, pipeline_name: str, change: VersionChange | None = None
) -> Overview:
    """The pipeline's versions now; ``change``: the declared version's change from the live
    one, when the caller has it (``streaming.versions.change``)."""
    pipeline = get_pipeline(settings.pipelines, pipeline_name)
    home = settings.home
    versions = pipeline_versions(settings, pipeline.name)
    live = versions.live
    live_at = last_end_offsets(Deployment(pipeline.name, live, home).table_path) if live else None
    rows = []
    for state in versions.deployed(home):
        version = state.version
        deployment = Deployment(pipeline.name, version, home)
        behind = pct = None
        if state.role != Role.LIVE and live_at is not None:
            at = last_end_offsets(deployment.table_path) or {}
            behind, done = progress(at, live_at)
            pct = round(done, 1)
        rows.append(
            VersionRow(
                version=version,
                role=str(state.role),
                running=deployment.lock.holder() is not None,
                behind_live=behind,
                caught_up_pct=pct,
                comparison=_last_comparison(settings, pipeline.name, live, version),
                forward_only_from=_forward_only_from(deployment),
            )
        )
    return Overview(
        pipeline.name, pipeline.version, live, tuple(rows), versions.switches, change=change
    )


def _forward_only_from(deployment: Deployment) -> str:
    start = read_start(deployment)
    if start is None:
        return ""
    return start.cut.describe() + ("" if start.complete else " (copy not complete)")


def _last_comparison(
    settings: Settings, pipeline: str, live: str | None, version: str
) -> dict[str, Any] | None:
    if live is None or live == version:
        return None
    old, new = (Deployment(pipeline, v, settings.home) for v in (live, version))
    path = old.comparison_with(new).result_path
    if not path.exists():
        return None
    from quality import load_result

    saved = load_result(path)
    return {
        "passed": saved.passed,
        "failures": list(saved.failures),
        "compared_at": saved.compared_at,
        "at": comparison_offsets(settings, pipeline, live, version).get("offsets"),
        "data_docs": saved.docs_page or "",
    }
