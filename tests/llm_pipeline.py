"""A whole Pipecat agent beside an LLM, on virtual time, for the model-reading tests:
a scripted caller (the VAD's and the STT's frames at set times), Pipecat's own user
aggregator with `FilterIncompleteUserTurnStrategies`, a `TableLLMService` (a real
`LLMService`, its turn-completion mixin included), `LullProcessor`, a speaker that
plays every prompt and reply as a transport does (bot started/stopped speaking, a
word every 0.3 s), and Pipecat's assistant aggregator keeping the shared context."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMRunFrame,
    LLMTextFrame,
    LLMUpdateSettingsFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair, LLMUserAggregatorParams
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.settings import LLMSettings
from pipecat.turns.user_start.vad_user_turn_start_strategy import VADUserTurnStartStrategy
from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_turn_completion_mixin import UserTurnCompletionConfig
from pipecat.turns.user_turn_strategies import FilterIncompleteUserTurnStrategies, UserTurnStrategies
from pipecat.workers.runner import WorkerRunner

from voices.pipecat import LullProcessor, TableLLMService, lull_turn_completion
from voices.virtual_loop import run_virtual

MS_PER_WORD = 300


@dataclass
class Said:
    at: float  # s on the pipeline's clock
    who: str  # "lull" (a prompt Lull asked for) or "llm" (the model's reply)
    text: str


class ScriptedCaller(FrameProcessor):
    """The transport's input and the STT: at each (start s, words, seconds) the VAD hears
    speech start, the words are transcribed, the VAD hears it stop."""

    def __init__(self, lines: list[tuple[float, str, float]]) -> None:
        super().__init__(name="ScriptedCaller")
        self.lines = lines

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)

    async def say_all(self, start: float) -> None:
        loop = asyncio.get_running_loop()
        for at, words, seconds in self.lines:
            await asyncio.sleep(max(0.0, start + at - loop.time()))
            await self.push_frame(VADUserStartedSpeakingFrame())
            await asyncio.sleep(seconds)
            await self.push_frame(TranscriptionFrame(words, "caller", ""))
            await self.push_frame(VADUserStoppedSpeakingFrame())


class Speaker(FrameProcessor):
    """The output transport: plays Lull's prompts (`TTSSpeakFrame`) and the LLM's replies
    (its text up to the response's end), one at a time, and says so as Pipecat's
    transport does; an interruption cuts what plays."""

    def __init__(self, start: list[float]) -> None:
        super().__init__(name="Speaker")
        self.said: list[Said] = []
        self._start = start
        self._reply: list[str] = []
        self._queue: list[tuple[str, str]] = []
        self._playing: asyncio.Task | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSSpeakFrame):
            self._queue.append(("lull", frame.text))
            self._play_next()
        elif isinstance(frame, LLMTextFrame) and direction is FrameDirection.DOWNSTREAM:
            self._reply.append(frame.text)
        elif isinstance(frame, LLMFullResponseEndFrame) and self._reply:
            text, self._reply = "".join(self._reply).strip(), []
            if text:
                self._queue.append(("llm", text))
                self._play_next()
        elif isinstance(frame, InterruptionFrame) and direction is FrameDirection.DOWNSTREAM:
            self._queue.clear()
            if self._playing is not None and not self._playing.done():
                self._playing.cancel()
                await self._report(BotStoppedSpeakingFrame())
        await self.push_frame(frame, direction)

    def _play_next(self) -> None:
        if self._queue and (self._playing is None or self._playing.done()):
            who, text = self._queue.pop(0)
            self._playing = self.create_task(self._play(who, text))

    async def _play(self, who: str, text: str) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(0.05)
        self.said.append(Said(round(loop.time() - self._start[0], 3), who, text))
        await self._report(BotStartedSpeakingFrame())
        await asyncio.sleep(len(text.split()) * MS_PER_WORD / 1000)
        await self._report(BotStoppedSpeakingFrame())
        self._playing = None
        self._play_next()

    async def _report(self, frame_type) -> None:
        await self.push_frame(frame_type, FrameDirection.UPSTREAM)
        await self.push_frame(type(frame_type)(), FrameDirection.DOWNSTREAM)


@dataclass
class AgentRun:
    lull: LullProcessor
    llm: TableLLMService
    said: list[Said]
    context: LLMContext

    def lull_said(self) -> list[str]:
        return [s.text for s in self.said if s.who == "lull"]

    def llm_said(self) -> list[str]:
        return [s.text for s in self.said if s.who == "llm"]

    def readings(self) -> list[dict]:
        return [data for kind, data in self.lull.notes if kind == "model_reading"]

    def traces(self, kind: str) -> list:
        return [e for _, e in self.lull.effects if type(e).__name__ == "Trace" and e.kind == kind]


def run_agent(table, caller, *, seconds: float, lull: LullProcessor | None = None, config: UserTurnCompletionConfig | None = None,
              greeting: str = "● Hello! What is your account number?", gated: bool = True) -> AgentRun:
    """One call: the greeting, the caller's lines, until `seconds` on the pipeline's clock.
    `gated`: the turn ends when the LLM's marker says so (FilterIncompleteUserTurnStrategies);
    otherwise every pause ends a turn, the LLM still marking its replies, and a new turn
    does not interrupt the LLM (Lull owns barge-in)."""
    lull = lull or LullProcessor(model_reads_turns=True)
    llm = TableLLMService(table, greeting=greeting)
    context = LLMContext()
    config = lull_turn_completion() if config is None else config
    stop = [SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=0.2)]
    if gated:
        strategies = FilterIncompleteUserTurnStrategies(stop=stop, config=config)
    else:
        strategies = UserTurnStrategies(start=[VADUserTurnStartStrategy(enable_interruptions=False)], stop=stop)
    user, assistant = LLMContextAggregatorPair(context, user_params=LLMUserAggregatorParams(user_turn_strategies=strategies))
    start = [0.0]
    head = ScriptedCaller(caller)
    speaker = Speaker(start)
    pipeline = Pipeline([head, lull.transcripts(), user, llm, lull, speaker, assistant])

    async def main() -> None:
        loop = asyncio.get_running_loop()
        start[0] = loop.time()
        worker = PipelineWorker(pipeline, params=PipelineParams(enable_heartbeats=False), idle_timeout_secs=None,
                                cancel_on_idle_timeout=False, enable_rtvi=False)
        started = asyncio.Event()

        @worker.event_handler("on_pipeline_started")
        async def _on_started(_worker, _frame):
            started.set()

        async def script() -> None:
            await started.wait()
            start[0] = loop.time()
            if not gated:  # the markers without the gate: as the gate's strategy sets them
                await worker.queue_frame(LLMUpdateSettingsFrame(delta=LLMSettings(
                    filter_incomplete_user_turns=True, user_turn_completion_config=config)))
            await worker.queue_frame(LLMRunFrame())  # the greeting
            await head.say_all(start[0])
            await asyncio.sleep(max(0.0, start[0] + seconds - loop.time()))
            await worker.cancel()

        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(worker)
        await asyncio.gather(runner.run(), script())

    run_virtual(main())
    return AgentRun(lull, llm, speaker.said, context)
