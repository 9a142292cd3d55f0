"""`lull rehearse --backend pipecat`: a live session whose voice loop is a real Pipecat
pipeline.

    CallerFileInput | MicrophoneInput -> VADProcessor(Silero) -> LullWhisperSTT
      -> UserTurnProcessor -> LullProcessor (flow mode, bound to the session)
      -> LullPiperTTS -> ClockedSpeakerOutput | SpeakerOutput

Pipecat's own VAD (Silero) and start strategies decide when the caller speaks; Lull's
end of turn as the pipeline's stop strategy (`voices.pipecat.turns.LullTurnStop`)
decides when they have finished, as on Lull's own backends; Lull's whisper and piper,
loaded once, hear and speak; Pipecat's output transport reports the bot speaking. The
live session (journal, timers, the console) is the same as on every other backend:
this backend is its edge, and the LullProcessor in the middle is the frame mapping an
agent shipped on Pipecat runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.turns.user_turn_processor import UserTurnProcessor
from pipecat.workers.runner import WorkerRunner

from ladder.flow.shared_intents import flow_intents
from voices.backends.voice import decode_options
from voices.framework_backend import FrameworkBackend
from voices.framework_recording import FrameworkRecordings
from voices.interpret import make_matcher_soon

from .processor import LullProcessor
from .services import LullPiperTTS, LullWhisperSTT
from .turns import lull_turns
from .transports import CallerFileInput, ClockedSpeakerOutput, MicrophoneInput, RoomEcho, SpeakerOutput


# the VAD reports a pause this long after the caller's last word, and the segment's
# words are decoded then; Lull's end of turn (LullTurnStop) holds the turn as long as
# the words need, so the VAD only marks the pause's onset (Pipecat's default, 0.2 s,
# added its whole length to every caller's wait)
PAUSE_S = 0.1


class PipecatBackend(FrameworkBackend):
    name = "pipecat"
    media = "Silero · Lull end of turn"  # what hears the caller, for the media line

    def __init__(self, models, caller: Path | None = None, *, input_device: int | None = None,
                 output_device: int | None = None, aec: bool = True,
                 keep_secret_audio: bool = False, on_line: Callable[[str, str], None] | None = None) -> None:
        """`caller`: a recorded caller and a clocked speaker; without it, the microphone
        and speaker (`input_device`, `output_device`: sounddevice indices, None: default).
        A call with a journal folder records mic.wav and out.wav there, on the journal's
        clock (what the microphone heard and the speaker played; masked where a value is
        redacted, unless `keep_secret_audio`)."""
        self._init_edge(on_line)
        self.models = models
        self.keep_secret_audio = keep_secret_audio
        self.caller = None if caller is None else Path(caller)
        self.input_device, self.output_device = input_device, output_device
        self.aec = aec
        self.echo: RoomEcho | None = None
        self.processor: LullProcessor | None = None
        self.stt: LullWhisperSTT | None = None
        self.output: ClockedSpeakerOutput | SpeakerOutput | None = None
        self.pipeline_input: CallerFileInput | MicrophoneInput | None = None
        self._worker: PipelineWorker | None = None
        self._run: asyncio.Task | None = None
        self.journal_header = {
            "source": "pipecat",
            "pipeline": {
                "pipecat": version("pipecat-ai"), "mode": "flow",
                "transport": "CallerFileInput/ClockedSpeakerOutput" if caller is not None else "MicrophoneInput/SpeakerOutput",
                "vad": "SileroVADAnalyzer", "turns": "UserTurnProcessor (VAD and transcription start, LullTurnStop; Lull owns barge-in)",
                "stt": "LullWhisperSTT", "tts": "LullPiperTTS",
                **({} if caller is not None else {"aec": aec, "echo_gate": True}),
            },
        }

    # -- sessions.live.Backend ---------------------------------------------------------

    def attach(self, session) -> None:
        self.session = session
        self.matcher = make_matcher_soon(flow_intents(session.flow.spec), None, self.models.matcher_kind)
        self.processor = self.adapter = LullProcessor(session=session, matcher=self.matcher, on_line=self._line)

    async def start(self) -> None:
        assert self.processor is not None, "attach() first"
        # the flow's classifier built before the call starts, as on Lull's own backends: a
        # build during the greeting competes for the CPU, and on a busy machine the
        # caller's first answer waited for it past the flow's watchdog ("Sorry, I missed that")
        await asyncio.to_thread(getattr(self.matcher, "get", lambda: self.matcher))
        # the short window for a code or a yes/no, as Lull's own backends decode
        self.stt = LullWhisperSTT(self.models.recognizer, options=lambda: decode_options(self.session.runtime))
        rate = self.models.voice.sample_rate
        if self.caller is not None:
            self.pipeline_input, self.output = CallerFileInput(self.caller), ClockedSpeakerOutput(rate)
        else:  # laptop speakers: the microphone hears them, the canceller and gate take them out
            self.echo = RoomEcho(enabled=self.aec, stream_delay_ms=40.0)
            self.pipeline_input = MicrophoneInput(self.input_device, self.echo)
            self.output = SpeakerOutput(self.output_device, rate, self.echo)
        if self.record_dir is not None:
            self.recordings = FrameworkRecordings(self.session, self.record_dir, mic_rate=16_000, out_rate=rate,
                                                  keep_secret_audio=self.keep_secret_audio)
            self.pipeline_input.on_frame, self.output.on_played = self.recordings.mic, self.recordings.out
        pipeline = Pipeline([
            self.pipeline_input,
            VADProcessor(vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=PAUSE_S))),
            self.stt,
            UserTurnProcessor(user_turn_strategies=lull_turns(self.processor)),
            self.processor,
            LullPiperTTS(self.models.voice),
            self.output,
        ])
        self._worker = PipelineWorker(
            pipeline, params=PipelineParams(enable_heartbeats=False),
            idle_timeout_secs=None, cancel_on_idle_timeout=False, enable_rtvi=False,
        )
        started = asyncio.Event()

        @self._worker.event_handler("on_pipeline_started")
        async def _started(_worker, _frame):
            started.set()

        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(self._worker)
        self._run = asyncio.ensure_future(runner.run())
        await started.wait()  # the processor can push the first prompt

    def set_end_of_speech(self, ms: float | None) -> None:
        """The active stages' hold, for the pipeline's stop strategy (LullTurnStop)."""
        if self.processor is not None:
            self.processor.set_end_of_speech(ms)

    async def close(self) -> None:
        if self._worker is not None and self._run is not None and not self._run.done():
            await self._worker.cancel()
            try:
                await asyncio.wait_for(self._run, 5.0)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
        if self.recordings is not None:
            self.recordings.close()

    # -- what the console and headless runs ask of a backend ---------------------------

    @property
    def caller_audio(self) -> CallerFileInput | None:
        return self.pipeline_input if isinstance(self.pipeline_input, CallerFileInput) else None

    @property
    def speaker(self) -> ClockedSpeakerOutput | None:
        return self.output if isinstance(self.output, ClockedSpeakerOutput) else None


__all__ = ["PipecatBackend"]
