"""Incident files: virtual-time schedules with expected and prohibited results.

An incident (seed 000's fixture table: schedule, expected state, prohibited result)
is a JSON file. `run_incident` plays it through a fresh `ladder.Controller` on a
virtual clock: scripted steps and a simulated output endpoint feed events, the
controller's own timers fire when their deadline is the earliest thing pending,
and nothing sleeps. At equal times, scripted steps run before timers: a callback
that is already queued is delivered before the timer that would race it.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ladder import (
    Controller,
    Effect,
    LadderPolicy,
    PlaybackCompleted,
    PlaybackInterrupted,
    PlaybackStarted,
    PromptFailed,
    PromptSent,
    RequestPrompt,
    TimerFired,
    Trace,
    event_from_dict,
)
from ladder.effects import CancelPrompt
from ladder.events import TIMER_KINDS, Event

from .journal import JournalWriter

INCIDENT_SCHEMA = 1


class IncidentError(ValueError):
    """A malformed incident file: one line naming the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Playback(_Strict):
    """The simulated output endpoint: reports started/completed for each prompt."""

    mode: Literal["auto", "manual"] = "auto"
    start_delay_ms: float = Field(default=100, ge=0)
    ms_per_word: float = Field(default=300, gt=0)
    report_sent: bool = False  # also report PromptSent with the real duration
    lose_start: tuple[str, ...] = ()  # prompt kinds whose start report never arrives
    lose_completion: tuple[str, ...] = ()  # prompt kinds whose completion never arrives
    fail: tuple[str, ...] = ()  # prompt kinds the endpoint rejects (PromptFailed)


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
    episode_outcomes: tuple[str, ...] | None = None
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


def flatten(effect: Effect, at: float) -> dict:
    """One effect as a flat record: what patterns in incident files match against."""
    if isinstance(effect, Trace):
        data = effect.to_dict()
        detail = data.pop("detail")
        return {"effect": "Trace", **data, **detail}
    return {"at": at, **effect.to_dict()}


def matches(record: dict, pattern: dict) -> bool:
    return all(record.get(k) == v for k, v in pattern.items())


@dataclass(order=True)
class _Pending:
    at: float
    order: int  # scripted steps before endpoint reports at the same time, then FIFO
    seq: int
    item: Any = field(compare=False)


class VirtualRun:
    """A controller, a virtual clock and a simulated output endpoint.

    Also the engine behind step-by-step runs in the console: `step()` processes the
    next scripted item or due timer and returns what happened.
    """

    def __init__(self, incident: Incident) -> None:
        self.incident = incident
        self.controller = Controller(incident.ladder_policy())
        self.playback = incident.playback
        self.now: float = 0
        self.records: list[dict] = []
        self.inputs: list[tuple[float, Event]] = []
        self.log: list[tuple[float, str, dict]] = []  # (t, "input"|"decision", record)
        self._queue: list[_Pending] = []
        self._seq = 0
        self._last_fired: dict[str, int] = {}
        self._last_invalidated: dict[str, int] = {}
        self._tokens: dict[str, int] = {}  # "last", "last_<kind>" -> token
        self._prompt_kinds: dict[int, str] = {}
        self._cancelled: set[int] = set()
        for step in incident.schedule:
            self._push(step.at, 0, step)

    def _push(self, at: float, order: int, item: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, _Pending(at, order, self._seq, item))

    @property
    def horizon(self) -> float:
        last = max((s.at for s in self.incident.schedule), default=0)
        return max(last, self.incident.until or 0)

    def _next_item(self) -> _Pending | None:
        if self._queue and self._queue[0].at <= self.horizon:
            return self._queue[0]
        return None

    def _next_deadline(self) -> float | None:
        deadline = self.controller.next_deadline()
        return deadline if deadline is not None and deadline <= self.horizon else None

    def done(self) -> bool:
        """Nothing left at or before the horizon: the run stops at the incident's end."""
        return self._next_item() is None and self._next_deadline() is None

    def step(self) -> list[dict]:
        """Advance to the next scripted item or deadline, whichever is first."""
        deadline = self._next_deadline()
        nxt = self._next_item()
        if nxt is None and deadline is None:
            return []
        if nxt is not None and (deadline is None or nxt.at <= deadline):
            heapq.heappop(self._queue)
            self.now = max(self.now, nxt.at)
            event = self._resolve(nxt.item)
            if event is None:
                return []
            return self._feed(event)
        self.now = max(self.now, deadline)
        # fire the due timer as an explicit event, so the journal holds every input
        timer = min(
            (t for t in self.controller.timers.values() if t.due <= self.now),
            key=lambda t: (t.due, t.generation),
        )
        return self._feed(TimerFired(timer.kind, timer.generation))

    def run(self) -> None:
        for _ in range(100_000):
            if self.done():
                return
            self.step()
        raise RuntimeError(f"{self.incident.name}: did not settle in 100000 steps")

    def _feed(self, event: Event) -> list[dict]:
        self.inputs.append((self.now, event))
        # journal lines: the event nested under "event" (its fields may not collide with
        # the journal's own seq/t_ms), decisions as the effects' own dicts
        self.log.append((self.now, "input", {"kind": event.kind, "event": event.to_dict()}))
        effects = self.controller.handle(event, self.now)
        self.log += [(self.now, "decision", e.to_dict()) for e in effects]
        before = len(self.records)
        self._absorb(effects)
        return self.records[before:]

    def write_journal(self, folder: Path) -> Path:
        """Record this run as a session folder (S1): inputs and decisions, in order."""
        header = {
            "source": "incident",
            "incident": self.incident.name,
            "ladder_policy": self.controller.policy.model_dump(mode="json"),
            "flow_hash": None,
            "models": {},
            "devices": {"output": "simulated endpoint", "clock": "virtual"},
        }
        with JournalWriter.create(folder, header) as journal:
            for at, kind, payload in self.log:
                if kind == "input":
                    journal.write_input(at, payload)
                else:
                    journal.write_decision(at, payload)
        return journal.path

    def _absorb(self, effects: list[Effect]) -> None:
        for effect in effects:
            self.records.append(flatten(effect, self.now))
            if isinstance(effect, Trace):
                timer = effect.detail.get("timer")
                if effect.kind == "timer_fired" and timer:
                    self._last_fired[timer] = effect.generation  # type: ignore[assignment]
                elif effect.kind == "timer_invalidated" and timer:
                    self._last_invalidated[timer] = effect.generation  # type: ignore[assignment]
            elif isinstance(effect, RequestPrompt):
                self._tokens["last"] = effect.token
                self._tokens[f"last_{effect.kind}"] = effect.token
                self._prompt_kinds[effect.token] = effect.kind
                if self.playback.mode == "auto":
                    self._simulate_endpoint(effect)
            elif isinstance(effect, CancelPrompt):
                self._cancelled.add(effect.token)

    def _simulate_endpoint(self, prompt: RequestPrompt) -> None:
        pb = self.playback
        duration = max(1, len(prompt.text.split())) * pb.ms_per_word
        if prompt.kind in pb.fail:
            self._push(self.now, 1, ("failed", prompt.token))
            return
        if pb.report_sent:
            self._push(self.now, 1, ("sent", prompt.token, duration))
        start = self.now + pb.start_delay_ms
        if prompt.kind not in pb.lose_start:
            self._push(start, 1, ("started", prompt.token))
        if prompt.kind not in pb.lose_completion:
            self._push(start + duration, 1, ("completed", prompt.token))

    def _resolve(self, item: Any) -> Event | None:
        if isinstance(item, tuple):  # an endpoint report
            what, token = item[0], item[1]
            if token in self._cancelled:
                # the endpoint flushed the audio: it reports the interruption once, if
                # playback had begun, and nothing else
                if what == "completed" and self._started(token):
                    return PlaybackInterrupted(token)
                return None
            if what == "started":
                return PlaybackStarted(token)
            if what == "completed":
                return PlaybackCompleted(token)
            if what == "sent":
                return PromptSent(token, item[2])
            return PromptFailed(token, "endpoint_rejected")
        step: Step = item
        if step.deliver_timer is not None:
            kind = step.deliver_timer["timer"]
            gen = step.deliver_timer["generation"]
            if gen == "current":
                armed = self.controller.timer(kind)
                gen = armed.generation if armed else -1
            elif gen == "last_fired":
                gen = self._last_fired.get(kind, -1)
            elif gen == "last_invalidated":
                gen = self._last_invalidated.get(kind, -1)
            return TimerFired(kind, gen)
        data = dict(step.event or {})
        if isinstance(data.get("token"), str):
            data["token"] = self._tokens.get(data["token"], -1)
        return event_from_dict(data)

    def _started(self, token: int) -> bool:
        return any(
            r.get("kind") == "prompt_started" and r.get("token") == token for r in self.records
        )

    def resolve_prompt_ref(self, ref: str) -> int | None:
        if ref.isdigit():
            return int(ref)
        return self._tokens.get(ref)


def prompt_counts(run: VirtualRun) -> dict[str, int]:
    statuses = [p["status"] for p in run.controller.snapshot()["prompts"]]
    return {
        "requested": sum(1 for r in run.records if r.get("effect") == "RequestPrompt"),
        "started": sum(
            1 for r in run.records if r.get("effect") == "Trace" and r.get("kind") == "prompt_started"
        ),
        "completed": statuses.count("completed"),
        "cancelled": statuses.count("cancelled_before_playback"),
        "interrupted": statuses.count("interrupted"),
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
