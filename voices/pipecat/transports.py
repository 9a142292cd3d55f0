"""Pipecat transports for Lull's rehearsals: a recorded caller or a microphone in, a
clocked speaker or a sound card out.

`CallerFileInput` plays a caller's WAV into the pipeline as a microphone would, in
20 ms chunks at real-time pace, then silence until the call ends. `ClockedSpeakerOutput`
takes the bot's audio as a sound card would, at real-time pace, and keeps what it
played. `MicrophoneInput` and `SpeakerOutput` are a real device through sounddevice
(PortAudio; PulseAudio's null sinks in the audio lab): the microphone's callback only
copies and hands off to the loop (`voices.audio.MicStream`), and so does the speaker's;
`RoomEcho` (voices.room_echo) cancels and gates the agent's own voice out of the microphone.
Pipecat's output transport around either output reports the bot
started and stopped speaking from the audio, as it does for any transport.

On a telephone line (`--line pstn`) the recorded caller is on the line's far end: the
input transport hands the pipeline what the line delivered of each chunk (its
caller->agent direction, `voices.line.pstn`), so the VAD and whisper hear the line, and
the clocked speaker places what the bot said on the line's agent->caller direction
(`voices.line.feed.LineFeed`, which runs it as a stream, silence between prompts) and
hands on what came out of it: what the caller heard.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pipecat.frames.frames import InputAudioRawFrame, OutputAudioRawFrame, StartFrame
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams

from ladder import State
from voices.room_echo import RoomEcho
from voices.stt import load_wav_16k

CHUNK_S = 0.02
RATE = 16_000


class CallerFileInput(BaseInputTransport):
    """A caller WAV (any rate, read as 16 kHz mono) as the pipeline's microphone."""

    def __init__(self, path: Path, *, lead_in_s: float = 0.0, line=None, **kwargs) -> None:  # noqa: ANN001
        """`line`: a telephone line's caller->agent direction (`voices.line.pstn.LineDirection`,
        16 kHz in and out): the pipeline gets what it delivers."""
        super().__init__(TransportParams(audio_in_enabled=True, audio_in_sample_rate=RATE), **kwargs)
        self._audio = load_wav_16k(path)
        self._lead_in = int(lead_in_s * RATE)
        self._line = line
        self._task: asyncio.Task | None = None
        self.started_at: float | None = None  # loop time of the first sample
        self.duration_s = self._audio.size / RATE
        # each block as the microphone gives it, or on a line as the line delivers it (mic.wav)
        self.on_frame = lambda loop_time, pcm16: None

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)
        if self._task is None:
            self._task = self.create_task(self._play())

    async def _play(self) -> None:
        loop = asyncio.get_running_loop()
        chunk = int(CHUNK_S * RATE)
        audio = np.concatenate([np.zeros(self._lead_in, np.float32), self._audio.astype(np.float32)])
        pcm = (np.clip(audio, -1.0, 1.0) * 32767.0).astype(np.int16)
        silence = np.zeros(chunk, np.int16).tobytes()
        self.started_at = t = loop.time()
        i = 0
        while True:  # the microphone runs until the call ends: silence after the caller
            block = pcm[i:i + chunk].tobytes() if i < pcm.size else silence
            if len(block) < 2 * chunk:
                block += b"\0" * (2 * chunk - len(block))
            i += chunk
            if self._line is not None:  # the same 20 ms as the line delivers it, its delay late
                block = self._line.process_pcm16(block)
            self.on_frame(t, block)
            await self.push_audio_frame(InputAudioRawFrame(block, RATE, 1))
            t += CHUNK_S
            await asyncio.sleep(max(0.0, t - loop.time()))

    async def cleanup(self) -> None:
        if self._task is not None:
            await self.cancel_task(self._task)
            self._task = None
        await super().cleanup()


class ClockedSpeakerOutput(BaseOutputTransport):
    """The bot's audio, taken at the pace a sound card plays it; `played` keeps it.

    With `line` (`voices.line.feed.LineFeed` on a telephone line's agent->caller
    direction), what the card plays goes down the line, which runs from the transport's
    start to its end, and `on_played` gets what came out of it (at `heard_rate`): what
    the caller heard. `played` is still what the bot's card played."""

    def __init__(self, sample_rate: int, *, line=None, **kwargs) -> None:  # noqa: ANN001
        super().__init__(TransportParams(audio_out_enabled=True, audio_out_sample_rate=sample_rate), **kwargs)
        self.played: list[tuple[float, bytes]] = []  # (loop time, pcm16) as written
        # each block as the card takes it, or on a line as the caller heard it (out.wav)
        self.on_played = lambda loop_time, pcm16: None
        self.line = line
        self._line_task: asyncio.Task | None = None
        if line is not None:
            line.on_heard = lambda loop_time, pcm16: self.on_played(loop_time, pcm16)
        self._card_until: float | None = None

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        if self.line is not None and self._line_task is None:
            self._line_task = self.create_task(self.line.run())  # the line carries silence until the bot speaks
        await self.set_transport_ready(frame)

    @property
    def played_rate(self) -> int:
        return self.sample_rate

    @property
    def heard_rate(self) -> int:
        """The rate of what `on_played` gets."""
        return self.line.direction.rate_out if self.line is not None else self.sample_rate

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._card_until is None or self._card_until < now:
            self._card_until = now  # idle until now: the card plays this at once
        self.played.append((self._card_until, frame.audio))
        if self.line is not None:
            self.line.place(self._card_until, frame.audio)
        else:
            self.on_played(self._card_until, frame.audio)
        self._card_until += len(frame.audio) / 2 / frame.sample_rate
        await asyncio.sleep(max(0.0, self._card_until - loop.time() - 0.02))  # keep 20 ms queued, as a card does
        return True

    async def cleanup(self) -> None:
        if self._line_task is not None:
            await self.cancel_task(self._line_task)
            self._line_task = None
            self.line.advance(asyncio.get_running_loop().time())  # what the caller heard up to now
        await super().cleanup()


class MicrophoneInput(BaseInputTransport):
    """A sounddevice microphone (16 kHz mono, resampled when the device will not open so);
    with `echo`, the agent's own voice is cancelled and gated out first.

    Its health is watched as on Lull's audio backend (`voices.health.InputHealth`: no
    callbacks, digital zeros, the stream ending, the audio server moving the stream to
    another source). Pipecat has no frame for a dead microphone, so a failure goes
    downstream as `LullEventFrame(TransportFailed("input", why))` and its recovery as
    `TransportRecovered`: the core's channel recovery takes it from there."""

    def __init__(self, device: int | None, echo: RoomEcho | None = None, *, watch_devices: bool = True, **kwargs) -> None:
        from voices.health import InputFailureReport, InputHealth

        super().__init__(TransportParams(audio_in_enabled=True, audio_in_sample_rate=RATE), **kwargs)
        self.device = device
        self.echo = echo
        self.health = InputHealth()
        self.report = InputFailureReport()
        # the core's state, as the backend reads it: with it, a repair injected while the
        # microphone is still dead is followed by the failure again (InputFailureReport)
        self.call_state: Callable[[], State | None] = lambda: None
        self.watch_devices = watch_devices
        self._mic = None
        self._watch = None
        self._health_task: asyncio.Task | None = None
        self.errors: list[str] = []
        self.on_frame = lambda loop_time, pcm16: None  # what the microphone heard (mic.wav)

    @property
    def input_latency_ms(self) -> float:
        return self._mic.input_latency_ms if self._mic is not None else 0.0

    async def start(self, frame: StartFrame) -> None:
        from voices.audio import MicStream

        await super().start(frame)
        await self.set_transport_ready(frame)
        if self._mic is None:
            loop = asyncio.get_running_loop()
            self._mic = MicStream(self.device, samplerate=RATE, blocksize=int(CHUNK_S * RATE),
                                  on_frames=self._heard, loop=loop, on_error=self._lost)
            self._mic.start()
            self.health.reset(time.monotonic() * 1000.0)
            self._health_task = self.create_task(self._watch_health())
            if self.watch_devices:
                self._start_watch(loop)

    def _start_watch(self, loop: asyncio.AbstractEventLoop) -> None:
        from voices.devices import MOVED, InputMoveWatch

        def changed(kind: str, detail: str) -> None:  # the watch's reader thread: hand off
            loop.call_soon_threadsafe(self._moved, kind == MOVED, detail)

        self._watch = InputMoveWatch(changed)
        if not self._watch.start():
            self._watch = None

    def _moved(self, moved: bool, detail: str) -> None:
        if moved:
            self.health.hold(f"device_moved: {detail}"[:120])
        else:
            self.health.release()
        self._check()

    def _lost(self, reason: str) -> None:  # on the loop: the stream ended on its own
        self.errors.append(reason)
        self.health.stream_error(reason)
        self._check()

    async def _watch_health(self) -> None:
        while True:
            await asyncio.sleep(0.25)
            self._check()

    def _check(self) -> None:
        from .frames import LullEventFrame

        event = self.report.verdict(self.health.check(time.monotonic() * 1000.0), self.call_state())
        if event is not None:
            self.create_task(self.push_frame(LullEventFrame(event)))

    def _heard(self, samples: np.ndarray, t_ms: float) -> None:  # on the loop, in hand-off order
        # while the input is down, sound heard as the agent speaks may be its own voice
        # (the echo, a monitor the stream fell back to): no evidence the mic is back, only
        # that its callbacks still come
        own_voice = self.report.failed and self.echo is not None and self.echo.agent_audible
        self.health.observe(samples[:0] if own_voice else samples, t_ms)
        # mic.wav keeps what the microphone heard, the agent's echo and all, at the loop
        # time it was heard (the block's stamp, moved back by how late it was handed off)
        at = asyncio.get_running_loop().time() - max(0.0, time.monotonic() * 1000.0 - t_ms) / 1000.0
        self.on_frame(at, (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int16).tobytes())
        if self.echo is not None:
            samples = self.echo.heard(samples, t_ms)
            if not len(samples):
                return
        pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int16).tobytes()
        self.create_task(self.push_audio_frame(InputAudioRawFrame(pcm, RATE, 1)))

    async def cleanup(self) -> None:
        if self._health_task is not None:
            await self.cancel_task(self._health_task)
            self._health_task = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if self._mic is not None:
            self._mic.close()
            self._mic = None
        await super().cleanup()


class SpeakerOutput(BaseOutputTransport):
    """A sounddevice speaker that runs from start to close, as a sound card does
    (`voices.card.CardQueue`: 10 ms blocks from a queue, each block it played given to
    `echo`, the canceller's far end). `write_audio_frame` queues the bot's audio and
    waits while more than 60 ms is queued, so Pipecat's speaking frames follow what the
    card plays."""

    def __init__(self, device: int | None, sample_rate: int, echo: RoomEcho | None = None, **kwargs) -> None:
        from voices.card import CardQueue

        super().__init__(TransportParams(audio_out_enabled=True, audio_out_sample_rate=sample_rate), **kwargs)
        self.card = CardQueue(device, sample_rate, echo)
        self.on_played = lambda loop_time, pcm16: None  # each frame, when the card will play it (out.wav)

    @property
    def output_latency_ms(self) -> float:
        return self.card.latency_ms

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        self.card.open()
        await self.set_transport_ready(frame)

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        self.on_played(self.card.queue(frame.audio), frame.audio)
        await self.card.keep_pace()
        return True

    async def cleanup(self) -> None:
        if self.card.is_open:
            await asyncio.to_thread(self.card.close)
        await super().cleanup()


__all__ = ["CallerFileInput", "ClockedSpeakerOutput", "MicrophoneInput", "RoomEcho", "SpeakerOutput"]
