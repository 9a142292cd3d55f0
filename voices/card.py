"""A sound card as the framework outputs drive it (Pipecat's `SpeakerOutput`, LiveKit's
`SpeakerAudio`): a sounddevice stream that runs from open to close, 10 ms blocks from
a queue, silence when it is empty.

The audio callback only copies and hands off: it takes the queued samples, counts them
played, and gives each block, on the loop, to `echo` (the canceller's far end).
`queued` and `played` are sample counts at the device's rate, each written by one side
(the producer on the loop, the callback), so either side reads how far the card is.
"""

from __future__ import annotations

import asyncio
from collections import deque

import numpy as np


class CardQueue:
    QUEUED_S = 0.06  # a card keeps about this much queued: the producer waits beyond it

    def __init__(self, device: int | None, sample_rate: int, echo=None) -> None:  # noqa: ANN001
        self.device, self.rate, self.echo = device, sample_rate, echo
        self.device_rate = sample_rate
        self.queued = 0  # device samples appended (the loop) ...
        self.played = 0  # ... and played (the callback)
        self._stream = None
        self._resampler = None
        self._channels = 1
        self._queue: deque[np.ndarray] = deque()  # the loop appends, the callback pops
        self._current = np.zeros(0, np.float32)  # the callback's own
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def is_open(self) -> bool:
        return self._stream is not None

    @property
    def latency_ms(self) -> float:
        return float(self._stream.latency) * 1000.0 if self._stream is not None else 0.0

    def open(self) -> None:
        """Open and start the stream (on the loop); a device that will not open raises
        AudioUnavailable."""
        from voices.audio import StreamResampler, _open_stream, _sd

        if self._stream is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._stream, self.device_rate, self._channels = _open_stream(
            _sd().OutputStream, self.device, "output", self.rate, None, int(self.rate * 0.01),
            latency="low", callback=self._callback)
        if self.device_rate != self.rate:
            self._resampler = StreamResampler(self.rate, self.device_rate)
        self._stream.start()

    def _callback(self, outdata: np.ndarray, frames: int, time_info, status) -> None:  # noqa: ANN001  the audio thread
        block = np.zeros(frames, np.float32)
        filled = 0
        while filled < frames:
            if not len(self._current):
                if not self._queue:
                    break
                self._current = self._queue.popleft()
            take = min(frames - filled, len(self._current))
            block[filled:filled + take] = self._current[:take]
            self._current = self._current[take:]
            filled += take
        self.played += filled
        outdata[:] = block[:, None] if self._channels == 1 else np.repeat(block[:, None], self._channels, axis=1)
        if self.echo is not None and self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self.echo.played, block, self.device_rate)
            except RuntimeError:
                pass  # the call's loop has closed while the card ran out its last block

    def queue(self, pcm16: bytes) -> float:
        """Queue 16-bit audio at `sample_rate`; returns the loop time the card will play
        its first sample (what is queued ahead of it, from now)."""
        samples = np.frombuffer(pcm16, np.int16).astype(np.float32) / 32768.0
        if self._resampler is not None:
            samples = self._resampler.process(samples)
        at = asyncio.get_running_loop().time() + (self.queued - self.played) / self.device_rate
        self._queue.append(samples)
        self.queued += len(samples)
        return at

    async def keep_pace(self) -> None:
        """Wait while more than QUEUED_S is queued, so the producer follows the card."""
        while (self.queued - self.played) / self.device_rate > self.QUEUED_S and self._stream is not None:
            await asyncio.sleep(0.01)

    def drop(self) -> None:
        """What the card has not taken is never played."""
        self._queue.clear()
        self.queued = self.played

    def close(self) -> None:
        """Stop and close the stream (blocks until the card has stopped)."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            from voices.audio import close_stream

            close_stream(stream)


__all__ = ["CardQueue"]
