"""A recorded caller and a clocked speaker as an AgentSession's own audio I/O (LiveKit's
`AudioInput` and `AudioOutput` interfaces): a call with real audio, in real time, and
no sound card.

- `CallerFileAudio`: a caller WAV (any rate, read as 16 kHz mono) as the session's
  microphone, 20 ms frames at the pace a microphone gives them, then silence until the
  call ends.
- `ClockedSpeaker`: the agent's audio taken at the pace a sound card plays it (20 ms
  queued, as a card does); it reports each segment heard starting and finished, or cut
  where it was (`clear_buffer`), as LiveKit's room output does. `played` keeps what
  was heard, on the loop's clock.
- `MicrophoneAudio` and `SpeakerAudio`: a real device through sounddevice (PortAudio;
  PulseAudio's null sinks in the audio lab), with Lull's echo canceller and gate
  (`voices.room_echo.RoomEcho`) before the session's VAD. The callbacks only copy and
  hand off to the loop.
- `LineAudioInput`: on a telephone line (`--line pstn`), the session's audio input
  through the line's caller->agent direction (`voices.line.pstn`), a step with a
  `source` as LiveKit's own input wrappers are; the clocked speaker then puts what it
  played down the agent->caller direction (`voices.line.feed.LineFeed`, run as a stream,
  silence between segments) and hands on what came out: what the caller heard.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from livekit import rtc
from livekit.agents.voice import io

from ladder import State
from voices.stt import load_wav_16k

RATE = 16_000
CHUNK_S = 0.02


class CallerFileAudio(io.AudioInput):
    """A recorded caller as the session's microphone."""

    def __init__(self, path: Path, *, lead_in_s: float = 0.0) -> None:
        super().__init__(label="CallerFileAudio")
        self.on_frame = lambda loop_time, pcm16: None  # each frame as the microphone gives it (mic.wav)
        audio = load_wav_16k(path)
        self.duration_s = audio.size / RATE
        audio = np.concatenate([np.zeros(int(lead_in_s * RATE), np.float32), audio.astype(np.float32)])
        self._pcm = (np.clip(audio, -1.0, 1.0) * 32767.0).astype(np.int16)
        self._chunk = int(CHUNK_S * RATE)
        self._i = 0
        self._next: float | None = None  # loop time the next frame is due
        self.started_at: float | None = None  # loop time of the first sample
        self.closed = False

    async def __anext__(self) -> rtc.AudioFrame:
        if self.closed:
            raise StopAsyncIteration
        loop = asyncio.get_running_loop()
        if self._next is None:
            self.started_at = self._next = loop.time()
        await asyncio.sleep(max(0.0, self._next - loop.time()))
        block = self._pcm[self._i:self._i + self._chunk]
        if block.size < self._chunk:  # the microphone runs until the call ends: silence after the caller
            block = np.concatenate([block, np.zeros(self._chunk - block.size, np.int16)])
        self._i += self._chunk
        pcm, at = block.tobytes(), self._next
        self._next += CHUNK_S
        self.on_frame(at, pcm)
        return rtc.AudioFrame(pcm, RATE, 1, self._chunk)

    def close(self) -> None:
        self.closed = True


class LineAudioInput(io.AudioInput):
    """`source`'s frames as a telephone line delivers them: each through `direction` (the
    line's caller->agent direction, `voices.line.pstn.LineDirection`, 16 kHz in and
    out), the same length, the line's delay inside. `on_frame(loop_time, pcm16)` gets
    each as the session hears it (mic.wav), stamped right after the one before while
    they come on time.

        session.input.audio = LineAudioInput(session.input.audio, line.uplink)"""

    def __init__(self, source: io.AudioInput, direction) -> None:  # noqa: ANN001
        super().__init__(label="LineAudioInput", source=source)
        self.direction = direction
        self.on_frame = lambda loop_time, pcm16: None
        self._until: float | None = None  # loop time the last frame ended

    async def __anext__(self) -> rtc.AudioFrame:
        frame = await self.source.__anext__()  # type: ignore[union-attr]
        pcm = bytes(frame.data.cast("B")) if not isinstance(frame.data, bytes) else frame.data
        heard = self.direction.process_pcm16(pcm)
        now = asyncio.get_running_loop().time()
        at = now if self._until is None or abs(now - self._until) > 0.1 else self._until
        self._until = at + len(heard) / 2 / RATE
        self.on_frame(at, heard)
        return rtc.AudioFrame(heard, frame.sample_rate, 1, len(heard) // 2)


class ClockedSpeaker(io.AudioOutput):
    """The agent's audio, taken at the pace a sound card plays it.

    With `line` (`voices.line.feed.LineFeed` on a telephone line's agent->caller
    direction), what the card plays goes down the line, which runs from `start_line()`
    until `stop_line()`, and `on_played` gets what came out of it (at `heard_rate`): what the
    caller heard. `played` is still what the agent's card played."""

    def __init__(self, sample_rate: int, *, line=None) -> None:  # noqa: ANN001
        super().__init__(label="ClockedSpeaker", capabilities=io.AudioOutputCapabilities(pause=False),
                         sample_rate=sample_rate)
        self.rate = sample_rate
        self.played: list[tuple[float, bytes]] = []  # (loop time it is heard from, pcm16)
        # each frame as the card takes it, or on a line as the caller heard it (out.wav)
        self.on_played = lambda loop_time, pcm16: None
        self.line = line
        self._line_task: asyncio.Task | None = None
        if line is not None:
            line.on_heard = lambda loop_time, pcm16: self.on_played(loop_time, pcm16)
        self._card_until: float | None = None  # loop time the queued audio ends
        self._segment_start: float | None = None
        self._finish: asyncio.TimerHandle | None = None
        self._start_report: asyncio.TimerHandle | None = None

    @property
    def played_rate(self) -> int:
        return self.rate

    @property
    def heard_rate(self) -> int:
        """The rate of what `on_played` gets."""
        return self.line.direction.rate_out if self.line is not None else self.rate

    def start_line(self) -> None:
        """On a line: it carries silence from now until the agent speaks (on the loop)."""
        if self.line is not None and self._line_task is None:
            self._line_task = asyncio.ensure_future(self.line.run())

    def stop_line(self) -> None:
        """On a line: what the caller heard up to now, and the line stopped."""
        if self._line_task is not None:
            self._line_task.cancel()
            self._line_task = None
            self.line.advance(asyncio.get_running_loop().time())

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._card_until is None or self._card_until < now:
            self._card_until = now  # idle until now: the card plays this at once
        if self._segment_start is None:
            self._segment_start = self._card_until
            self._start_report = loop.call_at(self._segment_start, self._started)
        pcm = bytes(frame.data)
        self.played.append((self._card_until, pcm))
        if self.line is not None:
            self.line.place(self._card_until, pcm)
        else:
            self.on_played(self._card_until, pcm)
        self._card_until += frame.samples_per_channel / frame.sample_rate
        await asyncio.sleep(max(0.0, self._card_until - loop.time() - CHUNK_S))  # keep 20 ms queued

    def _started(self) -> None:
        self._start_report = None
        self.on_playback_started(created_at=time.time())

    def flush(self) -> None:
        super().flush()
        if self._segment_start is None:
            return
        loop = asyncio.get_event_loop()
        self._finish = loop.call_at(self._card_until, self._finished, self._card_until - self._segment_start)

    def _finished(self, seconds: float) -> None:
        self._finish, self._segment_start = None, None
        self.on_playback_finished(playback_position=seconds, interrupted=False)

    def clear_buffer(self) -> None:
        if self._segment_start is None:
            return
        now = asyncio.get_event_loop().time()
        for handle in (self._finish, self._start_report):
            if handle is not None:
                handle.cancel()
        heard = self._start_report is None  # its start was reported
        self._finish = self._start_report = None
        # what was queued past now is never heard
        if self.line is not None:
            self.line.drop_from(now)
        self.played = [(at, pcm) for at, pcm in self.played if at < now]
        if self.played:
            at, pcm = self.played[-1]
            keep = int(max(0.0, now - at) * self.rate) * 2
            self.played[-1] = (at, pcm[:keep])
        position = max(0.0, now - self._segment_start)
        self._card_until, self._segment_start = now, None
        if heard:
            self.on_playback_finished(playback_position=position, interrupted=True)
        else:
            self.on_playback_finished(playback_position=0.0, interrupted=True)

    def audio(self, since: float) -> np.ndarray:
        """What was heard from loop time `since` on, as float32 mono at `rate`, silence
        where nothing played."""
        if not self.played:
            return np.zeros(0, np.float32)
        end = max(at + len(pcm) / 2 / self.rate for at, pcm in self.played)
        out = np.zeros(int((end - since) * self.rate) + 1, np.float32)
        for at, pcm in self.played:
            i = int(round((at - since) * self.rate))
            samples = np.frombuffer(pcm, np.int16).astype(np.float32) / 32768.0
            if i < 0:
                samples, i = samples[-i:], 0
            out[i:i + samples.size] = samples[: out.size - i]
        return out




class MicrophoneAudio(io.AudioInput):
    """A sounddevice microphone (16 kHz mono, resampled when the device will not open so)
    as the session's audio input; with `echo`, the agent's own voice is cancelled and
    gated out before the session's VAD hears it.

    Its health is watched as on Lull's audio backend (`voices.health.InputHealth`: no
    callbacks, digital zeros, the stream ending, the audio server moving the stream to
    another source). LiveKit has no event for a dead microphone, so a failure is handed
    to `on_event` as `TransportFailed("input", why)` and its recovery as
    `TransportRecovered`: the core's channel recovery takes it from there."""

    def __init__(self, device: int | None, echo=None, *, on_event=None, watch_devices: bool = True) -> None:  # noqa: ANN001
        from voices.health import InputFailureReport, InputHealth

        super().__init__(label="MicrophoneAudio")
        self.device, self.echo = device, echo
        self.on_event = on_event or (lambda event: None)
        self.on_frame = lambda loop_time, pcm16: None  # what the microphone heard (mic.wav)
        self.health = InputHealth()
        self.report = InputFailureReport()
        # the core's state, as the backend reads it: with it, a repair injected while the
        # microphone is still dead is followed by the failure again (InputFailureReport)
        self.call_state: Callable[[], State | None] = lambda: None
        self.watch_devices = watch_devices
        self.errors: list[str] = []
        self._frames: asyncio.Queue = asyncio.Queue()
        self._mic = None
        self._watch = None
        self._health_task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def open(self) -> None:
        """Open the stream (on the loop); a device that will not open raises AudioUnavailable."""
        from voices.audio import MicStream

        if self._mic is not None:
            return
        self._loop = loop = asyncio.get_running_loop()
        self._mic = MicStream(self.device, samplerate=RATE, blocksize=int(CHUNK_S * RATE),
                              on_frames=self._heard, loop=loop, on_error=self._lost)
        self._mic.start()
        self.health.reset(time.monotonic() * 1000.0)
        self._health_task = asyncio.ensure_future(self._watch_health())
        if self.watch_devices:
            from voices.devices import MOVED, InputMoveWatch

            def changed(kind: str, detail: str) -> None:  # the watch's reader thread: hand off
                loop.call_soon_threadsafe(self._moved, kind == MOVED, detail)

            self._watch = InputMoveWatch(changed)
            if not self._watch.start():
                self._watch = None

    async def __anext__(self) -> rtc.AudioFrame:
        if self._mic is None and not self.closed:
            self.open()
        frame = await self._frames.get()
        if frame is None:
            raise StopAsyncIteration
        return frame

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
        event = self.report.verdict(self.health.check(time.monotonic() * 1000.0), self.call_state())
        if event is not None:
            self.on_event(event)

    def _heard(self, samples: np.ndarray, t_ms: float) -> None:  # on the loop, in hand-off order
        # while the input is down, sound heard as the agent speaks may be its own voice
        # (the echo, a monitor the stream fell back to): no evidence the mic is back, only
        # that its callbacks still come
        own_voice = self.report.failed and self.echo is not None and self.echo.agent_audible
        self.health.observe(samples[:0] if own_voice else samples, t_ms)
        at = asyncio.get_running_loop().time() - max(0.0, time.monotonic() * 1000.0 - t_ms) / 1000.0
        self.on_frame(at, (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int16).tobytes())
        if self.echo is not None:
            samples = self.echo.heard(samples, t_ms)
            if not len(samples):
                return
        pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int16)
        self._frames.put_nowait(rtc.AudioFrame(pcm.tobytes(), RATE, 1, pcm.size))

    def close(self) -> None:
        self.closed = True
        if self._health_task is not None:
            self._health_task.cancel()
            self._health_task = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if self._mic is not None:
            self._mic.close()
            self._mic = None
        self._frames.put_nowait(None)


class SpeakerAudio(io.AudioOutput):
    """A sounddevice speaker that runs from open to close, as a sound card does
    (`voices.card.CardQueue`: 10 ms blocks from a queue, each block it played given to
    `echo`, the canceller's far end). `capture_frame` queues the agent's audio and waits
    while more than 60 ms is queued; a segment is reported started when the card
    reaches its first sample and finished when it has played its last, or cut where the
    card was (`clear_buffer`)."""

    def __init__(self, device: int | None, sample_rate: int, echo=None) -> None:  # noqa: ANN001
        from voices.card import CardQueue

        super().__init__(label="SpeakerAudio", capabilities=io.AudioOutputCapabilities(pause=False),
                         sample_rate=sample_rate)
        self.device, self.echo, self.rate = device, echo, sample_rate
        self.card = CardQueue(device, sample_rate, echo)
        self.on_played = lambda loop_time, pcm16: None  # each frame, when the card will play it (out.wav)
        self._segment: tuple[int, asyncio.Task] | None = None  # (first sample, its watcher)
        self._segment_end: int | None = None

    def open(self) -> None:
        """Open the stream (on the loop); a device that will not open raises AudioUnavailable."""
        self.card.open()

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        self.card.open()
        pcm = bytes(frame.data)
        if self._segment is None:
            start = self.card.queued
            self._segment = (start, asyncio.ensure_future(self._heard_from(start)))
        self.on_played(self.card.queue(pcm), pcm)
        await self.card.keep_pace()

    async def _heard_from(self, start: int) -> None:
        """The segment's start when the card reaches it; its end when the card has played it."""
        card = self.card
        while card.played <= start:
            await asyncio.sleep(0.005)
        self.on_playback_started(created_at=time.time())
        while self._segment_end is None or card.played < self._segment_end:
            await asyncio.sleep(0.005)
        seconds = (self._segment_end - start) / card.device_rate
        self._segment, self._segment_end = None, None
        self.on_playback_finished(playback_position=seconds, interrupted=False)

    def flush(self) -> None:
        super().flush()
        if self._segment is not None:
            self._segment_end = self.card.queued

    def clear_buffer(self) -> None:
        if self._segment is None:
            return
        start, watcher = self._segment
        watcher.cancel()
        heard = self.card.played > start
        position = max(0, self.card.played - start) / self.card.device_rate
        self.card.drop()  # what the card has not taken is never heard
        self._segment, self._segment_end = None, None
        self.on_playback_finished(playback_position=position if heard else 0.0, interrupted=True)

    def close(self) -> None:
        self.card.close()


__all__ = ["CallerFileAudio", "ClockedSpeaker", "LineAudioInput", "MicrophoneAudio", "SpeakerAudio"]
