"""Replay a recorded session through the core and compare the decisions (S2).

A journal keeps inputs (caller, media, tool and timer events) apart from decisions.
Replaying feeds the inputs, at their recorded times, to a fresh core built from the
header (the ladder policy, or the flow document) and compares what it decides with
what was recorded: CLEAN, or DRIFT with the first differing record. Observations
(turn latency and other measurements) are neither, and are left out.

A session journal is read with :func:`read_session`: on top of the journal's own
rules, every input must hold a ladder event with fields of the right types, and every
decision must be a known effect, a trace record or an observation. A line that is
not is skipped and reported with its line number and field, like a corrupt line.

Replay goes step by step (an input and the decisions recorded after it). Damage is
placed among the steps: a skipped decision leaves its step unverified while replay
goes on (the core's state depends on inputs alone). A skipped input, a line that
cannot be read, or records missing may have taken an input with them: replay goes on
past them, since the records after still often make sense, and compares; where the
core then decides otherwise than the recording, that may be the lost input's doing,
so nothing from there is judged. An exact copy of the line before it loses nothing
and is only reported. The last step may be cut short (the process was killed between
writing an input and its decisions): when what was recorded is a prefix of what the
core decides, that step is reported as cut short, not as drift.

Verdicts: CLEAN (every record compared and the same), DRIFT (a difference with
nothing lost before it), INCOMPLETE (no difference seen, but part of the journal was
not compared: it says what was and was not). A journal cut short by a kill is CLEAN:
every record it holds was compared.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import ValidationError

import ladder.effects as ladder_effects
from ladder import EVENT_TYPES, Controller, LadderPolicy, event_from_dict
from ladder.effects import Effect, Trace
from ladder.flow.compile import KNOWN_LADDER_DEFAULTS
from ladder.flow.runtime import FlowRuntime
from ladder.policy import ABSENT_FROM_OLD_POLICIES
from ladder.states import ProtocolError

from .flowfiles import FlowFileError, check_data, load_flow
from .journal import Journal, JournalBytes, SeqGap, SkippedLine, document_hash, read_journal

OWN_FIELDS = ("seq", "t_ms", "wall", "type", "clock_behind_ms")
OBSERVATION = "Observation"  # a measurement journaled beside the decisions, not one of them


class ReplayError(ValueError):
    """A journal that cannot be replayed: one line saying why."""


# -- what a session journal's records must hold ------------------------------------------

EFFECT_TYPES: dict[str, type[Effect]] = {
    cls.__name__: cls
    for cls in vars(ladder_effects).values()
    if isinstance(cls, type) and issubclass(cls, Effect) and cls not in (Effect, Trace)
}


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 40 else text[:37] + "..."


def _expected(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(_shown(a) for a in typing.get_args(hint))
    if origin in (Union, types.UnionType):
        return " or ".join(_expected(a) for a in typing.get_args(hint))
    names = {
        type(None): "null", bool: "true or false", int: "an integer", float: "a number",
        str: "a string", dict: "an object", tuple: "a list", list: "a list",
    }
    return names.get(origin or hint, str(hint))


# JSON gives exact types, so `type(v) is` is both right and fast (bool is not an int here)
_SIMPLE_CHECKS: dict[Any, Callable[[Any], bool]] = {
    type(None): lambda v: v is None,
    bool: lambda v: v is True or v is False,
    int: lambda v: type(v) is int,
    float: lambda v: type(v) is int or type(v) is float,
    str: lambda v: type(v) is str,
    dict: lambda v: type(v) is dict,
}


@cache
def _checker(hint: Any) -> Callable[[Any], bool]:
    """A predicate for one field's type hint, built once per hint (records are many)."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        allowed = typing.get_args(hint)
        return lambda v: any(v == a and type(v) is type(a) for a in allowed)
    if origin in (Union, types.UnionType):
        parts = tuple(_checker(a) for a in typing.get_args(hint))
        return lambda v: any(part(v) for part in parts)
    if (origin or hint) in (tuple, list):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        item = _checker(args[0]) if len(args) == 1 else (lambda v: True)
        return lambda v: type(v) is list and all(item(x) for x in v)
    # a hint this check does not know: the core's own decoding decides
    return _SIMPLE_CHECKS.get(origin or hint, lambda v: True)


@cache
def _field_rules(cls: type) -> tuple[tuple[str, Any, Callable[[Any], bool], bool], ...]:
    """(name, type hint, its check, required) for each field of an event or effect dataclass."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (f.name, hints.get(f.name, Any), _checker(hints.get(f.name, Any)), f.default is MISSING and f.default_factory is MISSING)
        for f in fields(cls)
    )


# the inline test for a hint that JSON's exact types decide by `type(v) is`
_INLINE_CHECKS = {
    type(None): "v is None",
    bool: "(v is True or v is False)",
    int: "type(v) is int",
    float: "(type(v) is int or type(v) is float)",
    str: "type(v) is str",
    dict: "type(v) is dict",
}


def _inline_check(hint: Any) -> str | None:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        parts = [_inline_check(a) for a in typing.get_args(hint)]
        return None if None in parts else "(" + " or ".join(parts) + ")"  # type: ignore[arg-type]
    return _INLINE_CHECKS.get(hint) if origin is None else None


@cache
def _fields_fit(cls: type) -> Callable[[dict], bool]:
    """One function that says whether a record's fields all fit `cls` (extra fields
    allowed), the checks written inline: every record of a replay passes through here,
    and calling a check a field was a third of replaying a journal. Only when it says
    no does the field-by-field walk run, to name the field."""
    scope: dict[str, Any] = {"_ABSENT": object()}
    lines = ["def fits(data):", "    get = data.get"]
    for n, (name, hint, fits, required) in enumerate(_field_rules(cls)):
        test = _inline_check(hint)
        if test is None:
            scope[f"_check{n}"] = fits
            test = f"_check{n}(v)"
        lines.append(f"    v = get({name!r}, _ABSENT)")
        lines.append("    if v is _ABSENT:")
        lines.append("        return False" if required else "        pass")
        lines.append(f"    elif not {test}:")
        lines.append("        return False")
    lines.append("    return True")
    exec("\n".join(lines), scope)  # the dataclass module builds its __init__ the same way
    return scope["fits"]


def _fields_problem(data: dict, cls: type, where: str, strict: bool) -> str | None:
    if not strict and _fields_fit(cls)(data):
        return None
    rules = _field_rules(cls)
    for name, hint, fits, required in rules:
        if name not in data:
            if required:
                return f"field '{where}{name}' is missing"
        elif not fits(data[name]):
            return f"field '{where}{name}' is {_shown(data[name])}; expected {_expected(hint)}"
    if strict:
        known = {rule[0] for rule in rules} | {"kind"}
        extra = sorted(set(data) - known)
        if extra:
            return f"field '{where}{extra[0]}' is not a field of {data.get('kind')}"
    return None


def _input_problem(record: dict) -> str | None:
    if "event" not in record:
        return "field 'event' is missing; an input holds the ladder event it fed"
    event = record["event"]
    if not isinstance(event, dict):
        return f"field 'event' is {_shown(event)}; expected an object (a ladder event)"
    kind = event.get("kind")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return "field 'event.kind' is missing" if kind is None else f"field 'event.kind' is {_shown(kind)}; not a ladder event kind"
    if record.get("kind") != kind:
        return f"field 'kind' is {_shown(record.get('kind'))} but field 'event.kind' is {_shown(kind)}"
    problem = _fields_problem(event, cls, "event.", strict=True)
    if problem:
        return problem
    try:
        event_from_dict(event)  # the core's own decoding has the last word
    except (ValueError, TypeError) as exc:
        return f"field 'event': {str(exc).splitlines()[0]}"
    return None


def _decision_problem(record: dict) -> str | None:
    effect = record.get("effect")
    if effect is None:  # a trace record
        return _fields_problem(record, Trace, "", strict=False)
    if effect == OBSERVATION:
        kind = record.get("kind")
        return None if isinstance(kind, str) else f"field 'kind' is {_shown(kind)}; expected a string"
    cls = EFFECT_TYPES.get(effect) if isinstance(effect, str) else None
    if cls is None:
        return f"field 'effect' is {_shown(effect)}; not a ladder effect or an observation"
    return _fields_problem(record, cls, "", strict=False)


def session_record_problem(record: dict) -> str | None:
    """Why a record cannot be part of a session (naming the field), or None."""
    return _input_problem(record) if record["type"] == "input" else _decision_problem(record)


def read_session(path: Path) -> Journal:
    """A session journal, with records that do not fit a session skipped and reported."""
    return read_journal(path, check=session_record_problem)


def is_observation(record: dict) -> bool:
    return record.get("effect") == OBSERVATION


# -- steps ---------------------------------------------------------------------------------


@dataclass
class Step:
    """One input and the decisions recorded after it (observations left out)."""

    input: dict | None  # None: decisions recorded before the first input
    decisions: list[dict] = field(default_factory=list)
    damaged: SkippedLine | SeqGap | None = None  # a decision line of this step was lost
    # replay going on past damage: this step holds what follows damage that may have been
    # an input (its decisions, if it was one)
    lost_before: SkippedLine | SeqGap | None = None

    @property
    def seq(self) -> int | None:
        return self.input["seq"] if self.input else (self.decisions[0]["seq"] if self.decisions else None)

    @property
    def t_ms(self) -> float:
        return self.input["t_ms"] if self.input else (self.decisions[0]["t_ms"] if self.decisions else 0.0)


@dataclass
class Steps:
    steps: list[Step]
    stopped: str | None  # why the steps end before the journal's records do
    unused: int  # records after the stop, not used
    # the last step may be cut short: the journal ends, or stops at a line of unknown
    # kind, right after it (only a skipped input proves the step before it was whole)
    last_may_be_cut: bool = True


def _damage_text(damage: SkippedLine | SeqGap) -> str:
    if isinstance(damage, SkippedLine):
        what = f"a skipped {damage.record_type}" if damage.record_type else "a skipped line"
        return f"{what} at line {damage.line_no} ({damage.reason})"
    return f"{damage.missing} missing record{'' if damage.missing == 1 else 's'} before line {damage.line_no}"


def session_steps(journal: Journal, go_on: bool = False) -> Steps:
    """The journal's records grouped into steps, up to the first damage that breaks the
    chain; with `go_on`, past it, the steps after marked `lost_before`."""
    damage: dict[int, list[SkippedLine | SeqGap]] = {}
    records = journal.records
    for skip in journal.skipped:
        if skip.harmless:
            continue  # a copy of the line before: nothing lost
        if go_on and skip.reason == "truncated final line" and skip.position == len(records):
            continue  # the tail of a killed write: the cut-short step below says it
        damage.setdefault(skip.position, []).append(skip)
    for gap in journal.gaps:
        damage.setdefault(gap.position, []).append(gap)
    steps: list[Step] = []
    for index in range(len(records) + 1):
        here = damage.get(index, ())
        skipped_here = sum(isinstance(d, SkippedLine) for d in here)
        for item in here:
            if isinstance(item, SkippedLine) and item.record_type == "decision":
                if steps and steps[-1].damaged is None:
                    steps[-1].damaged = item
                continue
            if isinstance(item, SeqGap) and item.missing <= skipped_here:
                continue  # the lines skipped just before account for the missing seqs
            whole = isinstance(item, SkippedLine) and item.record_type == "input"
            if not go_on:
                return Steps(steps, _damage_text(item), len(records) - index, last_may_be_cut=not whole)
            if not whole and steps and steps[-1].damaged is None:
                steps[-1].damaged = item  # what was lost may have been one of its decisions
            # the decisions that follow may be the lost input's: kept apart, not compared
            steps.append(Step(None, damaged=item, lost_before=item))
        if index == len(records):
            break
        record = records[index]
        if record["type"] == "input":
            steps.append(Step(record))
        elif not is_observation(record):
            if not steps:
                steps.append(Step(None))
            steps[-1].decisions.append(record)
    return Steps(steps, None, 0)


# -- the core --------------------------------------------------------------------------


_compiled: dict[tuple[str, int], Any] = {}  # (document hash, ladder defaults) -> CompiledFlow


def build_core(journal: Journal, flow_override=None):
    """A fresh core for this journal: its ladder policy, or its flow (or another one)."""
    header = journal.header
    if flow_override is not None:
        return FlowRuntime(flow_override)
    if header.get("source") in ("incident", "pipecat", "livekit") and header.get("flow_document") is None:
        # the ladder alone: an incident, or a Pipecat or LiveKit call in ladder mode
        if not isinstance(header.get("ladder_policy"), dict):
            raise ReplayError(f"{journal.path} line 1: an {header['source']} session's header needs field 'ladder_policy' (an object)"
                              if header["source"] == "incident" else
                              f"{journal.path} line 1: a {header['source']} session's header needs field 'ladder_policy' (an object)")
        try:
            # a policy recorded before a field existed did what its old behaviour does
            return Controller(LadderPolicy.model_validate({**ABSENT_FROM_OLD_POLICIES, **header["ladder_policy"]}))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise ReplayError(f"{journal.path} line 1: field 'ladder_policy.{where}': {error['msg']}") from None
    document = header.get("flow_document")
    if document is not None:
        # a journal from before `ladder_defaults` was written took the first defaults
        defaults = header.get("ladder_defaults", 1)
        if defaults not in KNOWN_LADDER_DEFAULTS:
            raise ReplayError(
                f"{journal.path} line 1: field 'ladder_defaults': {defaults!r} is not one this Lull knows "
                f"({', '.join(map(str, KNOWN_LADDER_DEFAULTS))})"
            )
        # compiled once per flow and process: a corpus of one flow compiles it once
        key = (document_hash(document), defaults)
        flow = _compiled.get(key)
        if flow is None:
            report = check_data(document, f"{journal.path}: header flow_document", ladder_defaults=defaults)
            if report.flow is None:
                raise ReplayError(report.errors[0].line())
            flow = _compiled[key] = report.flow
        return FlowRuntime(flow)
    name = header.get("flow")
    if not name or not isinstance(name, str):
        raise ReplayError(f"{journal.path}: the header names no flow and holds no flow document")
    try:
        return FlowRuntime(load_flow(name))
    except FlowFileError as exc:
        raise ReplayError(f"{journal.path} line 1: field 'flow': {exc}") from None


def feed(core, record: dict, path: Path) -> list[Effect]:
    """One recorded input through the core; a refusal is one line naming the record."""
    try:
        return core.handle(event_from_dict(record["event"]), record["t_ms"])
    except (ProtocolError, ValueError, TypeError) as exc:
        raise ReplayError(
            f"{path}: seq {record['seq']} ({record['kind']} at {record['t_ms']} ms): "
            f"the core refused this input: {str(exc).splitlines()[0]}"
        ) from None


# -- replay --------------------------------------------------------------------------------


@dataclass
class Replay:
    path: Path
    verdict: str  # CLEAN, DRIFT or INCOMPLETE
    inputs: int
    decisions: int
    first_difference: dict | None  # {"seq", "t_ms", "expected", "got", "step_seq"}
    report: str  # what the journal reader skipped, if anything
    incomplete: str | None = None  # the last step was cut short: what was not compared
    stopped: str | None = None  # replay stopped before the journal's end: where and why
    unverified: list[str] = field(default_factory=list)  # steps not compared (a decision was lost)
    lost_inputs: list[str] = field(default_factory=list)  # damage that may have taken an input
    not_judged: str | None = None  # after such damage the core decided otherwise: from where

    def describe(self) -> str:
        if self.verdict == "CLEAN":
            text = f"{self.path}: CLEAN ({self.inputs} inputs, {self.decisions} decisions replayed identically)"
        elif self.verdict == "INCOMPLETE":
            gone = [t for t in self.lost_inputs if t not in " ".join(self.unverified)]
            text = (f"{self.path}: INCOMPLETE: {self.inputs} inputs and {self.decisions} decisions compared and "
                    f"the same, but not all of the journal; not compared: " + "; ".join(self.unverified + gone or ["-"]))
            notes = [n for n in (self.not_judged, self.stopped, self.incomplete) if n]
            return text + "".join(f"; {n}" for n in notes)
        else:
            d = self.first_difference or {}
            got = json.dumps(d.get("got"), sort_keys=True)[:200]
            if d.get("expected") is None:
                text = (
                    f"{self.path}: DRIFT in the step at journal seq {d.get('step_seq')} ({d.get('t_ms')} ms): "
                    f"the recording has no more decisions there, but the core now also decides {got}"
                )
            else:
                text = (
                    f"{self.path}: DRIFT at journal seq {d.get('seq')} ({d.get('t_ms')} ms): "
                    f"recorded {json.dumps(d.get('expected'), sort_keys=True)[:200]} "
                    f"but the core now decides {got}"
                )
        notes = [n for n in (self.not_judged, self.stopped, self.incomplete) if n]
        if self.unverified:
            more = f" and {len(self.unverified) - 3} more" if len(self.unverified) > 3 else ""
            notes.append(f"{len(self.unverified)} step(s) not compared: " + "; ".join(self.unverified[:3]) + more)
        return text + "".join(f"; {n}" for n in notes)


def replay(path: Path, flow_override=None) -> Replay:
    journal = read_session(path)
    core = build_core(journal, flow_override)
    redact = getattr(core, "redact", lambda r: r)
    grouped = session_steps(journal, go_on=True)
    inputs = decisions = 0
    first: dict | None = None
    incomplete: str | None = None
    unverified: list[str] = []
    lost_inputs: list[str] = []
    not_judged: str | None = None
    uncertain: SkippedLine | SeqGap | None = None  # damage before here that may have been an input

    for index, step in enumerate(grouped.steps):
        if step.lost_before is not None:
            lost_inputs.append(_damage_text(step.lost_before))
            uncertain = uncertain or step.lost_before
        produced: list[dict] = []
        if step.input is not None:
            inputs += 1
            # redacted only where it differs from the record: a record equal to what the core
            # produced held nothing to redact (the writer redacted with this same state)
            produced = [e.to_dict() for e in feed(core, step.input, journal.path)]
        if step.lost_before is not None:
            if step.decisions:
                unverified.append(f"the {len(step.decisions)} decision(s) after {_damage_text(step.damaged)}, "
                                  "which may be its own")
            elif not any(_damage_text(step.damaged) in u for u in unverified):
                unverified.append(_damage_text(step.damaged))
            continue
        if step.damaged is not None:
            unverified.append(f"the step at seq {step.seq} lost {_damage_text(step.damaged)}")
            continue
        recorded = [_clean(r) for r in step.decisions]
        differs: dict | None = None
        same = 0
        for record, expected, got in zip(step.decisions, recorded, produced, strict=False):
            if expected != got:
                got = redact(got)
                if expected != got:
                    differs = {"seq": record["seq"], "t_ms": record["t_ms"], "expected": expected, "got": got, "step_seq": step.seq}
                    break
            same += 1
        last = index == len(grouped.steps) - 1
        if differs is None and len(recorded) < len(produced) and last and grouped.last_may_be_cut:
            # killed between writing the input and (all of) its decisions: not drift
            incomplete = (
                f"the journal ends inside the step at seq {step.seq} "
                f"({step.input['kind'] if step.input else 'decisions'} at {step.t_ms} ms): "
                f"{len(recorded)} of its {len(produced)} decisions recorded, the rest not compared"
            )
        elif differs is None and len(recorded) != len(produced):
            extra = step.decisions[len(produced)] if len(recorded) > len(produced) else None
            differs = {
                "seq": extra["seq"] if extra else None,
                "t_ms": extra["t_ms"] if extra else step.t_ms,
                "expected": recorded[len(produced)] if extra else None,
                "got": redact(produced[len(recorded)]) if len(produced) > len(recorded) else None,
                "step_seq": step.seq,
            }
        if differs is not None and first is None and uncertain is not None:
            # the core missed what was lost, perhaps an input: no verdict from here on
            decisions += same
            rest = sum(1 + len(s.decisions) for s in grouped.steps[index:]) - same
            not_judged = (
                f"from the step at seq {step.seq} ({step.t_ms} ms) on the core decides otherwise than the "
                f"recording, after {_damage_text(uncertain)}, which may have been an input: the {rest} "
                "record(s) from there are not judged"
            )
            break
        decisions += min(len(recorded), len(produced)) if differs is None else same
        if first is None and differs is not None:
            first = differs
    stopped = None
    if grouped.stopped and grouped.unused:  # at the very end, the reader's report says it
        stopped = f"replay stopped at {grouped.stopped}: the {grouped.unused} record(s) after it were not replayed"
    if first is not None:
        verdict = "DRIFT"
    elif unverified or lost_inputs or not_judged or stopped:
        verdict = "INCOMPLETE"
    else:
        verdict = "CLEAN"
    return Replay(
        path if isinstance(path, JournalBytes) else Path(path),
        verdict,
        inputs,
        decisions,
        first,
        journal.report(),
        incomplete,
        stopped,
        unverified,
        lost_inputs,
        not_judged,
    )


def _clean(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in OWN_FIELDS}
