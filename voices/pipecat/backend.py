"""`lull rehearse --backend pipecat`: a live session whose voice loop is a real Pipecat
pipeline.

    CallerFileInput | MicrophoneInput -> VADProcessor(Silero) -> LullWhisperSTT
      -> UserTurnProcessor -> LullProcessor (flow mode, bound to the session)
      -> LullPiperTTS -> ClockedSpeakerOutput | SpeakerOutput

With `telephony="twilio"` the recorded caller is on a phone: Pipecat's websocket server
transport with its TwilioFrameSerializer on 127.0.0.1, and a local Twilio Media Streams
phone playing the recording into it (`voices.pipecat.telephony`):

    transport.input() -> HeardTap -> VAD ... LullPiperTTS -> PlayedMarks -> transport.output()

With `line` (`--line pstn`, with the recorded caller), the caller is on a telephone line
(`voices.line.pstn`): CallerFileInput hands the pipeline what the line's caller->agent
direction delivered, and ClockedSpeakerOutput puts what it played down the agent->caller
direction; mic.wav is what the pipeline heard, out.wav what the caller heard (16 kHz
both), and each answered turn's `turn_latency` adds the line's round trip
(`voices.framework_waits`).

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

from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.turns.user_turn_processor import UserTurnProcessor
from pipecat.workers.runner import WorkerRunner

from ladder.flow.understanding.shared_intents import flow_intents
from voices.backends.voice import decode_options
from voices.framework_backend import FrameworkBackend
from voices.framework_recording import FrameworkRecordings
from voices.understanding.interpret import make_matcher_soon
from voices.line.feed import LineFeed

from .processor import LullProcessor
from .services import LullPiperTTS, LullWhisperSTT
from .turns import lull_turns
from .vad import PauseSafeSileroVAD
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
                 keep_secret_audio: bool = False, on_line: Callable[[str, str], None] | None = None,
                 telephony: str | None = None, line=None) -> None:  # noqa: ANN001
        """`caller`: a recorded caller and a clocked speaker; without it, the microphone
        and speaker (`input_device`, `output_device`: sounddevice indices, None: default).
        `telephony="twilio"` (with `caller`): the caller on a Twilio Media Stream, through
        Pipecat's TwilioFrameSerializer; mic.wav is what the server decoded from the phone
        (16 kHz), out.wav what the phone played (8 kHz).
        A call with a journal folder records mic.wav and out.wav there, on the journal's
        clock (what the microphone heard and the speaker played; masked where a value is
        redacted, unless `keep_secret_audio`).
        `line` (`voices.line.pstn.LineSettings`, with `caller`): the recorded caller on a
        telephone line, both ways."""
        if line is not None and (caller is None or telephony is not None):
            raise ValueError("a telephone line needs a recorded caller, and no telephony (a Twilio stream is its own line)")
        self.models = models
        self._init_edge(on_line, line)
        self.keep_secret_audio = keep_secret_audio
        self.caller = None if caller is None else Path(caller)
        if telephony is not None and (telephony != "twilio" or caller is None):
            raise ValueError(f"telephony {telephony!r}: expected 'twilio', with a recorded caller")
        self.telephony = telephony
        self.carrier = None  # voices.pipecat.telephony.TwilioCarrier, with telephony
        self.input_device, self.output_device = input_device, output_device
        self.aec = aec
        self.echo: RoomEcho | None = None
        self.processor: LullProcessor | None = None
        self.stt: LullWhisperSTT | None = None
        self.output: ClockedSpeakerOutput | SpeakerOutput | None = None
        self.pipeline_input: CallerFileInput | MicrophoneInput | None = None
        self._worker: PipelineWorker | None = None
        self._run: asyncio.Task | None = None
        if telephony == "twilio":
            transport = {
                "transport": "SingleClientWebsocketServerTransport (127.0.0.1; a local Twilio Media Streams phone)",
                "serializer": "TwilioFrameSerializer (8 kHz mu-law; auto_hang_up off)",
            }
        else:
            transport = {"transport": "CallerFileInput/ClockedSpeakerOutput" if caller is not None else "MicrophoneInput/SpeakerOutput"}
        if self.line is not None:
            transport["transport"] += " on a pstn line (voices.line: the input's audio through it, the output's down it)"
        self.journal_header = {
            **self._line_header(),
            "source": "pipecat",
            "pipeline": {
                "pipecat": version("pipecat-ai"), "mode": "flow", **transport,
                "vad": "PauseSafeSileroVAD", "turns": "UserTurnProcessor (VAD and transcription start, LullTurnStop; Lull owns barge-in)",
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
        # the turn so far decoded at each segment: a caller pausing between digits is one code
        self.stt = LullWhisperSTT(self.models.recognizer, options=lambda: decode_options(self.session.runtime),
                                  whole_turn=True)
        rate = self.models.voice.sample_rate
        mic_rate, out_rate = 16_000, rate
        if self.telephony == "twilio":
            from .telephony import PHONE_RATE, TwilioCarrier

            self.carrier = TwilioCarrier(self.caller, out_sample_rate=rate)
            self.pipeline_input, self.output = self.carrier.input(), self.carrier.output()
            out_rate = PHONE_RATE  # what the phone played
        elif self.caller is not None:
            line = self.line
            self.pipeline_input = CallerFileInput(self.caller, line=line.uplink if line is not None else None)
            self.output = ClockedSpeakerOutput(rate, line=LineFeed(line.downlink) if line is not None else None)
            out_rate = self._out_rate(rate)  # on a line: what the caller heard from it
        else:  # laptop speakers: the microphone hears them, the canceller and gate take them out
            self.echo = RoomEcho(enabled=self.aec, stream_delay_ms=40.0)
            self.pipeline_input = MicrophoneInput(self.input_device, self.echo)
            self.pipeline_input.call_state = lambda: self.session.runtime.ladder.state
            self.output = SpeakerOutput(self.output_device, rate, self.echo)
        if self.record_dir is not None:
            self.recordings = FrameworkRecordings(self.session, self.record_dir, mic_rate=mic_rate, out_rate=out_rate,
                                                  keep_secret_audio=self.keep_secret_audio,
                                                  out_delay_ms=self.line.downlink.delay_ms if self.line is not None else 0.0)
            if self.carrier is not None:
                self.carrier.heard.on_frame, self.carrier.phone.on_played = self.recordings.mic, self.recordings.out
            else:
                self.pipeline_input.on_frame, self.output.on_played = self.recordings.mic, self.recordings.out
        output = self.output
        waits = self._start_waits(lambda: output.played, rate)  # on a line: each answered turn's wait
        if waits is not None:
            record = self.pipeline_input.on_frame
            self.pipeline_input.on_frame = lambda loop_time, pcm16: (waits.heard(loop_time, pcm16), record(loop_time, pcm16))
        heard, marks = ([self.carrier.heard], [self.carrier.marks]) if self.carrier is not None else ([], [])
        pipeline = Pipeline([
            self.pipeline_input,
            *heard,
            self.processor.room_gate(),  # a television under the caller: kept from the VAD and STT once known
            VADProcessor(vad_analyzer=PauseSafeSileroVAD(params=VADParams(stop_secs=PAUSE_S))),
            self.stt,
            UserTurnProcessor(user_turn_strategies=lull_turns(self.processor)),
            self.processor,
            LullPiperTTS(self.models.voice),
            *marks,
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
        if self.carrier is not None:
            await self.carrier.dial()  # the phone is on the line before the first prompt plays

    def set_end_of_speech(self, ms: float | None) -> None:
        """The active stages' hold, for the pipeline's stop strategy (LullTurnStop)."""
        if self.processor is not None:
            self.processor.set_end_of_speech(ms)

    async def close(self) -> None:
        self._close_line()
        if self.carrier is not None:
            if self.session is not None and not self.session.closed.is_set():
                figures = self.carrier.figures()
                started = self.carrier.phone.started_at  # the phone's first media message, on the journal's clock
                if started is not None:
                    figures["caller_started_ms"] = round(self.session.now_ms() + (started - asyncio.get_running_loop().time()) * 1000.0, 1)
                self.session.note("twilio_call", figures)
            await self.carrier.hang_up()  # `stop`, as Twilio says when the caller hangs up
        if self._worker is not None and self._run is not None and not self._run.done():
            await self._worker.cancel()
            try:
                await asyncio.wait_for(self._run, 5.0)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
        if self.recordings is not None:
            self.recordings.close()

    # -- what the console and headless runs ask of a backend ---------------------------

    def media_line(self) -> str:
        line = super().media_line()
        if self.telephony == "twilio":
            line += " · Twilio Media Stream (8 kHz mu-law, TwilioFrameSerializer) on 127.0.0.1"
        return line

    @property
    def caller_audio(self):  # noqa: ANN201  CallerFileInput, or the phone (started_at, duration_s)
        if self.carrier is not None:
            return self.carrier.phone
        return self.pipeline_input if isinstance(self.pipeline_input, CallerFileInput) else None

    @property
    def speaker(self):  # noqa: ANN201  ClockedSpeakerOutput, or the phone (played, played_rate)
        if self.carrier is not None:
            return self.carrier.phone
        return self.output if isinstance(self.output, ClockedSpeakerOutput) else None


__all__ = ["PipecatBackend"]
