"""Scenario files: a flow played through with typed caller turns, on a virtual clock.

The model-free simulator (G7). A scenario names a flow, then lists steps: the caller
says something, stays silent, barges in, a tool answers slowly or fails, a fact is
set, any core event; and `expect` steps that check the flow's state at that moment.
Caller steps and `expect` steps wait for the agent to finish what it is saying (and
for running tools), as a caller would, unless a caller step says `barge_in`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ladder import CallerUtterance, StartCall, TurnEnded, TurnStarted, event_from_dict
from ladder.events import SetFact
from ladder.flow.compile import LADDER_DEFAULTS, CompiledFlow
from ladder.flow.runtime import FlowRuntime
from ladder.flow.understanding.shared_intents import flow_intents
from ladder.flow.understanding.text import LexicalMatcher

from .flowfiles import FlowFileError, load_flow
from .journal import document_hash
from .virtual import Playback, ToolPlan, VirtualCall, matches

SCENARIO_SCHEMA = 1


class ScenarioError(ValueError):
    """A malformed scenario or flow file: one line naming the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolOverride(_Strict):
    latency_ms: float | None = Field(default=None, ge=0)
    outcome: Literal["ok", "failed", "unknown"] | None = None
    result: dict | None = None


class Expect(_Strict):
    slots: dict[str, Any] = {}  # slot -> value (None: not filled)
    active_stage: str | None = None
    stages_complete: tuple[str, ...] = ()
    played: str | None = None  # a prompt containing this text played in full
    not_played: str | None = None
    terminated: bool | None = None
    ended: bool | None = None
    ladder_state: str | None = None
    outcome: str | None = None  # the session outcome once closed
    driving: str | None = None  # "main" or the driving digression
    denied: str | None = None  # a tool that was denied at least once
    calls: dict[str, int] = {}  # tool -> how many times it actually ran
    prompts: dict[str, int] = {}  # prompt kind, or "reminder:<stage>" -> times requested
    timing: dict[str, Any] | None = None
    journal_contains: tuple[dict, ...] = ()
    journal_lacks: tuple[dict, ...] = ()
    text_absent: tuple[str, ...] = ()  # strings that appear nowhere in the journal


class ScenarioStep(_Strict):
    say: str | None = None
    barge_in: bool = False
    silence_ms: float | None = Field(default=None, gt=0)
    interrupt: bool = False
    tool: dict[str, ToolOverride] | None = None
    set: dict[str, Any] | None = None
    event: dict | None = None
    expect: Expect | None = None
    note: str = ""

    @model_validator(mode="after")
    def _one_action(self) -> ScenarioStep:
        chosen = [
            n
            for n in ("say", "silence_ms", "tool", "set", "event", "expect")
            if getattr(self, n) is not None
        ] + (["interrupt"] if self.interrupt else [])
        if len(chosen) != 1:
            raise ValueError(
                "a step has exactly one of: say, silence_ms, interrupt, tool, set, event, expect"
            )
        return self


class Scenario(_Strict):
    schema_: int = Field(default=SCENARIO_SCHEMA, alias="schema")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    title: str
    flow: str | dict  # a library flow name, a path (relative to the scenario), or inline
    playback: Playback = Playback()
    tools: dict[str, ToolOverride] = {}
    caller_ms_per_word: float = Field(default=350, gt=0)
    steps: tuple[ScenarioStep, ...] = Field(min_length=1)


# --- loading ---------------------------------------------------------------------


def _field_path(loc: tuple) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def _read_json(path: Path, error: type[ValueError]) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise error(f"{path}: invalid JSON: nested too deep") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python reads
        raise error(f"{path}: invalid JSON: {exc}") from None


def load_scenario(path: Path) -> Scenario:
    data = _read_json(path, ScenarioError)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ScenarioError(f"{path}: field {_field_path(err['loc'])}: {err['msg']}") from None
    if scenario.schema_ != SCENARIO_SCHEMA:
        raise ScenarioError(f"{path}: field schema: version {scenario.schema_} is not supported; expected {SCENARIO_SCHEMA}")
    for i, step in enumerate(scenario.steps):
        if step.event is not None:
            try:
                event_from_dict(step.event)
            except ValueError as exc:
                raise ScenarioError(f"{path}: field steps[{i}].event: {exc}") from None
    return scenario


# --- running ---------------------------------------------------------------------


@dataclass
class ScenarioOutcome:
    scenario: Scenario
    passed: bool
    failures: list[str]
    runtime: FlowRuntime
    call: VirtualCall

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def to_dict(self) -> dict:
        snap = self.runtime.ladder.snapshot()
        return {
            "scenario": self.scenario.name,
            "title": self.scenario.title,
            "verdict": self.verdict,
            "failures": self.failures,
            "final_state": snap["state"],
            "outcome": snap["outcome"],
            "flow_ended": self.runtime.ended,
        }


class Simulation:
    """A scenario's flow, runtime and virtual call, stepped by the scenario's steps."""

    def __init__(self, scenario: Scenario, flow: CompiledFlow) -> None:
        self.scenario = scenario
        self.flow = flow
        self.runtime = FlowRuntime(flow)
        plans = {
            t.name: ToolPlan(t.latency_ms, t.outcome, dict(t.result), t.timeout_ms)
            for t in flow.spec.tools
        }
        self.call = VirtualCall(self.runtime, scenario.playback, plans)
        self._apply_tool_overrides(scenario.tools)
        self.matcher = LexicalMatcher(flow_intents(flow.spec).own_only(), flow.spec.intent_threshold)
        self.failures: list[str] = []
        self._turns = 0

    def _apply_tool_overrides(self, overrides: dict[str, ToolOverride]) -> None:
        for name, override in overrides.items():
            plan = self.call.tools.get(name, ToolPlan(0, "ok", {}))
            self.call.tools[name] = ToolPlan(
                plan.latency_ms if override.latency_ms is None else override.latency_ms,
                plan.outcome if override.outcome is None else override.outcome,
                plan.result if override.result is None else override.result,
                plan.timeout_ms,
            )

    def settle(self) -> None:
        """Let the agent finish speaking and its tools answer (timers fire on the way)."""
        for _ in range(10_000):
            if not (self.call.in_flight or self.call.tools_running) or self.call.next_item_at() is None:
                return
            self.call.step(float("inf"))

    def run(self) -> ScenarioOutcome:
        self.call.feed(StartCall())
        for index, step in enumerate(self.scenario.steps):
            self.apply(index, step)
        self.settle()
        return ScenarioOutcome(self.scenario, not self.failures, self.failures, self.runtime, self.call)

    def apply(self, index: int, step: ScenarioStep) -> None:
        if step.say is not None or step.interrupt:
            if not step.barge_in and not step.interrupt:
                self.settle()
            self._caller_turn(step.say or "")
        elif step.silence_ms is not None:
            self.call.run_until(self.call.now + step.silence_ms)
        elif step.tool is not None:
            self._apply_tool_overrides(step.tool)
        elif step.set is not None:
            self.settle()
            for key, value in step.set.items():
                self.call.feed(SetFact(key, value))
        elif step.event is not None:
            self.call.feed(event_from_dict(step.event))
        elif step.expect is not None:
            self.settle()  # judge once the agent has finished what it was saying
            self.failures += [f"step {index}: {f}" for f in self.check(step.expect)]

    def _caller_turn(self, text: str) -> None:
        self._turns += 1
        turn, seq = f"caller-{self._turns}", self._turns
        start = self.call.now
        duration = max(1, len(text.split())) * self.scenario.caller_ms_per_word
        intent, score = self.matcher.match(text) if text else (None, 0.0)
        self.call.push(start, TurnStarted(turn, seq))
        self.call.push(start + duration, TurnEnded(turn, seq))
        self.call.push(start + duration + 1, CallerUtterance(turn, seq, text, intent, score))
        self.call.run_until(start + duration + 1)

    # -- expectations -------------------------------------------------------------------

    def journal(self) -> list[dict]:
        """What a written journal would hold: every input and decision, redacted (G6)."""
        return [self.runtime.redact(payload) for _, _, payload in self.call.log]

    def played_texts(self) -> list[str]:
        ladder = self.runtime.ladder
        texts = []
        for record in self.call.records:
            if record.get("effect") == "RequestPrompt":
                prompt = ladder.prompts.get(record["token"])
                if prompt is not None and prompt.status.value == "completed":
                    texts.append(record["text"])
        return texts

    def check(self, exp: Expect) -> list[str]:
        rt = self.runtime
        out: list[str] = []
        for slot, value in exp.slots.items():
            if rt.state.get(slot) != value:
                out.append(f"expected slot {slot}={value!r}, got {rt.state.get(slot)!r}")
        active = rt.active_stages() if not rt.ended else []
        if exp.active_stage is not None and exp.active_stage not in active:
            out.append(f"expected stage {exp.active_stage} active, active: {active}")
        for stage in exp.stages_complete:
            layer_done = {s for done in rt.done.values() for s, how in done.items()}
            if stage not in layer_done:
                out.append(f"expected stage {stage} complete")
        played = self.played_texts()
        if exp.played is not None and not any(exp.played in t for t in played):
            out.append(f"expected a prompt containing {exp.played!r} to have played; played: {played}")
        if exp.not_played is not None and any(exp.not_played in t for t in played):
            out.append(f"expected no prompt containing {exp.not_played!r} to have played")
        if exp.terminated is not None and (rt.terminated_by is not None) != exp.terminated:
            out.append(f"expected terminated={exp.terminated}, got terminated_by={rt.terminated_by}")
        if exp.ended is not None and rt.ended != exp.ended:
            out.append(f"expected ended={exp.ended}, got {rt.ended}")
        if exp.ladder_state is not None and rt.ladder.state.value != exp.ladder_state:
            out.append(f"expected ladder state {exp.ladder_state}, got {rt.ladder.state.value}")
        if exp.outcome is not None and rt.ladder.outcome != exp.outcome:
            out.append(f"expected outcome {exp.outcome}, got {rt.ladder.outcome}")
        if exp.driving is not None and rt.driving != exp.driving:
            out.append(f"expected {exp.driving} driving, got {rt.driving}")
        if exp.denied is not None and not any(
            r.get("effect") == "ToolDenied" and r.get("tool") == exp.denied for r in self.call.records
        ):
            out.append(f"expected tool {exp.denied} to be denied")
        for tool, count in exp.calls.items():
            ran = sum(1 for r in self.call.records if r.get("effect") == "CallTool" and r.get("tool") == tool)
            if ran != count:
                out.append(f"expected {tool} to run {count} time(s), ran {ran}")
        for label, count in exp.prompts.items():
            asked = sum(
                1
                for r in self.call.records
                if r.get("effect") == "RequestPrompt"
                and label in (r["kind"], f"{r['kind']}:{r.get('stage')}")
            )
            if asked != count:
                out.append(f"expected {count} {label} prompt(s), got {asked}")
        if exp.timing is not None:
            got = {} if rt.timing is None else rt.timing.model_dump(exclude_none=True)
            if got != exp.timing:
                out.append(f"expected merged timing {exp.timing}, got {got}")
        journal = self.journal() if (exp.journal_contains or exp.journal_lacks or exp.text_absent) else []
        flat = [_flat(r) for r in journal]
        for pattern in exp.journal_contains:
            if not any(matches(r, pattern) for r in flat):
                out.append(f"expected the journal to contain {json.dumps(pattern, sort_keys=True)}")
        for pattern in exp.journal_lacks:
            if any(matches(r, pattern) for r in flat):
                out.append(f"expected the journal to lack {json.dumps(pattern, sort_keys=True)}")
        text = json.dumps(journal)
        for needle in exp.text_absent:
            if needle in text:
                out.append(f"expected {needle!r} nowhere in the journal")
        return out


def _flat(record: dict) -> dict:
    """A journal payload with a trace's detail and an input's event lifted to the top."""
    flat = dict(record)
    flat.update(record.get("detail") or {})
    flat.update(record.get("event") or {})
    return flat


def run_scenario(scenario: Scenario, source: Path | None = None, record_to: Path | None = None) -> ScenarioOutcome:
    try:
        flow = load_flow(scenario.flow, source)
    except FlowFileError as exc:
        raise ScenarioError(f"{source or scenario.name}: flow: {exc}") from None
    sim = Simulation(scenario, flow)
    outcome = sim.run()
    if record_to is not None:
        header = {
            "source": "scenario",
            "scenario": scenario.name,
            "flow": flow.spec.name,
            "ladder_policy": flow.ladder.model_dump(mode="json"),
            "flow_document": (document := flow.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)),
            "flow_hash": document_hash(document),
            "ladder_defaults": LADDER_DEFAULTS,  # the defaults the document's ladder was read with
            "models": {},
            "devices": {"output": "simulated endpoint", "clock": "virtual"},
        }
        sim.call.write_journal(record_to, header, redact=sim.runtime.redact)
    return outcome


__all__ = [
    "Expect",
    "Scenario",
    "ScenarioError",
    "ScenarioOutcome",
    "ScenarioStep",
    "Simulation",
    "load_flow",
    "load_scenario",
    "run_scenario",
]
