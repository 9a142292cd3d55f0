"""The live runtime: one serialized controller on an asyncio loop (pipecat-style edges).

Every input, from the keyboard, the microphone thread, the speaker thread or a tool,
is posted to the loop and fed to the flow runtime with a monotonic `now` (ms since
the session started). After each input the session arms exactly one loop timer, at
the core's next deadline, and executes the effects: speak, cancel audio, run a tool,
change the end-of-speech hold. Each input and decision is journaled, redacted.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ladder import (
    CallTool,
    CancelPrompt,
    Effect,
    Event,
    RequestPrompt,
    SessionClosed,
    StartCall,
    TimingChanged,
    ToolResult,
)
from ladder.flow.compile import LADDER_DEFAULTS, CompiledFlow
from ladder.flow.runtime import FlowRuntime
from sessions.journal import JournalWriter, document_hash
from sessions.virtual import flatten


class Backend(Protocol):
    """The edges a live session speaks and listens through (text, file or audio)."""

    def attach(self, session: LiveSession) -> None: ...
    async def start(self) -> None: ...
    def speak(self, prompt: RequestPrompt) -> None: ...
    def cancel(self, token: int) -> None: ...
    def set_end_of_speech(self, ms: float | None) -> None: ...
    async def close(self) -> None: ...


DEFAULT_TOOL_TIMEOUT_MS = 10_000.0


@dataclass
class ToolRunner:
    """Tools are simulated from the flow's data: a latency and an outcome, in real time.

    A tool that takes longer than its `timeout_ms` is given up on: its outcome is
    `unknown` (it may still have happened), so no call waits forever on a tool.
    """

    overrides: dict[str, tuple[float, str]] = field(default_factory=dict)  # console toggles

    def plan(self, flow: CompiledFlow, tool: str) -> tuple[float, str, dict]:
        spec = flow.tools.get(tool)
        latency, outcome, result = (0.0, "ok", {}) if spec is None else (spec.latency_ms, spec.outcome, dict(spec.result))
        if tool in self.overrides:
            latency, outcome = self.overrides[tool]
        timeout = DEFAULT_TOOL_TIMEOUT_MS if spec is None else spec.timeout_ms
        if latency > timeout:
            return timeout, "unknown", {"timed_out_after_ms": timeout}
        return latency, outcome, result


class LiveSession:
    def __init__(
        self,
        flow: CompiledFlow,
        backend: Backend,
        *,
        journal_dir: Path | None = None,
        header: dict | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.flow = flow
        self.runtime = FlowRuntime(flow)
        self.backend = backend
        self.tools = ToolRunner()
        self.clock = clock
        self.loop: asyncio.AbstractEventLoop | None = None
        self.listeners: list[Callable[[float, str, dict], None]] = []
        self.closed = asyncio.Event()
        self.ended_reason: str | None = None
        self._t0 = clock()
        self._timer: asyncio.TimerHandle | None = None
        self._journal: JournalWriter | None = None
        self._journal_dir = journal_dir
        self._header = header or {}
        self._tasks: set[asyncio.Task] = set()
        self._stopping = False
        self.timer_lateness: list[float] = []  # ms each core timer fired after its due time
        # inputs an edge produced while the effects of another input were executing (a
        # cancel that reports the interruption at once): fed after it, in order (S6)
        self._deferred: deque[tuple[float, Event]] = deque()
        self._deferred_notes: deque[tuple[float, dict]] = deque()
        self._feeding = False
        self._last_now = 0.0
        backend.attach(self)

    # -- time ---------------------------------------------------------------------------

    def now_ms(self) -> float:
        return round((self.clock() - self._t0) * 1000.0, 3)

    def from_monotonic_ms(self, monotonic_ms: float) -> float:
        """A device timestamp (time.monotonic in ms) on the session clock."""
        return round(monotonic_ms - self._t0 * 1000.0, 3)

    def note(self, kind: str, data: dict) -> None:
        """Journal an observation (turn latency, media figures): not an input, not a
        decision of the core, so replay leaves it out. One made while an input's effects
        execute (a listener reacting to a decision) is written after that input's
        decisions, so the journal's clock never goes back."""
        record = {"effect": "Observation", "kind": kind, **data}
        if self._feeding:
            self._deferred_notes.append((self.now_ms(), record))
        else:
            self._record(max(self.now_ms(), self._last_now), "decision", record)

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        if self._journal_dir is not None:
            header = {
                "source": "live",
                "flow": self.flow.spec.name,
                "ladder_policy": self.flow.ladder.model_dump(mode="json"),
                # the whole flow, so the session replays without the file (S2)
                "flow_document": (document := self.flow.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)),
                "flow_hash": document_hash(document),
                "ladder_defaults": LADDER_DEFAULTS,  # the defaults the document's ladder was read with
                **getattr(self.backend, "journal_header", {}),  # a backend's word on where the call ran
                **self._header,
            }
            self._journal = JournalWriter.create(self._journal_dir, header)
            open_recordings = getattr(self.backend, "open_recordings", None)
            if open_recordings is not None:
                open_recordings(self._journal_dir)  # mic.wav and out.wav, streamed as the call runs
        await self.backend.start()
        self.feed(StartCall())

    async def run(self) -> None:
        await self.start()
        await self.closed.wait()

    async def stop(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()
        await self.backend.close()
        write_recordings = getattr(self.backend, "write_recordings", None)
        if write_recordings is not None and self._journal_dir is not None:
            write_recordings(self._journal_dir)  # finishes mic.wav and out.wav beside the journal
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        self.closed.set()

    # -- inputs -----------------------------------------------------------------------------

    def post(self, event: Event) -> None:
        """Thread-safe: hand an event to the loop (audio and worker threads use this)."""
        assert self.loop is not None, "the session has not started"
        self.loop.call_soon_threadsafe(self.feed, event)

    def feed(self, event: Event) -> list[Effect]:
        """On the loop only: one input through the core, journaled, effects executed.

        An input that arrives while effects are executing (a backend's `cancel()` that
        reports `PlaybackInterrupted` at once) is not fed inside the effect loop, where
        its records would interleave with the earlier input's: it waits its turn and is
        fed with the time it was produced, after the decisions it followed.
        """
        now = self.now_ms()
        if self._feeding:
            self._deferred.append((now, event))
            return []
        self._feeding = True
        try:
            effects = self._feed_one(now, event)
            while self._deferred:
                self._feed_one(*self._deferred.popleft())
        finally:
            self._feeding = False
        self._arm()
        return effects

    def _feed_one(self, now: float, event: Event) -> list[Effect]:
        now = max(now, self._last_now)  # the core refuses time going backwards
        self._last_now = now
        effects = self.runtime.handle(event, now)
        self._record(now, "input", {"kind": event.kind, "event": event.to_dict()})
        for effect in effects:
            self._record(now, "decision", effect.to_dict(), effect)
            self._execute(effect)
        while self._deferred_notes:
            at, record = self._deferred_notes.popleft()
            self._last_now = max(at, self._last_now)
            self._record(self._last_now, "decision", record)
        return effects

    def _on_timer(self) -> None:
        self._timer = None
        # fire each due timer as an explicit event, so the journal holds every input
        for _ in range(64):
            now = self.now_ms()
            event = self.runtime.next_due_timer(now)
            if event is None:
                break
            armed = self.runtime.ladder.timer(event.timer)
            if armed is not None:
                self.timer_lateness.append(now - armed.due)
            self.feed(event)
        self._arm()

    def _arm(self) -> None:
        """Arm only the core's next deadline (there is never more than one loop timer)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.runtime.next_deadline()
        if deadline is None or self.loop is None:
            return
        delay = max(0.0, (deadline - self.now_ms()) / 1000.0)
        self._timer = self.loop.call_later(delay, self._on_timer)

    # -- effects ------------------------------------------------------------------------------

    def _execute(self, effect: Effect) -> None:
        if isinstance(effect, RequestPrompt):
            self.backend.speak(effect)
        elif isinstance(effect, CancelPrompt):
            self.backend.cancel(effect.token)
        elif isinstance(effect, CallTool):
            self._spawn(self._run_tool(effect))
        elif isinstance(effect, TimingChanged):
            self.backend.set_end_of_speech(effect.timing.get("end_of_speech_ms"))
        elif isinstance(effect, SessionClosed):
            self.ended_reason = effect.outcome
            # let the last audio drain, then close the streams and the journal
            self._spawn(self._close_soon())

    async def _run_tool(self, call: CallTool) -> None:
        latency, outcome, result = self.tools.plan(self.flow, call.tool)
        await asyncio.sleep(latency / 1000.0)
        self.feed(ToolResult(call.call, outcome, result))  # type: ignore[arg-type]

    async def _close_soon(self) -> None:
        await asyncio.sleep(0.2)
        await self.stop()

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- journal and listeners -------------------------------------------------------------

    def _record(self, now: float, kind: str, payload: dict, effect: Effect | None = None) -> None:
        if self._journal is not None:
            # what leaves the process is redacted (G6); the screen shows the real values
            clean = self.runtime.redact(payload)
            if kind == "input":
                self._journal.write_input(now, clean)
            else:
                self._journal.write_decision(now, clean)
        if self.listeners:
            flat = flatten(effect, now) if effect is not None else {"at": now, **payload}
            for listener in self.listeners:
                listener(now, kind, flat)
