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
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
from livekit import rtc
from livekit.agents.voice import io

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


class ClockedSpeaker(io.AudioOutput):
    """The agent's audio, taken at the pace a sound card plays it."""

    def __init__(self, sample_rate: int) -> None:
        super().__init__(label="ClockedSpeaker", capabilities=io.AudioOutputCapabilities(pause=False),
                         sample_rate=sample_rate)
        self.rate = sample_rate
        self.played: list[tuple[float, bytes]] = []  # (loop time it is heard from, pcm16)
        self.on_played = lambda loop_time, pcm16: None  # each frame as the card takes it (out.wav)
        self._card_until: float | None = None  # loop time the queued audio ends
        self._segment_start: float | None = None
        self._finish: asyncio.TimerHandle | None = None
        self._start_report: asyncio.TimerHandle | None = None

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


__all__ = ["CallerFileAudio", "ClockedSpeaker"]
