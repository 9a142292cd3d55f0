"""One direction of a telephone line behind an output that is not a continuous stream.

A framework's speaker (Pipecat's output transport, a LiveKit AudioOutput) only hears of
the agent's audio while the agent speaks; a line carries a stream, silence included (its
noise floor, its packets, its filters' state run on between prompts). `LineFeed` keeps
that stream: the speaker places its audio at the loop time it plays (`place`), and the
line is fed in time order up to the clock (`advance`, every 20 ms while `run` runs),
the audio placed where it was placed and silence between. What comes out of the line
spans the same time as what went in, the line's delay inside it, and goes to
`on_heard(loop_time, pcm16)` at the direction's `rate_out`: what the caller heard.

Audio placed where the line has already been fed is late: the part already carried is
dropped (never, when the speaker places its audio at or after the clock); `drop_from`
takes back what was placed but not yet carried (a barge-in: the speaker's queue cut).
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable

import numpy as np

from . import g711
from .pstn import LineDirection

TICK_S = 0.02  # the line is fed up to the clock this often: one packet


class LineFeed:
    def __init__(self, direction: LineDirection) -> None:
        self.direction = direction
        self.rate = direction.rate_in
        self.on_heard: Callable[[float, bytes], None] = lambda loop_time, pcm16: None
        self.t0: float | None = None  # the loop time of the line's first sample
        self.late_samples = 0  # placed where the line had already carried silence
        self._fed = 0  # samples (at `rate`) the line has carried
        self._heard = 0  # samples (at rate_out) it has delivered
        self._placed: deque[tuple[int, np.ndarray]] = deque()  # (first sample, float samples), in order
        self._end: int | None = None  # the sample after the last one placed

    def start(self, loop_time: float) -> None:
        """The line runs from `loop_time` (once; later calls change nothing)."""
        if self.t0 is None:
            self.t0 = loop_time

    def _index(self, loop_time: float) -> int:
        assert self.t0 is not None
        return round((loop_time - self.t0) * self.rate)

    def place(self, loop_time: float, pcm16: bytes) -> None:
        """16-bit audio at `rate` that plays from `loop_time` on."""
        self.start(loop_time)
        samples = np.frombuffer(pcm16, np.int16).astype(np.float32) / 32768.0
        start = self._index(loop_time)
        if self._end is not None and abs(start - self._end) <= max(1, self.rate // 1000):
            start = self._end  # right after the piece before: a rounding apart is no gap
        if start < self._fed:  # the line already carried that time
            late = min(len(samples), self._fed - start)
            self.late_samples += late
            samples, start = samples[late:], self._fed
        if len(samples):
            self._placed.append((start, samples))
            self._end = start + len(samples)

    def drop_from(self, loop_time: float) -> None:
        """What was placed to play from `loop_time` on is not played."""
        if self.t0 is None:
            return
        cut = max(self._index(loop_time), self._fed)
        kept: deque[tuple[int, np.ndarray]] = deque()
        for start, samples in self._placed:
            if start < cut:
                kept.append((start, samples[: cut - start]))
        self._placed = kept
        self._end = min(self._end, cut) if self._end is not None else None

    def advance(self, loop_time: float) -> None:
        """Feed the line up to `loop_time`: what was placed before it, silence between."""
        if self.t0 is None:
            return
        until = math.floor((loop_time - self.t0) * self.rate)
        n = until - self._fed
        if n <= 0:
            return
        block = np.zeros(n, np.float32)
        while self._placed:
            start, samples = self._placed[0]
            if start >= until:
                break
            a, b = max(start, self._fed), min(start + len(samples), until)
            block[a - self._fed : b - self._fed] = samples[a - start : b - start]
            if start + len(samples) <= until:
                self._placed.popleft()
            else:
                self._placed[0] = (until, samples[until - start :])
        heard = self.direction.process(block)
        at = self.t0 + self._heard / self.direction.rate_out
        self._fed, self._heard = until, self._heard + len(heard)
        if len(heard):
            self.on_heard(at, g711.pcm16(heard).tobytes())

    async def run(self) -> None:
        """Feed the line up to the clock every TICK_S, from now until cancelled."""
        loop = asyncio.get_running_loop()
        self.start(loop.time())
        while True:
            self.advance(loop.time())
            await asyncio.sleep(TICK_S)


__all__ = ["LineFeed", "TICK_S"]
