"""The audio backend: a real microphone and speaker through sounddevice (V1, V6, V8).

What the speaker writes (silence included) is handed off, in order with the microphone's
blocks, to the echo canceller as its far end; the microphone goes through the canceller
before the VAD (`voices.backends.voice` follows one utterance from here to the core).
Media health watches the raw microphone; `voices.devices.InputMoveWatch` asks the audio
server whether the capture stream was moved to another source (an unplugged microphone).

On a telephone line (`line`, `--line pstn`), the person at the laptop is the caller on
a phone: the microphone's blocks reach the agent through the line's caller->agent
direction, and the agent's voice reaches the speaker through the agent->caller direction
(`LineSpeaker`). The echo canceller is the agent's: it hears the line, and its far end
is the agent's voice as it went onto the line (the laptop's echo comes back to it down
the line, as a handset's does). mic.wav is what the agent heard from the line, out.wav
what the speaker played from it (16 kHz both).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import numpy as np

from voices.line import g711

from .file import FileSpeaker
from .voice import VAD_RATE, VoiceBackend, VoiceModels


class LineSpeaker(FileSpeaker):
    """The agent's voice down a telephone line to a real speaker.

    The line is a stream that runs through silence too, at the device's pace, and the
    audio callback only copies (`voices.audio`): so the prompts are played here, on the
    loop, as the file backend's speaker plays them (one 10 ms block at a time, silence
    between prompts, a barge-in cut within a block), as the sound card needs them: each
    block goes through `direction` (the line's agent->caller direction) and is queued on
    `card` (`voices.card.CardQueue`, which plays continuously), keeping `LEAD_S` queued.
    A block, and a prompt's events in it, are stamped with the session time the card
    will play it (`session_ms` turns a loop time into one). `on_played(t_ms, block)`
    gets each block as it goes onto the line (at `samplerate`, silence included), and
    `on_heard(t_ms, heard)` what the line delivered of it (at its `rate_out`)."""

    LEAD_S = 0.05  # queued on the card ahead of what it plays: a busy loop's lateness

    def __init__(self, card, direction, *, samplerate: int, on_event: Callable[[str, int, float], None],
                 session_ms: Callable[[float], float], on_played: Callable[[float, np.ndarray], None] | None = None,
                 on_heard: Callable[[float, np.ndarray], None] | None = None) -> None:
        self.card = card
        self.direction = direction
        self._session_ms = session_ms
        self.on_heard = on_heard
        super().__init__(samplerate=samplerate, on_event=on_event, clock_ms=lambda: 0.0, on_played=on_played)

    def start(self) -> None:
        if self._task is None and not self._closed:
            self._task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        while not self._closed:
            self.fill_card()
            await asyncio.sleep(self._block / self.samplerate)

    def fill_card(self) -> None:
        """Queue blocks until the card holds LEAD_S."""
        card, loop = self.card, asyncio.get_running_loop()
        while not self._closed and card.is_open and (card.queued - card.played) / card.device_rate < self.LEAD_S:
            t_ms = self._session_ms(loop.time() + (card.queued - card.played) / card.device_rate)
            block = self._fill(t_ms, 1000.0 / self.samplerate)
            self.blocks += 1
            heard = self.direction.process(block)
            card.queue(g711.pcm16(heard).tobytes())
            if self.on_played is not None:
                self.on_played(t_ms, block)
            if self.on_heard is not None:
                self.on_heard(t_ms, heard)

    def play_until(self, t_ms: float) -> None:  # the card sets the pace, not the session clock
        raise NotImplementedError("a LineSpeaker plays as its card needs")


class AudioBackend(VoiceBackend):
    """A real microphone and speaker through sounddevice, with echo cancellation (on by
    default; `aec=False` only measures) and media health."""

    def __init__(
        self,
        models: VoiceModels,
        *,
        input_device=None,
        output_device=None,
        record_dir: Path | None = None,
        aec: bool = True,
        watch_devices: bool = True,
        **kwargs,
    ) -> None:
        from voices.health import InputHealth

        super().__init__(models, name="audio", health=InputHealth(), record_dir=record_dir, **kwargs)
        self.input_device = input_device
        self.output_device = output_device
        self.aec = aec
        self.watch_devices = watch_devices
        self.mic = None
        self.watch = None
        self.card = None  # on a line: the sound card the line plays into (voices.card.CardQueue)
        self._health_task: asyncio.Task | None = None

    async def start(self) -> None:
        from voices.audio import MicStream, Speaker
        from voices.echo import EchoCanceller

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
            self.played(block, self.output.device_samplerate)

        # no await from here to the mic's start: blocks are posted to this loop, so none
        # is handled before the recorder and the canceller exist
        if self.line is None:
            self.output = Speaker(
                self.output_device, samplerate=self.models.voice.sample_rate, on_event=output_event, loop=loop,
                on_played=played, record=False,
            )
        else:
            self.output = self._line_speaker()
        try:
            self._start_recording()
            self.mic = MicStream(self.input_device, on_frames=frames, loop=loop, on_error=input_error)
            # the module finds the delay itself; the streams' latencies are its first guess (on
            # a line, its far end is handed over as it goes onto the line, LEAD_S before the
            # card plays it, and comes back the line's round trip later)
            if self.line is None:
                delay = self.output.output_latency_ms + self.mic.input_latency_ms
            else:
                delay = (self.card.latency_ms + LineSpeaker.LEAD_S * 1000.0 + self.line.round_trip_ms
                         + self.mic.input_latency_ms)
            self.echo = EchoCanceller(enabled=self.aec, stream_delay_ms=delay)
        except BaseException:
            if self.mic is not None:
                self.mic.close()
            self.output.close()
            if self.card is not None:
                self.card.close()
            raise
        self.mic.start()
        self.health.reset(self.session.now_ms())
        self._health_task = asyncio.ensure_future(self._watch_health())
        if self.watch_devices:
            self._start_watch()

    def _line_speaker(self) -> LineSpeaker:
        """The speaker on a line: prompts down the line into a card at the line's rate
        (16 kHz); the echo canceller's far end is each block as it went onto the line
        (`played`), out.wav what the line delivered to the speaker."""
        from voices.card import CardQueue

        assert self.line is not None and self.session is not None
        direction = self.line.downlink
        self.card = CardQueue(self.output_device, direction.rate_out)
        self.card.open()
        rate = self.models.voice.sample_rate

        def heard(t_ms: float, block: np.ndarray) -> None:
            if self.recorder is not None:
                self.recorder.out_stream(t_ms, block)

        session, loop = self.session, self.loop
        return LineSpeaker(
            self.card, direction, samplerate=rate, on_event=self.on_output_event,
            session_ms=lambda loop_time: session.now_ms() + (loop_time - loop.time()) * 1000.0,
            on_played=lambda t_ms, block: self.played(block, rate), on_heard=heard,
        )

    def _start_watch(self) -> None:
        from voices.devices import MOVED, InputMoveWatch

        def changed(kind: str, detail: str) -> None:  # reader thread: hand off
            self.loop.call_soon_threadsafe(self._input_moved, kind == MOVED, detail)

        self.watch = InputMoveWatch(changed)
        if not self.watch.start() and self.session is not None:
            self.session.note("input_watch", {"active": False, "why": self.watch.error})

    def _input_moved(self, moved: bool, detail: str) -> None:
        """The audio server moved the capture stream: a transport event, never speech."""
        if self.session is None or self.session.closed.is_set():
            return
        self.session.note("input_device", {"moved": moved, "detail": detail})
        if moved:
            self.health.hold(f"device_moved: {detail}"[:120])
        else:
            self.health.release()
        self.check_health()

    def _output_rate(self) -> int:
        if self.line is not None:
            return super()._output_rate()  # what the line delivered
        return self.output.device_samplerate  # what the stream wrote, resampled or not

    async def _watch_health(self) -> None:
        while self.session is not None and not self.session.closed.is_set():
            await asyncio.sleep(0.25)
            self.check_health()

    async def close(self) -> None:
        if self._health_task is not None:
            self._health_task.cancel()
        if self.watch is not None:
            self.watch.close()
        if self.mic is not None:
            self.mic.close()
        await super().close()
        if self.card is not None:
            await asyncio.to_thread(self.card.close)
