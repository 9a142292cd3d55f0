"""Pipecat transports with no sound card: a recorded caller in, a clocked speaker out.

`CallerFileInput` plays a caller's WAV into the pipeline as a microphone would, in
20 ms chunks at real-time pace, then silence until the call ends. `ClockedSpeakerOutput`
takes the bot's audio as a sound card would, at real-time pace, and keeps what it
played; Pipecat's output transport around it reports the bot started and stopped
speaking from that audio, as it does for any transport.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from pipecat.frames.frames import InputAudioRawFrame, OutputAudioRawFrame, StartFrame
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams

from voices.stt import load_wav_16k

CHUNK_S = 0.02
RATE = 16_000


class CallerFileInput(BaseInputTransport):
    """A caller WAV (any rate, read as 16 kHz mono) as the pipeline's microphone."""

    def __init__(self, path: Path, *, lead_in_s: float = 0.0, **kwargs) -> None:
        super().__init__(TransportParams(audio_in_enabled=True, audio_in_sample_rate=RATE), **kwargs)
        self._audio = load_wav_16k(path)
        self._lead_in = int(lead_in_s * RATE)
        self._task: asyncio.Task | None = None
        self.started_at: float | None = None  # loop time of the first sample
        self.duration_s = self._audio.size / RATE

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
            await self.push_audio_frame(InputAudioRawFrame(block, RATE, 1))
            t += CHUNK_S
            await asyncio.sleep(max(0.0, t - loop.time()))

    async def cleanup(self) -> None:
        if self._task is not None:
            await self.cancel_task(self._task)
            self._task = None
        await super().cleanup()


class ClockedSpeakerOutput(BaseOutputTransport):
    """The bot's audio, taken at the pace a sound card plays it; `played` keeps it."""

    def __init__(self, sample_rate: int, **kwargs) -> None:
        super().__init__(TransportParams(audio_out_enabled=True, audio_out_sample_rate=sample_rate), **kwargs)
        self.played: list[tuple[float, bytes]] = []  # (loop time, pcm16) as written
        self._card_until: float | None = None

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._card_until is None or self._card_until < now:
            self._card_until = now  # idle until now: the card plays this at once
        self.played.append((self._card_until, frame.audio))
        self._card_until += len(frame.audio) / 2 / frame.sample_rate
        await asyncio.sleep(max(0.0, self._card_until - loop.time() - 0.02))  # keep 20 ms queued, as a card does
        return True


__all__ = ["CallerFileInput", "ClockedSpeakerOutput"]
