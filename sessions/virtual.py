"""A core on a virtual clock, with a simulated output endpoint and simulated tools.

Shared by incident files (a bare silence controller) and scenarios (a flow). Items
are queued at virtual times; the core's own timers fire when their deadline is the
earliest thing pending; nothing sleeps. At equal times, scripted items run before
endpoint reports, and both before timers: a callback already queued is delivered
before the timer that would race it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ladder import (
    CancelPrompt,
    Controller,
    Effect,
    Event,
    PlaybackCompleted,
    PlaybackInterrupted,
    PlaybackStarted,
    PromptFailed,
    PromptSent,
    RequestPrompt,
    Trace,
)
from ladder.effects import CallTool
from ladder.events import ToolResult

from .journal import JournalWriter

SCRIPTED, ENDPOINT = 0, 1  # ordering of items queued at the same virtual time
# paired replay: a recorded input that came just after the endpoint's report of the same
# millisecond (a simulated caller who speaks the moment a prompt ends) stays after it
AFTER_ENDPOINT = 2


class Playback(BaseModel):
    """The simulated output endpoint: reports started/completed for each prompt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["auto", "manual"] = "auto"
    start_delay_ms: float = Field(default=100, ge=0)
    ms_per_word: float = Field(default=300, gt=0)
    report_sent: bool = False  # also report PromptSent with the real duration
    lose_start: tuple[str, ...] = ()  # prompt kinds whose start report never arrives
    lose_completion: tuple[str, ...] = ()  # prompt kinds whose completion never arrives
    fail: tuple[str, ...] = ()  # prompt kinds the endpoint rejects (PromptFailed)
    transcripts: dict[str, str] = {}  # text asked -> what output transcription reports
    # text -> (start delay, duration) in ms, as measured in a recording (paired replay)
    measured: dict[str, tuple[float, float]] = {}


class Core(Protocol):
    def handle(self, event: Event, now: float) -> list[Effect]: ...
    def next_deadline(self) -> float | None: ...


@dataclass(order=True)
class _Pending:
    at: float
    order: int
    seq: int
    item: Any = field(compare=False)


@dataclass
class ToolPlan:
    latency_ms: float
    outcome: str
    result: dict
    timeout_ms: float = 10_000.0  # longer than this and the outcome is unknown


def flatten(effect: Effect, at: float) -> dict:
    """One effect as a flat record: what patterns in incident and scenario files match."""
    if isinstance(effect, Trace):
        data = effect.to_dict()
        detail = data.pop("detail")
        return {"effect": "Trace", **data, **detail}
    return {"at": at, **effect.to_dict()}


def matches(record: dict, pattern: dict) -> bool:
    return all(record.get(k) == v for k, v in pattern.items())


class VirtualCall:
    """Drives one core; keeps every input and effect (flat records and a journal log)."""

    def __init__(
        self,
        core: Core,
        playback: Playback,
        tools: dict[str, ToolPlan] | None = None,
        scripted: Any = None,
        tools_by_call: dict[str, ToolPlan] | None = None,
        measured_key: Callable[[str], str] | None = None,
    ) -> None:
        self.core = core
        # paired replay: a prompt's words as the recording holds them (redacted), so a
        # read-back of a secret finds the duration the recording measured for it
        self.measured_key = measured_key
        # turns a scripted item that is not an Event (an incident step) into an event
        self.scripted = scripted
        self.playback = playback
        self.tools = tools or {}
        # paired replay: each call answered as the recording answered that call, after
        # the same latency; a call the recording never saw answered stays unanswered
        self.tools_by_call = tools_by_call
        self.now: float = 0
        self.records: list[dict] = []
        self.inputs: list[tuple[float, Event]] = []
        self.log: list[tuple[float, str, dict]] = []  # (t, "input"|"decision", journal payload)
        self.tokens: dict[str, int] = {}  # "last", "last_<kind>" -> token
        self.last_fired: dict[str, int] = {}
        self.last_invalidated: dict[str, int] = {}
        self.in_flight: set[int] = set()  # prompts the endpoint has not finished
        self.tools_running: set[str] = set()
        self._queue: list[_Pending] = []
        self._seq = 0
        self._cancelled: set[int] = set()
        self._started: set[int] = set()
        self._busy_until: float = 0

    @property
    def controller(self) -> Controller:
        return getattr(self.core, "ladder", self.core)  # type: ignore[return-value]

    # -- the queue -------------------------------------------------------------------

    def push(self, at: float, item: Any, order: int = SCRIPTED) -> None:
        self._seq += 1
        heapq.heappush(self._queue, _Pending(at, order, self._seq, item))

    def next_item_at(self) -> float | None:
        return self._queue[0].at if self._queue else None

    def next_deadline(self) -> float | None:
        return self.core.next_deadline()

    def step(self, horizon: float) -> bool:
        """Process the earliest item or timer at or before `horizon`. False if none."""
        deadline = self.next_deadline()
        if deadline is not None and deadline > horizon:
            deadline = None
        item = self._queue[0] if self._queue and self._queue[0].at <= horizon else None
        if item is None and deadline is None:
            return False
        if item is not None and (deadline is None or item.at <= deadline):
            heapq.heappop(self._queue)
            self.now = max(self.now, item.at)
            event = self.resolve(item.item)
            if event is not None:
                self.feed(event)
            return True
        self.now = max(self.now, deadline)  # type: ignore[arg-type]
        # fire the due timer as an explicit event, so the journal holds every input
        self.feed(self.controller.next_due_timer(self.now))  # type: ignore[arg-type]
        return True

    def run_until(self, horizon: float) -> None:
        for _ in range(200_000):
            if not self.step(horizon):
                self.now = max(self.now, horizon)
                return
        raise RuntimeError("the virtual call did not settle in 200000 steps")

    # -- feeding ---------------------------------------------------------------------

    def feed(self, event: Event) -> list[Effect]:
        self.inputs.append((self.now, event))
        # journal lines: the event nested under "event" (its fields may not collide with
        # the journal's own seq/t_ms), decisions as the effects' own dicts
        self.log.append((self.now, "input", {"kind": event.kind, "event": event.to_dict()}))
        effects = self.core.handle(event, self.now)
        self.log += [(self.now, "decision", e.to_dict()) for e in effects]
        self.absorb(effects)
        return effects

    def absorb(self, effects: list[Effect]) -> None:
        for effect in effects:
            self.records.append(flatten(effect, self.now))
            if isinstance(effect, Trace):
                timer = effect.detail.get("timer")
                if effect.kind == "timer_fired" and timer:
                    self.last_fired[timer] = effect.generation  # type: ignore[assignment]
                elif effect.kind == "timer_invalidated" and timer:
                    self.last_invalidated[timer] = effect.generation  # type: ignore[assignment]
            elif isinstance(effect, RequestPrompt):
                self.tokens["last"] = effect.token
                self.tokens[f"last_{effect.kind}"] = effect.token
                if self.playback.mode == "auto":
                    self._simulate_endpoint(effect)
            elif isinstance(effect, CancelPrompt):
                self._cancelled.add(effect.token)
                self._busy_until = min(self._busy_until, self.now)  # queued audio flushed
            elif isinstance(effect, CallTool):
                self._simulate_tool(effect)

    def _simulate_endpoint(self, prompt: RequestPrompt) -> None:
        pb = self.playback
        found = pb.measured.get(prompt.text)
        if found is None and pb.measured and self.measured_key is not None:
            found = pb.measured.get(self.measured_key(prompt.text))
        delay, duration = found or (pb.start_delay_ms, max(1, len(prompt.text.split())) * pb.ms_per_word)
        self.in_flight.add(prompt.token)
        if prompt.kind in pb.fail:
            self.push(self.now, ("failed", prompt.token), ENDPOINT)
            return
        if pb.report_sent:
            self.push(self.now, ("sent", prompt.token, duration), ENDPOINT)
        # one loudspeaker: a prompt starts after the audio queued before it
        start = max(self.now + delay, self._busy_until)
        self._busy_until = start + duration
        if prompt.kind not in pb.lose_start:
            self.push(start, ("started", prompt.token), ENDPOINT)
        if prompt.kind not in pb.lose_completion:
            transcript = pb.transcripts.get(prompt.text)
            self.push(start + duration, ("completed", prompt.token, transcript), ENDPOINT)
        else:
            self.push(start + duration, ("lost", prompt.token), ENDPOINT)

    def _simulate_tool(self, call: CallTool) -> None:
        if self.tools_by_call is not None:
            plan = self.tools_by_call.get(call.call)
            if plan is None:
                return
        else:
            plan = self.tools.get(call.tool, ToolPlan(0, "ok", {}))
        self.tools_running.add(call.call)
        latency, outcome, result = plan.latency_ms, plan.outcome, plan.result
        if latency > plan.timeout_ms:  # given up on: it may still have happened
            latency, outcome, result = plan.timeout_ms, "unknown", {"timed_out_after_ms": plan.timeout_ms}
        self.push(self.now + latency, ("tool", call.call, outcome, result), ENDPOINT)

    def resolve(self, item: Any) -> Event | None:
        """Turn a queued item into the event to feed (None: nothing reaches the core)."""
        if isinstance(item, Event):
            return item
        if not isinstance(item, tuple):
            return self.scripted(item)
        what = item[0]
        if what == "tool":
            self.tools_running.discard(item[1])
            return ToolResult(item[1], item[2], item[3])
        token = item[1]
        if what in ("completed", "lost", "failed"):
            self.in_flight.discard(token)
        if token in self._cancelled:
            # the endpoint flushed the audio: it reports the interruption once, if
            # playback had begun, and nothing else
            if what in ("completed", "lost") and token in self._started:
                return PlaybackInterrupted(token)
            return None
        if what == "started":
            self._started.add(token)
            return PlaybackStarted(token)
        if what == "completed":
            return PlaybackCompleted(token, item[2])
        if what == "sent":
            return PromptSent(token, item[2])
        if what == "failed":
            return PromptFailed(token, "endpoint_rejected")
        return None  # "lost": the completion report never arrives

    # -- recording ---------------------------------------------------------------------

    def write_journal(self, folder: Path, header: dict, redact=None) -> Path:
        """Record this call as a session folder (S1): inputs and decisions, in order."""
        # the header holds the designer's flow and policy, never caller data: kept whole
        with JournalWriter.create(folder, header) as journal:
            self._write(journal, redact)
        return journal.path

    def append_journal(self, stream, where: Path, header: dict, redact=None) -> None:
        """Record this call onto the end of an open archive stream (sessions.archive)."""
        with JournalWriter.append_to(stream, where, header) as journal:
            self._write(journal, redact)

    def _write(self, journal: JournalWriter, redact) -> None:
        clean = redact or (lambda record: record)
        for at, kind, payload in self.log:
            if kind == "input":
                journal.write_input(at, clean(payload))
            else:
                journal.write_decision(at, clean(payload))
