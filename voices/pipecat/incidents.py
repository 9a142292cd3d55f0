"""Incidents through a real Pipecat pipeline, on virtual time (`lull incidents run --via pipecat`).

Each incident's schedule enters a Pipecat pipeline (`PipelineWorker`, the class
`PipelineTask` became, its frame queues and a `WorkerRunner`) at the head; Lull's
`LullProcessor` sits in the middle; a simulated output transport at the end plays the
prompts it is asked to say, as the incident's `playback` describes, and reports them
as Pipecat's output transport does (bot started and stopped speaking, upstream). The
loop is a `VirtualTimeLoop`: the whole library runs in seconds, and the verdict is
judged exactly as on the virtual clock (`sessions.incidents.judge`).

A step goes in as the frame Pipecat itself would carry where there is one:

- a caller's turn starting and ending: `UserStartedSpeakingFrame` / `UserStoppedSpeakingFrame`;
- its interpretation, after the turn ended: a `TranscriptionFrame`, read by the
  processor's matcher (here, one that knows the incident's words);
- a tool starting and finishing ok or failed: `FunctionCallInProgressFrame` /
  `FunctionCallResultFrame`;
- playback started and completed: the transport's bot speaking frames.

Everything else (a question or announcement asked of Lull, a stale or duplicate
callback, a media path failing, a route switched off, an interpretation before its
turn ended) goes in as a `LullEventFrame`. Each run counts how many steps went each way.

At one virtual instant the virtual clock's order holds: scripted steps, then endpoint
reports, then the core's timers, each settled through every queue before the next.
"""

from __future__ import annotations

import asyncio
import heapq
from pathlib import Path

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    InterruptionFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner

from ladder import PromptFailed, PromptSent, TimerFired
from ladder.events import Event, ToolFinished, ToolStarted, TurnEnded, TurnInterpreted, TurnStarted
from sessions.incidents import Incident, Outcome, Step, prompt_counts
from sessions.virtual import Playback
from voices.framework_incidents import ENDPOINT, FINISH, SCRIPTED, SPOKEN_INTENTS, FrameworkRun, IncidentWords, horizon_ms

from .frames import LullEventFrame
from .processor import LullProcessor
from voices.virtual_loop import VirtualTimeLoop, run_virtual



class PipecatRun(FrameworkRun):
    """A run through a Pipecat pipeline: `as_native` steps went in as Pipecat's own frames."""

    @property
    def processor(self) -> LullProcessor:
        return self.adapter  # type: ignore[return-value]

    @property
    def as_frames(self) -> int:
        return self.as_native


class _Head(FrameProcessor):
    """The pipeline's first processor: where the incident's frames enter."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)


class SimulatedOutput(FrameProcessor):
    """The output transport of an incident run: plays each `TTSSpeakFrame` as the
    incident's `playback` says (a start delay, so many ms a word, one loudspeaker) and
    reports it upstream as Pipecat's transport does; an interruption flushes the audio
    and, if a prompt was playing, reports the bot stopped."""

    def __init__(self, playback: Playback, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self.playback = playback
        self._loop = loop
        self._busy_until = 0.0  # loop time (s) when the queued audio ends
        self._reports: list[tuple] = []  # (at, seq, frame, playing): what it will report
        self._seq = 0
        self._handle: asyncio.TimerHandle | None = None
        self._playing: int | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSSpeakFrame) and "lull_token" in frame.metadata:
            self._play(frame)
        elif isinstance(frame, InterruptionFrame) and direction is FrameDirection.DOWNSTREAM:
            await self._flush()
        await self.push_frame(frame, direction)

    def _play(self, frame: TTSSpeakFrame) -> None:
        pb = self.playback
        token, kind = frame.metadata["lull_token"], frame.metadata["lull_kind"]
        delay_ms, duration_ms = pb.measured.get(
            frame.text, (pb.start_delay_ms, max(1, len(frame.text.split())) * pb.ms_per_word)
        )
        now = round(self._loop.time(), 6)  # the instant, without the rank it was reported at
        if kind in pb.fail:
            self._report(now, LullEventFrame(PromptFailed(token, "endpoint_rejected")))
            return
        if pb.report_sent:
            self._report(now, LullEventFrame(PromptSent(token, duration_ms)))
        start = max(now + delay_ms / 1000.0, self._busy_until)
        self._busy_until = start + duration_ms / 1000.0
        if kind not in pb.lose_start:
            self._report(start, BotStartedSpeakingFrame(), playing=token)
        if kind not in pb.lose_completion:
            self._report(self._busy_until, BotStoppedSpeakingFrame(), playing=None)

    def _report(self, at: float, frame: Frame, playing: int | None | bool = False) -> None:
        """Queue a report; reports due at one instant go out in the order they were made."""
        self._seq += 1
        heapq.heappush(self._reports, (round(at, 6), self._seq, frame, playing))  # to the microsecond, as now is
        self._arm()

    def _arm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._reports:
            at = max(self._reports[0][0], round(self._loop.time(), 6))
            self._handle = self._loop.call_at_ranked(at, ENDPOINT, lambda: self.create_task(self._due()))

    async def _due(self) -> None:
        self._handle = None
        now = round(self._loop.time(), 6)
        while self._reports and self._reports[0][0] <= now:
            _, _, frame, playing = heapq.heappop(self._reports)
            if playing is not False:
                self._playing = playing  # type: ignore[assignment]
            await self.push_frame(frame, FrameDirection.UPSTREAM)
        self._arm()

    async def _flush(self) -> None:
        self._reports.clear()
        self._arm()
        self._busy_until = min(self._busy_until, round(self._loop.time(), 6))
        if self._playing is not None:
            self._playing = None
            await self.push_frame(BotStoppedSpeakingFrame(), FrameDirection.UPSTREAM)


class _Feeder:
    """Turns the incident's steps into frames at their virtual times, in order."""

    def __init__(self, run: PipecatRun, head: _Head, loop: VirtualTimeLoop) -> None:
        self.run, self.head, self.loop = run, head, loop
        self.tool_names: dict[str, str] = {}
        self.native_turn: int | None = None  # the caller turn that began as a Pipecat frame

    def frames_for(self, step: Step) -> list[Frame]:
        run, proc = self.run, self.run.processor
        if step.deliver_timer is not None:
            kind = step.deliver_timer["timer"]
            return [LullEventFrame(TimerFired(kind, run.timer_ref(kind, step.deliver_timer["generation"])))]
        from ladder import event_from_dict

        data = dict(step.event or {})
        if isinstance(data.get("token"), str):
            data["token"] = run.tokens().get(data["token"], -1)
        event = event_from_dict(data)
        native = self._native(event, proc)
        return [native] if native is not None else [LullEventFrame(event)]

    def _native(self, event: Event, proc: LullProcessor) -> Frame | None:
        kind = type(event)
        # a turn is Pipecat's own when the processor would number and name it so
        if kind is TurnStarted and event.seq == proc._seq + 1 and event.turn == proc.turn_id(event.seq):
            self.native_turn = event.seq
            return UserStartedSpeakingFrame()
        native = event.seq == self.native_turn == proc._seq if kind in (TurnEnded, TurnInterpreted) else False
        if kind is TurnEnded and native and not proc._user_stopped:
            return UserStoppedSpeakingFrame()
        if (kind is TurnInterpreted and native and proc._user_stopped and not proc._interpreted
                and event.intent in SPOKEN_INTENTS):
            words = event.value if event.intent == "answer" and event.value else event.intent
            return TranscriptionFrame(words, "caller", "")
        if kind is ToolStarted:
            self.tool_names[event.call] = event.name
            return FunctionCallInProgressFrame(function_name=event.name, tool_call_id=event.call, arguments={})
        if kind is ToolFinished and event.outcome in ("ok", "failed") and event.call in self.tool_names:
            return FunctionCallResultFrame(
                function_name=self.tool_names[event.call], tool_call_id=event.call, arguments={},
                result={}, error="the tool failed" if event.outcome == "failed" else None,
            )
        return None

    async def feed(self, schedule: tuple[Step, ...], horizon_s: float) -> None:
        for step in schedule:
            await self._at(step.at / 1000.0, SCRIPTED)
            for frame in self.frames_for(step):
                if isinstance(frame, LullEventFrame):
                    self.run.as_events += 1
                else:
                    self.run.as_native += 1
                await self.head.push_frame(frame, FrameDirection.DOWNSTREAM)
            await self.loop.settle()
        await self._at(horizon_s, FINISH)
        await self.loop.settle()

    async def _at(self, when: float, rank: int) -> None:
        woke = self.loop.create_future()
        self.loop.call_at_ranked(max(when, self.loop.time()), rank, woke.set_result, None)
        await woke


async def _run(incident: Incident, record_to: Path | None) -> PipecatRun:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualTimeLoop)
    turn_ids = {s.event["seq"]: s.event["turn"] for s in incident.schedule
                if s.event and s.event.get("kind") == "turn_started"}
    processor = LullProcessor(
        incident.ladder_policy(), matcher=IncidentWords(), end_call_on_close=False,
        journal_dir=record_to, services={"incident": incident.name, "transport": "SimulatedOutput"},
        turn_id=lambda seq: turn_ids.get(seq, f"user-{seq}"),
    )
    loop.late_callbacks.append(processor._fire)  # the core's timers come after what is queued with them
    head = _Head()
    run = PipecatRun(incident, processor)
    output = SimulatedOutput(incident.playback, loop)
    worker = PipelineWorker(
        Pipeline([head, processor, output]),
        params=PipelineParams(enable_heartbeats=False),
        idle_timeout_secs=None, cancel_on_idle_timeout=False, enable_rtvi=False,
    )
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _on_started(_worker, _frame):
        started.set()

    async def drive() -> None:
        await started.wait()
        await _Feeder(run, head, loop).feed(incident.schedule, horizon_ms(incident) / 1000.0)
        run.take_horizon()
        await worker.cancel()

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.gather(runner.run(), drive())
    return run


def run_incident_via_pipecat(incident: Incident, record_to: Path | None = None) -> tuple[Outcome, PipecatRun]:
    """Run one incident through a Pipecat pipeline on virtual time and judge it;
    `record_to`: the processor journals the call there (`source: pipecat`)."""
    run = run_virtual(_run(incident, record_to))
    return run.judged(), run


__all__ = ["PipecatRun", "SimulatedOutput", "run_incident_via_pipecat", "prompt_counts"]
