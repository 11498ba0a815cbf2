"""What differs between two versions of a pipeline, each difference sorted by how much of the
table's history it reaches.

- ``inputs``: what is read and which records count: the topics, their key, value schema, event
  time, tombstones and required fields, and the grace period. Every row may change.
- ``state``: the stateful operator and what it keeps: its kind and configuration, and for a
  ``@stateful`` function its code (``streaming.define.syntax.function_code``) and declared
  state, emitted rows and keys. The state built so far would be another one.
- ``output``: only what runs after the operator, row by row: derived columns, the filter, the
  selected columns, the output topic. The state stays what it is.
- ``none``: nothing the table depends on (a description, quality rules, promotion policy, or
  code the pipeline does not run).

Anything the platform cannot place counts as the more severe kind: a pipeline's ``settings``
(the platform does not read them, so it cannot tell what they shape) count as ``state``, and so
does any change of a deprecated per-batch transform. A plan over another plan's table
(``group_by`` on a plan) regroups that plan's rows, so a change of the first plan's own row-wise
steps is a change of the state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from streaming.define.chaining import Chained
from streaming.define.pipeline import Pipeline
from streaming.define.plan import Plan
from streaming.define.stateful import Stateful
from streaming.define.syntax import function_code
from streaming.define.topic import Topic
from streaming.operators import Operator, Source
from streaming.operators.keyed_process import KeyedProcess


class Category(StrEnum):
    """How much of the table's history a change reaches, the most severe first."""

    INPUTS = "inputs"
    STATE = "state"
    OUTPUT = "output"
    NONE = "none"

    @property
    def severity(self) -> int:
        """0 for the most severe (``inputs``), 3 for ``none``."""
        return list(Category).index(self)


class Difference(BaseModel):
    """One difference between two versions, in one line."""

    model_config = ConfigDict(frozen=True)

    category: Category
    reason: str


def differences(old: Pipeline, new: Pipeline) -> list[Difference]:
    """Every difference of ``new`` from ``old``, the most severe first."""
    found: list[Difference] = []
    if old.plan is not None and new.plan is not None:
        found += _input_differences(old.plan, new.plan)
        found += _operator_differences(old.plan.operator, new.plan.operator, "")
        found += _row_differences(old.plan, new.plan, Category.OUTPUT, "")
        if old.publish != new.publish:
            found.append(_output(f"the output topic {old.publish} -> {new.publish}"))
        if old.stream_output != new.stream_output:
            old_topics, new_topics = ", ".join(old.output_topics), ", ".join(new.output_topics)
            found.append(_output(f"the stream output to {old_topics} -> {new_topics}"))
        if old.table_schema != new.table_schema:
            found.append(_output(f"the table's columns {_columns(old)} -> {_columns(new)}"))
    else:
        found += _transform_differences(old, new)
    if old.settings != new.settings:
        found.append(
            Difference(
                category=Category.STATE,
                reason=f"settings {old.settings} -> {new.settings} (the platform cannot tell "
                "what they shape)",
            )
        )
    found += _declaration_differences(old, new)
    return sorted(found, key=lambda d: d.category.severity)


def _output(reason: str) -> Difference:
    return Difference(category=Category.OUTPUT, reason=reason)


def _columns(pipeline: Pipeline) -> str:
    return "(" + ", ".join(f"{f.name} {f.type}" for f in pipeline.table_schema) + ")"


# -- inputs ---------------------------------------------------------------------------------


def _input_differences(old: Plan, new: Plan) -> list[Difference]:
    found = []
    before = {t.name: t for t in old.inputs}
    after = {t.name: t for t in new.inputs}
    found += [_inputs(f"reads topic {n} now") for n in after if n not in before]
    found += [_inputs(f"no longer reads topic {n}") for n in before if n not in after]
    for name in (n for n in after if n in before):
        found += [
            _inputs(f"topic {name}: {r}") for r in _topic_differences(before[name], after[name])
        ]
    old_grace, new_grace = _grace(old.operator), _grace(new.operator)
    if old_grace != new_grace:
        found.append(_inputs(f"grace {_period(old_grace)} -> {_period(new_grace)}"))
    return found


def _inputs(reason: str) -> Difference:
    return Difference(category=Category.INPUTS, reason=reason)


def _topic_differences(old: Topic, new: Topic) -> list[str]:
    found = []
    if old.key != new.key:
        found.append(f"key {old.key} -> {new.key}")
    if old.fields != new.fields:
        found.append(f"value schema {old.value_schema!r} -> {new.value_schema!r}")
    if old.time != new.time:
        found.append(
            f"event time {old.time or 'record timestamp'} -> {new.time or 'record timestamp'}"
        )
    if old.tombstones != new.tombstones:
        found.append(f"tombstones {old.tombstones!r} -> {new.tombstones!r}")
    if set(old.required) != set(new.required):
        found.append(f"required fields {sorted(old.required)} -> {sorted(new.required)}")
    return found


def _grace(operator: Operator) -> int | None:
    """The grace period of an operator's inputs in ms (None: it does not depend on time)."""
    if isinstance(operator, Chained):
        return _grace(operator.first.operator)
    value = getattr(operator, "grace_ms", None)
    return None if value is None else int(value)


def _period(ms: int | None) -> str:
    return "none (time plays no part)" if ms is None else str(timedelta(milliseconds=ms))


# -- state ----------------------------------------------------------------------------------

_NOT_STATE = frozenset({"grace_ms"})  # the grace is the inputs' (see _input_differences)


def _operator_differences(old: Operator, new: Operator, where: str) -> list[Difference]:
    if type(old) is not type(new):
        return [_state(f"{where}the operator {_kind(old)} -> {_kind(new)}")]
    if isinstance(old, Chained) and isinstance(new, Chained):
        inner = f"{where}the plan it regroups: "
        found = _operator_differences(old.first.operator, new.first.operator, inner)
        found += _row_differences(old.first, new.first, Category.STATE, inner)
        return found + _field_differences(old.then, new.then, f"{where}the regrouping")
    if isinstance(old, KeyedProcess) and isinstance(new, KeyedProcess):
        # The function's own key columns (``by``) are compared with the function.
        found = _field_differences(old, new, f"{where}{_kind(old)}", skip={"function", "by"})
        return found + _function_differences(old.function, new.function, where)
    return _field_differences(old, new, f"{where}{_kind(old)}")


def _state(reason: str) -> Difference:
    return Difference(category=Category.STATE, reason=reason)


def _kind(operator: object) -> str:
    return type(operator).__name__


def _field_differences(
    old: object, new: object, what: str, skip: frozenset[str] | set[str] = frozenset()
) -> list[Difference]:
    if not dataclasses.is_dataclass(old) or not dataclasses.is_dataclass(new):
        same = repr(old) == repr(new)
        return [] if same else [_state(f"{what}: {_short(old)} -> {_short(new)}")]
    found = []
    for field in dataclasses.fields(old):
        if field.name in _NOT_STATE or field.name in skip:
            continue
        before, after = getattr(old, field.name), getattr(new, field.name)
        if _shown(before) != _shown(after):
            found.append(_state(f"{what}: {field.name} {_shown(before)} -> {_shown(after)}"))
    return found


def _shown(value: Any) -> str:
    """A field's value as compared and shown: a source by its name (its event time and
    tombstones are its topic's, compared as inputs)."""
    if isinstance(value, Source):
        return value.name
    if isinstance(value, tuple) and value and all(isinstance(v, Source) for v in value):
        return repr(tuple(v.name for v in value))
    return _short(value)


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _function_differences(old: Any, new: Any, where: str) -> list[Difference]:
    if not isinstance(old, Stateful) or not isinstance(new, Stateful):
        same = repr(old) == repr(new)
        return [] if same else [_state(f"{where}the function {_short(old)} -> {_short(new)}")]
    what = f"{where}the stateful function {getattr(new.function, '__qualname__', new.name)}"
    found = []
    found += [_state(f"{what}: declared state {r}") for r in _state_specs(old.state, new.state)]
    if old.output != new.output:
        found.append(_state(f"{what}: emits {old.emits!r} -> {new.emits!r}"))
    for name in ("by", "key"):
        if getattr(old, name) != getattr(new, name):
            found.append(_state(f"{what}: {name} {getattr(old, name)} -> {getattr(new, name)}"))
    if function_code(old.function) != function_code(new.function):
        found.append(_state(f"{what}: its code (or what it calls or reads) changed"))
    old_timer = None if old.timer is None else function_code(old.timer)
    new_timer = None if new.timer is None else function_code(new.timer)
    if old_timer != new_timer:
        found.append(_state(f"{what}: its timer function changed"))
    return found


def _state_specs(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two declarations of state, by name."""
    found = [f"adds {n}: {_spec(new[n])}" for n in new if n not in old]
    found += [f"removes {n}: {_spec(old[n])}" for n in old if n not in new]
    found += [
        f"{n}: {_spec(old[n])} -> {_spec(new[n])}" for n in new if n in old and old[n] != new[n]
    ]
    return found


def _spec(spec: Any) -> str:
    """``MapOf(str, int)``, ``Value(int, default=0)``: the declaration as written."""
    if not dataclasses.is_dataclass(spec):
        return repr(spec)
    parts = []
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        if isinstance(value, type):
            parts.append(value.__name__)
        elif value != field.default:
            parts.append(f"{field.name}={value!r}")
    return f"{type(spec).__name__}({', '.join(parts)})"


# -- output ---------------------------------------------------------------------------------


def _row_differences(old: Plan, new: Plan, category: Category, where: str) -> list[Difference]:
    """The row-wise steps after the operator: columns, filter, selection."""
    found = []
    before = {name: str(e) for name, e in old.derived}
    after = {name: str(e) for name, e in new.derived}
    for name in after.keys() - before.keys():
        found.append(f"{where}adds column {name} = {after[name]}")
    for name in before.keys() - after.keys():
        found.append(f"{where}no longer computes column {name}")
    for name in (n for n in after if n in before and before[n] != after[n]):
        found.append(f"{where}column {name} = {before[name]} -> {after[name]}")
    if [n for n, _ in old.derived] != [n for n, _ in new.derived] and not found:
        found.append(f"{where}computes its columns in another order")
    if str(old.condition) != str(new.condition):
        found.append(f"{where}the filter {old.condition} -> {new.condition}")
    if old.selected != new.selected:
        found.append(f"{where}the selected columns {old.selected} -> {new.selected}")
    return [Difference(category=category, reason=reason) for reason in sorted(found)]


# -- the rest -------------------------------------------------------------------------------


def _transform_differences(old: Pipeline, new: Pipeline) -> list[Difference]:
    """A deprecated per-batch transform keeps its table as its state: any change of it counts
    as one of the state."""
    if (old.plan is None) != (new.plan is None):
        form = "a plan" if new.plan is not None else "a per-batch transform"
        return [_state(f"declared as {form} now")]
    found = []
    if old.topics != new.topics:
        found.append(_inputs(f"topics {list(old.topics)} -> {list(new.topics)}"))
    decoding = ("value_schema", "required", "accepts_tombstones")
    for name in (n for n in decoding if getattr(old, n) != getattr(new, n)):
        found.append(_inputs(f"{name} {getattr(old, name)!r} -> {getattr(new, name)!r}"))
    old_code = "" if old.transform is None else function_code(old.transform)
    new_code = "" if new.transform is None else function_code(new.transform)
    if old_code != new_code:
        found.append(_state("the per-batch transform's code (or what it calls or reads) changed"))
    if repr(old.table) != repr(new.table) or old.table_schema != new.table_schema:
        found.append(_state(f"the table {old.table!r} -> {new.table!r}, {_columns(new)}"))
    return found


def _declaration_differences(old: Pipeline, new: Pipeline) -> list[Difference]:
    """What is declared beside the table and changes none of its rows."""
    found = []
    for name in ("description", "promotion"):
        if getattr(old, name) != getattr(new, name):
            found.append(f"{name} {getattr(old, name)!r} -> {getattr(new, name)!r}")
    if repr(old.quality_spec) != repr(new.quality_spec):
        found.append("the quality rules changed (they check the table, not its rows)")
    if repr(old.comparison) != repr(new.comparison):
        found.append("the comparison policy changed")
    return [Difference(category=Category.NONE, reason=reason) for reason in found]
