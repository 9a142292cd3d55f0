"""The voice backends: piper speaks, Silero VAD and whisper listen (V1-V7).

`VoiceBackend` joins the edges to the live session. The audio and file backends
differ only in where frames come from and where the agent's audio goes:

- audio: `voices.audio.MicStream` and `Speaker` on real devices, with media health;
- file: a caller WAV read at real-time pace, and a simulated speaker that plays the
  agent's audio onto the session clock.

With a recording folder, mic.wav and out.wav are written while the call runs
(`voices.recording`), so a killed session keeps its audio up to its last half second.

Blocking work (synthesis, recognition) runs in one worker thread each; results are
posted back to the loop. Every caller turn records its latency breakdown: end of
speech detected -> transcript -> decision -> first agent audio out.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ladder import (
    CallerUtterance,
    PlaybackCompleted,
    PlaybackInterrupted,
    PlaybackStarted,
    PromptFailed,
    RequestPrompt,
    TransportFailed,
    TransportRecovered,
    TurnEnded,
    TurnStarted,
)

from voices.recording import CallRecorder, refuse_existing

if TYPE_CHECKING:
    from .live import LiveSession

VAD_RATE = 16000
logging.getLogger("faster_whisper").setLevel(logging.WARNING)  # its INFO lines would tear the TUI


@dataclass
class TurnLatency:
    """One caller turn's path through the agent, in session ms."""

    turn: str
    end_of_speech: float  # the VAD decided the turn ended
    audio_s: float = 0.0
    transcript: float | None = None  # whisper returned
    decision: float | None = None  # the core handled the utterance
    first_audio: float | None = None  # the next prompt's first sample reached the output
    stt_s: float = 0.0  # whisper's own decode time

    def as_dict(self) -> dict:
        def gap(a, b):
            return None if a is None or b is None else round(b - a, 1)

        return {
            "turn": self.turn,
            "audio_s": round(self.audio_s, 3),
            "eos_to_transcript_ms": gap(self.end_of_speech, self.transcript),
            "transcript_to_decision_ms": gap(self.transcript, self.decision),
            "decision_to_first_audio_ms": gap(self.decision, self.first_audio),
            "eos_to_first_audio_ms": gap(self.end_of_speech, self.first_audio),
            "stt_decode_ms": round(self.stt_s * 1000, 1),
        }


class FileSpeaker:
    """A speaker with no device: plays queued audio in real time on the session clock.

    `on_played(t_ms, chunk)`, if set, hears each chunk as it starts playing (what a
    recording of this speaker holds: the chunks at their times, silence between).
    """

    def __init__(
        self,
        *,
        samplerate: int,
        on_event: Callable[[str, int, float], None],
        clock_ms: Callable[[], float],
        pad_ms: float = 150,
        on_played: Callable[[float, np.ndarray], None] | None = None,
    ) -> None:
        self.samplerate = samplerate
        self.on_played = on_played
        self._on_event = on_event
        self._clock_ms = clock_ms
        self._pad = pad_ms / 1000.0
        self._queue: list[int] = []
        self._chunks: dict[int, list[np.ndarray]] = {}
        self._finished: set[int] = set()
        self._cancelled: set[int] = set()
        self._playing: int | None = None
        self._task: asyncio.Task | None = None

    def append(self, token: int, chunk: np.ndarray) -> None:
        if token in self._cancelled:
            return
        if token not in self._chunks:
            self._chunks[token] = []
            self._queue.append(token)
        self._chunks[token].append(np.asarray(chunk, dtype=np.float32))
        self._kick()

    def finish(self, token: int) -> None:
        self._chunks.setdefault(token, [])
        if token not in self._queue and token not in self._cancelled:
            self._queue.append(token)
        self._finished.add(token)
        self._kick()

    @property
    def idle(self) -> bool:
        """Nothing queued or playing (the same question `voices.audio.Speaker` answers)."""
        return not self._queue

    def enqueue(self, token: int, audio: np.ndarray) -> None:
        self.append(token, audio)
        self.finish(token)

    def interrupt(self, token: int) -> bool:
        self._cancelled.add(token)
        if token in self._queue:
            self._queue.remove(token)
        return self._playing == token

    def _kick(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._play())

    async def _play(self) -> None:
        while self._queue:
            token = self._queue[0]
            started = False
            while token not in self._cancelled:
                chunks = self._chunks.get(token, [])
                if chunks:
                    chunk = chunks.pop(0)
                    now = self._clock_ms()
                    if not started:
                        started = True
                        self._playing = token
                        self._on_event("started", token, now)
                    if self.on_played is not None:
                        self.on_played(now, chunk)
                    await asyncio.sleep(len(chunk) / self.samplerate)
                elif token in self._finished:
                    break
                else:
                    await asyncio.sleep(0.005)  # the next sentence is still being synthesized
            if token in self._queue:
                self._queue.remove(token)
            self._playing = None
            if token in self._cancelled:
                if started:
                    self._on_event("interrupted", token, self._clock_ms())
                continue
            await asyncio.sleep(self._pad)
            self._on_event("completed", token, self._clock_ms())

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


@dataclass
class VoiceModels:
    """The on-device models, loaded once (in a worker: loading takes a few tenths)."""

    voice: Any
    recognizer: Any
    vad_model: Path | None = None
    matcher_kind: str = "embedding"
    load_s: dict = field(default_factory=dict)

    @classmethod
    def load(cls, *, voice_path: str | None = None, stt_model: str | None = None, deterministic: bool = False, matcher: str = "embedding") -> VoiceModels:
        from voices.stt import WhisperRecognizer
        from voices.tts import PiperVoice

        t = time.monotonic()
        voice = PiperVoice(voice_path, deterministic=deterministic)
        t_voice = time.monotonic() - t
        t = time.monotonic()
        recognizer = WhisperRecognizer(stt_model)
        t_stt = time.monotonic() - t
        return cls(voice, recognizer, matcher_kind=matcher, load_s={"piper": t_voice, "whisper": t_stt})


class VoiceBackend:
    """Speak and listen through real models; `io` decides where audio comes and goes."""

    def __init__(
        self,
        models: VoiceModels,
        *,
        name: str,
        end_of_speech_ms: float = 700,
        health: Any = None,
        record_dir: Path | None = None,
    ) -> None:
        self.name = name
        self.models = models
        self.on_line: Callable[[str, str], None] = lambda who, text: None
        self.session: LiveSession | None = None
        self.output: Any = None
        self.health = health
        if record_dir is not None:
            refuse_existing(record_dir)  # before any journal is made beside it
        self.record_dir = record_dir
        self.recorder: CallRecorder | None = None
        self.default_end_of_speech_ms = end_of_speech_ms
        self.latencies: list[TurnLatency] = []
        self.level_dbfs = -120.0
        self.lose_next_completion = False
        self.delay_next_completion_ms = 0.0
        self._tts = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lull-tts")
        self._stt = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lull-stt")
        self._cancelled: set[int] = set()
        self._texts: dict[int, str] = {}
        self._turns = 0
        self._open_turn: tuple[str, int] | None = None
        self._pending_latency: TurnLatency | None = None
        self._input_failed = False
        self._previews = 0
        self.matcher = None
        self.segmenter = None

    # -- wiring ----------------------------------------------------------------------

    def attach(self, session: LiveSession) -> None:
        from voices.vad import SileroVad, SpeechSegmenter

        self.session = session
        # 300 ms of pre-roll: the VAD decides a little after the first syllable starts
        self.segmenter = SpeechSegmenter(
            SileroVad(self.models.vad_model), end_of_speech_ms=self.default_end_of_speech_ms, pre_roll_ms=300
        )
        spec = session.flow.spec
        if self.models.matcher_kind == "embedding":
            from voices.interpret import make_matcher

            self.matcher = make_matcher(dict(spec.intents), None, "embedding")
        else:
            from ladder.flow.text import LexicalMatcher

            self.matcher = LexicalMatcher(dict(spec.intents), spec.intent_threshold)

    def session_ms(self, monotonic_ms: float) -> float:
        """A device timestamp (time.monotonic in ms) on the journal's clock."""
        assert self.session is not None
        return self.session.from_monotonic_ms(monotonic_ms)

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()

    # -- recording (S1, S6) ---------------------------------------------------------------

    def open_recordings(self, folder: Path) -> None:
        """Record mic.wav and out.wav into `folder` while the call runs: from now if the
        output is up, else from `start()`. Again for the same folder it does nothing;
        it refuses a folder that already holds a recording."""
        folder = Path(folder)
        current = self.recorder.folder if self.recorder is not None else self.record_dir
        if current is not None and current.resolve() != folder.resolve():
            raise ValueError(f"{folder}: this call already records into {current}")
        if current is None:
            refuse_existing(folder)
            self.record_dir = folder
        if self.output is not None:
            self._start_recording()

    def _start_recording(self) -> None:
        """Once the output exists (its rate is known); before any audio flows."""
        if self.record_dir is None or self.recorder is not None:
            return
        self.recorder = CallRecorder(
            self.record_dir, mic_rate=VAD_RATE, out_rate=self._output_rate(), out_clock_ms=self._output_clock()
        )

    def _output_rate(self) -> int:
        return self.models.voice.sample_rate

    def _output_clock(self) -> Callable[[], float] | None:
        """For an output silent between prompts: the clock its recording runs on to."""
        return None

    def _finish_recordings(self) -> None:
        if self.recorder is not None:
            self.recorder.close()

    def write_recordings(self, folder: Path) -> None:
        """At stop: mic.wav and out.wav are complete on disk (they were written as the
        call ran, starting at session time 0, aligned to the journal). Nothing is
        written for a call that was never given a recording folder."""
        self._finish_recordings()

    # -- speaking ----------------------------------------------------------------------

    def speak(self, prompt: RequestPrompt) -> None:
        self._texts[prompt.token] = prompt.text
        self._tts.submit(self._synthesize, prompt.token, prompt.text)

    def _synthesize(self, token: int, text: str) -> None:
        """Worker thread: one chunk per sentence, stopping between chunks when cancelled."""
        try:
            for chunk in self.models.voice.synthesize(text, cancelled=lambda: token in self._cancelled):
                self.loop.call_soon_threadsafe(self.output.append, token, chunk)
        except Exception as exc:  # an edge failing is an event for the core, not a crash
            self.loop.call_soon_threadsafe(self._feed, PromptFailed(token, f"tts_error: {exc}"))
            return
        self.loop.call_soon_threadsafe(self.output.finish, token)

    def cancel(self, token: int) -> None:
        self._cancelled.add(token)
        if self.output is not None:
            self.output.interrupt(token)

    def play_preview(self, audio: np.ndarray, rate: int) -> None:
        """The prompt editor's spoken preview: played, but not a prompt of the call."""
        self._previews -= 1
        token = self._previews  # negative tokens are never the core's
        self.loop.call_soon_threadsafe(self.output.enqueue, token, audio)

    def on_output_event(self, kind: str, token: int, t_ms: float) -> None:
        """On the loop: the output's observation of a prompt (t_ms on the session clock)."""
        if token < 0:
            return  # a preview: the call never asked for it
        if kind == "started":
            self.on_line("agent", self._texts.get(token, ""))
            if self._pending_latency is not None and self._pending_latency.first_audio is None:
                self._pending_latency.first_audio = t_ms
                self._finish_latency()
            self._feed(PlaybackStarted(token))
        elif kind == "completed":
            if self.lose_next_completion:
                self.lose_next_completion = False
                return
            if self.delay_next_completion_ms:
                delay, self.delay_next_completion_ms = self.delay_next_completion_ms, 0.0
                self.loop.call_later(delay / 1000.0, self._feed, PlaybackCompleted(token))
                return
            self._feed(PlaybackCompleted(token))
        elif kind == "interrupted":
            self._feed(PlaybackInterrupted(token))

    # -- listening ----------------------------------------------------------------------

    def set_end_of_speech(self, ms: float | None) -> None:
        if self.segmenter is not None:
            self.segmenter.end_of_speech_ms = ms if ms is not None else self.default_end_of_speech_ms

    def on_frames(self, frames: np.ndarray, t_ms: float) -> None:
        """On the loop: 16 kHz mono frames; t_ms on the session clock (first sample)."""
        if self.session is None or self.session.closed.is_set():
            return  # frames still in flight after the call ended
        if self.recorder is not None:
            self.recorder.mic(t_ms, frames.copy())
        if self.health is not None and not (self._input_failed and self.speaking):
            # while the input is down, sound heard as the agent speaks may be its own
            # voice (a monitor the stream fell back to): it is no evidence the mic is back
            self.health.observe(frames, t_ms)
        for event in self.segmenter.feed(frames, t_ms):
            if event.kind == "speech_started":
                self._turns += 1
                self._open_turn = (f"heard-{self._turns}", self._turns)
                self._feed(TurnStarted(*self._open_turn))
            elif event.kind == "speech_ended" and self._open_turn is not None:
                turn, seq = self._open_turn
                self._open_turn = None
                self._feed(TurnEnded(turn, seq))
                latency = TurnLatency(turn, event.t_ms, audio_s=len(event.audio) / VAD_RATE if event.audio is not None else 0.0)
                self._stt.submit(self._recognize, turn, seq, event.audio, latency)
        self.level_dbfs = self.segmenter.level_dbfs

    def _recognize(self, turn: str, seq: int, audio: np.ndarray | None, latency: TurnLatency) -> None:
        """Worker thread: whisper, then back to the loop with the words (or the failure)."""
        from voices.stt import RecognizerError

        try:
            recognition = self.models.recognizer.transcribe(audio if audio is not None else np.zeros(0, np.float32))
        except RecognizerError as exc:
            self.loop.call_soon_threadsafe(self._feed, TransportFailed("recognizer", str(exc)[:120]))
            return
        self.loop.call_soon_threadsafe(self._heard, turn, seq, recognition, latency)

    def _heard(self, turn: str, seq: int, recognition, latency: TurnLatency) -> None:
        assert self.session is not None
        latency.transcript = self.session.now_ms()
        latency.stt_s = recognition.decode_s
        text = recognition.text
        intent, score = self.matcher.match(text) if text else (None, 0.0)
        self.on_line("caller", text or f"({recognition.reason})")
        self._feed(CallerUtterance(turn, seq, text, intent, score, recognition.reason))
        latency.decision = self.session.now_ms()
        self._pending_latency = latency

    def _finish_latency(self) -> None:
        latency = self._pending_latency
        self._pending_latency = None
        if latency is None:
            return
        self.latencies.append(latency)
        if self.session is not None:
            self.session.note("turn_latency", latency.as_dict())

    def say(self, text: str) -> None:
        """A typed caller turn, beside the spoken ones (useful to steer a rehearsal)."""
        from .text_backend import typed_turn

        self._turns += 1
        self.on_line("caller", text)
        typed_turn(self._feed, self.matcher, text, 10_000 + self._turns)

    @property
    def speaking(self) -> bool:
        if self.output is None:
            return False
        return not self.output.idle

    # -- health ----------------------------------------------------------------------------

    def check_health(self) -> None:
        if self.health is None or self.session is None:
            return
        reason = self.health.check(self.session.now_ms())
        if reason == "recovered" and self._input_failed:
            self._input_failed = False
            self._feed(TransportRecovered("input"))
        elif reason is not None and reason != "recovered" and not self._input_failed:
            self._input_failed = True
            self._feed(TransportFailed("input", reason))

    def media_line(self) -> str:
        health = "healthy" if self.health is None or self.health.healthy else "INPUT DEAD"
        bars = max(0, min(20, int((self.level_dbfs + 80) / 4)))
        return f"{self.name} backend  mic {'▮' * bars}{'·' * (20 - bars)} {self.level_dbfs:5.0f} dBFS  input {health}"

    # -- helpers --------------------------------------------------------------------------

    def _feed(self, event) -> None:
        if self.session is not None and not self.session.closed.is_set():
            self.session.feed(event)

    async def close(self) -> None:
        self._tts.shutdown(wait=False, cancel_futures=True)
        self._stt.shutdown(wait=False, cancel_futures=True)
        if self.output is not None:
            self.output.close()
        self._finish_recordings()  # the streams are stopped: nothing more to record


class FileBackend(VoiceBackend):
    """Caller WAV in at real-time pace, the agent's audio out to a timeline (out.wav)."""

    def __init__(self, models: VoiceModels, caller: Path, *, record_dir: Path | None = None, **kwargs) -> None:
        super().__init__(models, name="file", record_dir=record_dir, **kwargs)
        from voices.stt import load_wav_16k

        self.caller_audio = load_wav_16k(caller)
        self._feeder: asyncio.Task | None = None

    async def start(self) -> None:
        await super().start()
        assert self.session is not None
        self.output = FileSpeaker(
            samplerate=self.models.voice.sample_rate,
            on_event=self.on_output_event,
            clock_ms=self.session.now_ms,
            on_played=self._played,
        )
        self._start_recording()
        self._feeder = asyncio.ensure_future(self._feed_caller())

    def _played(self, t_ms: float, chunk: np.ndarray) -> None:
        if self.recorder is not None:
            self.recorder.out_piece(t_ms, chunk)

    def _output_clock(self) -> Callable[[], float] | None:
        assert self.session is not None
        return self.session.now_ms

    async def _feed_caller(self) -> None:
        """512-sample frames at real-time pace; silence with a faint noise floor after the file."""
        frame = 512
        audio = self.caller_audio
        rng = np.random.default_rng(7)
        i = 0
        assert self.session is not None
        t0 = self.session.now_ms()
        while not self.session.closed.is_set():
            due = t0 + i / VAD_RATE * 1000.0
            delay = (due - self.session.now_ms()) / 1000.0
            if delay > 0:
                await asyncio.sleep(delay)
            chunk = audio[i : i + frame]
            if len(chunk) < frame:
                noise = (rng.standard_normal(frame - len(chunk)) * 1e-4).astype(np.float32)
                chunk = np.concatenate([chunk, noise])
            self.on_frames(chunk.astype(np.float32), due)
            i += frame

    async def close(self) -> None:
        if self._feeder is not None:
            self._feeder.cancel()
        await super().close()


class AudioBackend(VoiceBackend):
    """A real microphone and speaker through sounddevice, with media health (V6)."""

    def __init__(self, models: VoiceModels, *, input_device=None, output_device=None, record_dir: Path | None = None, **kwargs) -> None:
        from voices.health import InputHealth

        super().__init__(models, name="audio", health=InputHealth(), record_dir=record_dir, **kwargs)
        self.input_device = input_device
        self.output_device = output_device
        self.mic = None
        self._health_task: asyncio.Task | None = None

    async def start(self) -> None:
        from voices.audio import MicStream, Speaker

        await super().start()
        loop = self.loop

        def frames(data: np.ndarray, t_ms: float) -> None:
            # the stream stamps the frame's last sample; the segmenter wants its first
            self.on_frames(data, self.session_ms(t_ms) - len(data) / VAD_RATE * 1000.0)

        def output_event(kind: str, token: int, t_ms: float) -> None:
            self.on_output_event(kind, token, self.session_ms(t_ms))

        def input_error(reason: str) -> None:
            self.health.stream_error(reason)
            self.check_health()

        def played(block: np.ndarray, t_ms: float) -> None:
            if self.recorder is not None:
                self.recorder.out_stream(self.session_ms(t_ms), block)

        # no await from here to the mic's start: blocks are posted to this loop, so none
        # is handled before the recorder exists
        self.output = Speaker(
            self.output_device, samplerate=self.models.voice.sample_rate, on_event=output_event, loop=loop,
            on_played=played, record=False,
        )
        try:
            self._start_recording()
        except BaseException:
            self.output.close()
            raise
        self.mic = MicStream(self.input_device, on_frames=frames, loop=loop, on_error=input_error)
        self.mic.start()
        self.health.reset(self.session.now_ms())
        self._health_task = asyncio.ensure_future(self._watch_health())

    def _output_rate(self) -> int:
        return self.output.device_samplerate  # what the stream wrote, resampled or not

    async def _watch_health(self) -> None:
        while self.session is not None and not self.session.closed.is_set():
            await asyncio.sleep(0.25)
            self.check_health()

    async def close(self) -> None:
        if self._health_task is not None:
            self._health_task.cancel()
        if self.mic is not None:
            self.mic.close()
        await super().close()
