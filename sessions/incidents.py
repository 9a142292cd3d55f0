"""Incident files: virtual-time schedules with expected and prohibited results.

An incident (seed 000's fixture table: schedule, expected state, prohibited result)
is a JSON file. `run_incident` plays it through a fresh `ladder.Controller` on a
virtual clock: scripted steps and a simulated output endpoint feed events, the
controller's own timers fire when their deadline is the earliest thing pending,
and nothing sleeps. At equal times, scripted steps run before timers: a callback
that is already queued is delivered before the timer that would race it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ladder import (
    Controller,
    LadderPolicy,
    TimerFired,
    event_from_dict,
)
from ladder.events import TIMER_KINDS, Event

from .virtual import Playback, VirtualCall, matches

INCIDENT_SCHEMA = 1


class IncidentError(ValueError):
    """A malformed incident file: one line naming the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Step(_Strict):
    """One scripted input at virtual time `at` (ms)."""

    at: float = Field(ge=0)
    note: str = ""
    event: dict | None = None  # any ladder event, as in Event.to_dict()
    deliver_timer: dict | None = None  # {"timer": kind, "generation": int | ref}

    @field_validator("deliver_timer")
    @classmethod
    def _timer(cls, value: dict | None) -> dict | None:
        if value is None:
            return value
        if value.get("timer") not in TIMER_KINDS:
            raise ValueError(f"timer must be one of {', '.join(TIMER_KINDS)}")
        gen = value.get("generation")
        if not (isinstance(gen, int) or gen in GENERATION_REFS):
            raise ValueError(f"generation must be an integer or one of {', '.join(GENERATION_REFS)}")
        extra = set(value) - {"timer", "generation"}
        if extra:
            raise ValueError(f"unexpected key {sorted(extra)[0]!r}")
        return value


class Prohibited(_Strict):
    what: str  # the prohibited result, in words (the seed's third column)
    match: dict  # a record pattern that must never occur


class Expect(_Strict):
    state: str | None = None
    stage: str | None = None
    outcome: str | None = None  # session outcome (None: the session is still open)
    episode_outcomes: tuple[str | None, ...] | None = None  # None: still open
    prompts: tuple[str, ...] | None = None  # the requested prompt sequence
    statuses: dict[str, str] = {}  # prompt ref ("last_reminder", "2") -> final status
    records: tuple[dict, ...] = ()  # patterns that must occur, in this order
    counts: dict[str, int] = {}  # requested / started / completed / cancelled / ...


class Incident(_Strict):
    schema_: int = Field(default=INCIDENT_SCHEMA, alias="schema")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    title: str
    source: str = ""
    policy: dict = {}
    playback: Playback = Playback()
    schedule: tuple[Step, ...]
    until: float | None = None  # keep firing timers up to this time
    expect: Expect
    prohibit: tuple[Prohibited, ...] = ()

    def ladder_policy(self) -> LadderPolicy:
        return LadderPolicy.model_validate(self.policy)


GENERATION_REFS = ("current", "last_fired", "last_invalidated")


# --- loading ---------------------------------------------------------------------


def _field_path(loc: tuple) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def parse_incident(data: Any, source: str) -> Incident:
    """Validate one incident document; errors name `source` and the field."""
    try:
        incident = Incident.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = _field_path(err["loc"])
        raise IncidentError(f"{source}: field {where}: {err['msg']}") from None
    if incident.schema_ != INCIDENT_SCHEMA:
        raise IncidentError(
            f"{source}: field schema: version {incident.schema_} is not supported; "
            f"expected {INCIDENT_SCHEMA}"
        )
    try:
        incident.ladder_policy()
    except ValidationError as exc:
        err = exc.errors()[0]
        raise IncidentError(
            f"{source}: field policy.{_field_path(err['loc'])}: {err['msg']}"
        ) from None
    for i, step in enumerate(incident.schedule):
        if (step.event is None) == (step.deliver_timer is None):
            raise IncidentError(
                f"{source}: field schedule[{i}]: expected exactly one of 'event' or 'deliver_timer'"
            )
        if step.event is not None:
            try:
                event_from_dict(step.event | _token_placeholder(step.event))
            except ValueError as exc:
                raise IncidentError(f"{source}: field schedule[{i}].event: {exc}") from None
    return incident


def _token_placeholder(event: dict) -> dict:
    # token references ("last_reminder") are resolved at run time; validate the rest
    if "token" in event:
        token = event["token"]
        if isinstance(token, str):
            if not token.startswith("last"):
                raise ValueError(f"token {token!r}: expected an integer or 'last' / 'last_<kind>'")
            return {"token": 0}
        return {"token": token}
    return {}


def load_incident(path: Path) -> Incident:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise IncidentError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IncidentError(
            f"{path}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    return parse_incident(data, str(path))


def library_paths() -> list[Path]:
    folder = resources.files("sessions.library")
    return sorted(
        Path(str(p)) for p in folder.iterdir() if p.name.endswith(".json")  # type: ignore[attr-defined]
    )


def load_library() -> list[Incident]:
    return [load_incident(p) for p in library_paths()]


# --- running ---------------------------------------------------------------------


@dataclass
class Outcome:
    incident: Incident
    passed: bool
    failures: list[str]
    records: list[dict]  # every effect, flattened, with its virtual time under "at"
    inputs: list[tuple[float, Event]]
    snapshot: dict
    counts: dict[str, int]

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def to_dict(self) -> dict:
        return {
            "incident": self.incident.name,
            "title": self.incident.title,
            "verdict": self.verdict,
            "failures": self.failures,
            "counts": self.counts,
            "final_state": self.snapshot["state"],
            "outcome": self.snapshot["outcome"],
        }


class VirtualRun:
    """An incident on a virtual clock: its schedule fed into a `VirtualCall`.

    Also the engine behind step-by-step runs in the console: `step()` processes the
    next scripted item, endpoint report or due timer and returns what happened.
    """

    def __init__(self, incident: Incident) -> None:
        self.incident = incident
        self._horizon: float | None = None
        self.controller = Controller(incident.ladder_policy())
        self.call = VirtualCall(self.controller, incident.playback, scripted=self._resolve)
        for step in incident.schedule:
            self.call.push(step.at, step)

    @property
    def records(self) -> list[dict]:
        return self.call.records

    @property
    def inputs(self) -> list[tuple[float, Event]]:
        return self.call.inputs

    @property
    def now(self) -> float:
        return self.call.now

    @property
    def horizon(self) -> float:
        if self._horizon is None:  # the incident is frozen: computed once, not per step
            last = max((s.at for s in self.incident.schedule), default=0)
            self._horizon = max(last, self.incident.until or 0)
        return self._horizon

    def done(self) -> bool:
        """Nothing left at or before the horizon: the run stops at the incident's end."""
        item = self.call.next_item_at()
        deadline = self.call.next_deadline()
        return (item is None or item > self.horizon) and (deadline is None or deadline > self.horizon)

    def step(self) -> list[dict]:
        before = len(self.records)
        self.call.step(self.horizon)
        return self.records[before:]

    def run(self) -> None:
        for _ in range(100_000):
            if self.done():
                return
            self.step()
        raise RuntimeError(f"{self.incident.name}: did not settle in 100000 steps")

    def _resolve(self, item: Step) -> Event | None:
        if item.deliver_timer is not None:
            kind = item.deliver_timer["timer"]
            gen = item.deliver_timer["generation"]
            if gen == "current":
                armed = self.controller.timer(kind)
                gen = armed.generation if armed else -1
            elif gen == "last_fired":
                gen = self.call.last_fired.get(kind, -1)
            elif gen == "last_invalidated":
                gen = self.call.last_invalidated.get(kind, -1)
            return TimerFired(kind, gen)
        data = dict(item.event or {})
        if isinstance(data.get("token"), str):
            data["token"] = self.call.tokens.get(data["token"], -1)
        return event_from_dict(data)

    def resolve_prompt_ref(self, ref: str) -> int | None:
        if ref.isdigit():
            return int(ref)
        return self.call.tokens.get(ref)

    def write_journal(self, folder: Path) -> Path:
        header = {
            "source": "incident",
            "incident": self.incident.name,
            "ladder_policy": self.controller.policy.model_dump(mode="json"),
            "flow_hash": None,
            "models": {},
            "devices": {"output": "simulated endpoint", "clock": "virtual"},
        }
        return self.call.write_journal(folder, header)


def prompt_counts(run: VirtualRun) -> dict[str, int]:
    """Prompts by lifecycle state, counted as `lull sessions report` counts them
    (sessions.metrics.PromptTally): a completion reported after the estimate is
    completed (and completed_late) in both."""
    from .metrics import PromptTally

    tally = PromptTally()
    for record in run.records:
        tally.feed(record)
    return {
        "requested": tally.total("requested"),
        "started": tally.total("started"),
        "completed": tally.total("completed"),
        "completed_late": tally.total("completed_late"),
        "cancelled": tally.total("cancelled_before_playback"),
        "interrupted": tally.total("interrupted"),
    }


def run_incident(incident: Incident, record_to: Path | None = None) -> Outcome:
    """Run to the incident's horizon and judge it; optionally record a session folder."""
    run = VirtualRun(incident)
    run.run()
    if record_to is not None:
        run.write_journal(record_to)
    return judge(run)


def judge(run: VirtualRun) -> Outcome:
    incident = run.incident
    snap = run.controller.snapshot()
    counts = prompt_counts(run)
    failures: list[str] = []
    exp = incident.expect
    if exp.state is not None and snap["state"] != exp.state:
        failures.append(f"expected state {exp.state}, got {snap['state']}")
    if exp.stage is not None:
        stage = snap["episode"]["stage"] if snap["episode"] else None
        if stage != exp.stage:
            failures.append(f"expected stage {exp.stage}, got {stage}")
    if "outcome" in exp.model_fields_set and snap["outcome"] != exp.outcome:
        failures.append(f"expected session outcome {exp.outcome}, got {snap['outcome']}")
    if exp.episode_outcomes is not None:
        got = [e.outcome for e in run.controller.episodes]
        if tuple(got) != exp.episode_outcomes:
            failures.append(f"expected episode outcomes {list(exp.episode_outcomes)}, got {got}")
    if exp.prompts is not None:
        got = [
            f"{r['kind']}:{r['stage']}" if r["kind"] == "reminder" else r["kind"]
            for r in run.records
            if r.get("effect") == "RequestPrompt"
        ]
        if tuple(got) != exp.prompts:
            failures.append(f"expected prompts {list(exp.prompts)}, got {got}")
    for ref, status in exp.statuses.items():
        token = run.resolve_prompt_ref(ref)
        prompt = next((p for p in snap["prompts"] if p["token"] == token), None)
        got_status = prompt["status"] if prompt else "never requested"
        if got_status != status:
            failures.append(f"expected prompt {ref} {status}, got {got_status}")
    for key, value in exp.counts.items():
        if counts.get(key) != value:
            failures.append(f"expected {value} prompts {key}, got {counts.get(key)}")
    position = 0
    for pattern in exp.records:
        found = next(
            (i for i in range(position, len(run.records)) if matches(run.records[i], pattern)),
            None,
        )
        if found is None:
            failures.append(f"expected record {json.dumps(pattern, sort_keys=True)} (in order)")
        else:
            position = found + 1
    for rule in incident.prohibit:
        hit = next((r for r in run.records if matches(r, rule.match)), None)
        if hit is not None:
            failures.append(f"prohibited: {rule.what} (at {hit.get('at')} ms: {hit.get('kind') or hit.get('effect')})")
    return Outcome(incident, not failures, failures, run.records, run.inputs, snap, counts)


def incident_from_inputs(
    name: str,
    title: str,
    inputs: list[tuple[float, Event]],
    policy: dict,
    source: str = "",
) -> dict:
    """An incident document from a call's silence-controller inputs (S7).

    Timer callbacks are left out: on the virtual clock the timers fire by themselves,
    at the same times. Playback reports are kept, so the endpoint is manual. The
    expectations are what this policy does with these inputs now: run the file later
    to see whether a change altered them.
    """
    schedule = [
        {"at": round(at, 3), "event": event.to_dict()}
        for at, event in inputs
        if event.kind != "timer_fired"
    ]
    horizon = max((at for at, _ in inputs), default=0)
    draft = {
        "schema": INCIDENT_SCHEMA,
        "name": name,
        "title": title,
        "source": source,
        "policy": policy,
        "playback": {"mode": "manual"},
        "schedule": schedule,
        "until": horizon,
        "expect": {},
        "prohibit": [],
    }
    run = VirtualRun(parse_incident(draft, name))
    run.run()
    outcome = judge(run)
    snap = outcome.snapshot
    draft["expect"] = {
        "state": snap["state"],
        "outcome": snap["outcome"],
        "episode_outcomes": [e.outcome for e in run.controller.episodes],
        "prompts": [
            f"{r['kind']}:{r['stage']}" if r["kind"] == "reminder" else r["kind"]
            for r in outcome.records
            if r.get("effect") == "RequestPrompt"
        ],
    }
    if not any(r.get("effect") == "Answered" for r in outcome.records):
        draft["prohibit"].append({"what": "silence fills the field", "match": {"effect": "Answered"}})
    draft["prohibit"].append({"what": "a prompt starts after it was cancelled", "match": {"kind": "stale_rejected", "event": "playback_started", "reason": "prompt_already_cancelled_before_playback"}})
    return draft

