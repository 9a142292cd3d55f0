"""`lull rehearse --backend livekit`: a live session whose voice loop is a real LiveKit
AgentSession, on device, no room and no server.

    CallerFileAudio | MicrophoneAudio -> AgentSession(vad=Silero, stt=LullWhisperSTT,
      tts=LullPiperTTS) -> LullLadder (flow mode, bound to the live session)
      -> ClockedSpeaker | SpeakerAudio

On the devices, Lull's echo canceller and gate (`voices.room_echo.RoomEcho`) take the
agent's own voice out of the microphone before the session's VAD hears it.

With `line` (`--line pstn`, with the recorded caller), the caller is on a telephone
line (`voices.line.pstn`): the session's audio input is `LineAudioInput` around the
caller's (what the line's caller->agent direction delivered), and the ClockedSpeaker
puts what it played down the agent->caller direction; mic.wav is what the session
heard, out.wav what the caller heard (16 kHz both), and each answered turn's
`turn_latency` adds the line's round trip (`voices.framework_waits`).

LiveKit's own Silero VAD (from the `livekit-plugins-silero` wheel) decides when the
caller speaks and pauses; Lull's end of turn decides when they have finished, in the
adapter and as the session's turn detector (`voices.livekit.turns`; LiveKit's own model
is fetched from a hub at run time, so on device there is none). Lull's whisper and
piper, loaded once, hear and speak. The live session (journal, timers, the console) is
the same as on every other backend: this backend is its edge, and the LullLadder in the
middle is the event mapping an agent shipped on LiveKit runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

from livekit.agents import Agent, AgentSession

from ladder.flow.understanding.shared_intents import flow_intents
from voices.backends.voice import decode_options
from voices.end_of_turn import COMPLETE_VALUE_END_MS, PARTIAL_VALUE_HOLD_MS
from voices.framework_backend import FrameworkBackend
from voices.understanding.interpret import make_matcher_soon
from voices.line.feed import LineFeed

from voices.framework_recording import FrameworkRecordings
from voices.room_echo import RoomEcho

from .adapter import LullLadder
from .audio_io import CallerFileAudio, ClockedSpeaker, LineAudioInput, MicrophoneAudio, SpeakerAudio
from .plugins import LullPiperTTS, LullWhisperSTT


# the VAD reports the end of speech this long after the caller's last word, and the
# segment's words are decoded then; LiveKit's default (0.55 s) is a turn detector of its
# own. Lull's end of turn holds the turn as long as the words need (voices.end_of_turn),
# so the VAD only marks the pause's onset. LiveKit's Silero smooths its speech
# probability (an exponential filter) before counting silence, which put its report
# some 60 ms behind Pipecat's at the same setting: 0.05 s here reports about when
# Pipecat's 0.1 s does
VAD_SILENCE_S = 0.05


def silero_vad(min_silence_s: float = VAD_SILENCE_S):
    """LiveKit's Silero VAD plugin; its model ships in the wheel. (LiveKit registers a
    plugin on the main thread only: import it there, on the loop, before any thread.)"""
    from livekit.plugins import silero

    return silero.VAD.load(min_silence_duration=min_silence_s)


class LiveKitBackend(FrameworkBackend):
    name = "livekit"
    media = "Silero · Lull end of turn"  # what hears the caller, for the media line

    def __init__(self, models, caller: Path | None = None, *, input_device: int | None = None,
                 output_device: int | None = None, aec: bool = True, keep_secret_audio: bool = False,
                 on_line: Callable[[str, str], None] | None = None, line=None) -> None:  # noqa: ANN001
        """`caller`: a recorded caller and a clocked speaker; without it, the microphone
        and speaker (`input_device`, `output_device`: sounddevice indices, None: default).
        A call with a journal folder records mic.wav and out.wav there, on the journal's
        clock (masked where a value is redacted, unless `keep_secret_audio`).
        `line` (`voices.line.pstn.LineSettings`, with `caller`): the recorded caller on a
        telephone line, both ways."""
        if line is not None and caller is None:
            raise ValueError("a telephone line needs a recorded caller")
        self.models = models
        self._init_edge(on_line, line)
        self.caller = None if caller is None else Path(caller)
        self.input_device, self.output_device, self.aec = input_device, output_device, aec
        self.echo: RoomEcho | None = None
        self.keep_secret_audio = keep_secret_audio
        self.agent_session: AgentSession | None = None
        self.stt: LullWhisperSTT | None = None
        self.input: CallerFileAudio | MicrophoneAudio | None = None
        self.output: ClockedSpeaker | SpeakerAudio | None = None
        self.heard_input: LineAudioInput | None = None  # on a line: what the session hears
        self.journal_header = {
            **self._line_header(),
            "source": "livekit",
            "pipeline": {
                "livekit-agents": version("livekit-agents"), "mode": "flow",
                "audio": ("CallerFileAudio/ClockedSpeaker" if caller is not None else "MicrophoneAudio/SpeakerAudio")
                + (" on a pstn line (LineAudioInput around the input; the speaker's audio down the line)" if self.line is not None else ""),
                **({} if caller is not None else {"aec": aec, "echo_gate": True}),
                "vad": "livekit-plugins-silero",
                "turns": "Lull's end of turn (LullTurnDetector; LiveKit's own needs a hub; Lull owns barge-in)",
                "stt": "LullWhisperSTT", "tts": "LullPiperTTS",
            },
        }

    # -- sessions.live.Backend ---------------------------------------------------------

    def attach(self, session) -> None:
        self.session = session
        self.matcher = make_matcher_soon(flow_intents(session.flow.spec), None, self.models.matcher_kind)
        self.adapter = LullLadder(live=session, matcher=self.matcher, on_line=self._line, end_of_turn=True)

    async def start(self) -> None:
        assert self.adapter is not None, "attach() first"
        # the flow's classifier built before the call starts, as on Lull's own backends: a
        # build during the greeting competes for the CPU, and on a busy machine the
        # caller's first answer waited for it past the flow's watchdog ("Sorry, I missed that")
        await asyncio.to_thread(getattr(self.matcher, "get", lambda: self.matcher))
        # the short window for a code or a yes/no, as Lull's own backends decode
        # the turn so far decoded at each utterance: a caller pausing between digits is one code
        self.stt = LullWhisperSTT(self.models.recognizer, options=lambda: decode_options(self.session.runtime),
                                  whole_turn=True)
        vad = silero_vad()  # about a second, once
        self.agent_session = AgentSession(
            vad=vad, stt=self.stt, tts=LullPiperTTS(self.models.voice), user_away_timeout=None,
            # the session's own endpointing reads the words as Lull does (voices.livekit.turns)
            turn_handling={"turn_detection": self.adapter.turn_detector(), "endpointing": {
                "min_delay": COMPLETE_VALUE_END_MS / 1000.0, "max_delay": PARTIAL_VALUE_HOLD_MS / 1000.0}},
        )
        rate = self.models.voice.sample_rate
        if self.caller is not None:
            line = self.line
            self.input = CallerFileAudio(self.caller)
            self.output = ClockedSpeaker(rate, line=LineFeed(line.downlink) if line is not None else None)
            if line is not None:
                self.heard_input = LineAudioInput(self.input, line.uplink)
        else:  # laptop speakers: the microphone hears them, the canceller and gate take them out
            self.echo = RoomEcho(enabled=self.aec, stream_delay_ms=40.0)
            self.input = MicrophoneAudio(self.input_device, self.echo, on_event=self._feed)
            self.input.call_state = lambda: self.session.runtime.ladder.state
            self.output = SpeakerAudio(self.output_device, rate, self.echo)
            self.output.open()  # the card runs from here on, as the canceller's far end needs
            self.input.open()
        heard = self.heard_input or self.input  # what the session hears
        # a television under the caller: kept from the session's VAD and STT once known
        self.agent_session.input.audio = self.adapter.room_gate(heard)
        self.agent_session.output.audio = self.output
        if self.record_dir is not None:
            self.recordings = FrameworkRecordings(self.session, self.record_dir, mic_rate=16_000, out_rate=self._out_rate(rate),
                                                  keep_secret_audio=self.keep_secret_audio,
                                                  out_delay_ms=self.line.downlink.delay_ms if self.line is not None else 0.0)
            heard.on_frame, self.output.on_played = self.recordings.mic, self.recordings.out
        output = self.output
        waits = self._start_waits(lambda: output.played, rate)  # on a line: each answered turn's wait
        if waits is not None:
            record = heard.on_frame
            heard.on_frame = lambda loop_time, pcm16: (waits.heard(loop_time, pcm16), record(loop_time, pcm16))
        if isinstance(self.output, ClockedSpeaker):
            self.output.start_line()
        self.adapter.attach(self.agent_session)
        await self.agent_session.start(Agent(instructions="A Lull flow speaks through this session; there is no LLM."))

    def set_end_of_speech(self, ms: float | None) -> None:
        """The active stages' hold, for Lull's end of turn."""
        if self.adapter is not None:
            self.adapter.judge.set_end_of_speech(ms)

    async def close(self) -> None:
        self._close_line()
        if self.input is not None:
            self.input.close()
        if isinstance(self.output, ClockedSpeaker):
            self.output.stop_line()
        if isinstance(self.output, SpeakerAudio):
            await asyncio.to_thread(self.output.close)
        if self.agent_session is not None:
            try:
                await asyncio.wait_for(self.agent_session.aclose(), 5.0)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
        if self.recordings is not None:
            self.recordings.close()

    # -- what the console and headless runs ask of a backend ---------------------------

    @property
    def caller_audio(self) -> CallerFileAudio | None:
        return self.input if isinstance(self.input, CallerFileAudio) else None

    @property
    def speaker(self) -> ClockedSpeaker | None:
        return self.output if isinstance(self.output, ClockedSpeaker) else None


__all__ = ["LiveKitBackend"]
