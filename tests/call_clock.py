"""A real-time test's limits, on the clock its audio ran on.

A call in real time takes its caller's audio in as it comes: from a recorded caller
at real-time pace (the file backend), or from the audio lab's microphone. On a busy
machine the call takes that audio in later than the wall clock says, and its timers,
decodes and prompts come later with it. A limit read from the wall clock fails such a
call for the machine's load; a limit read from the audio the call has taken in fails
it only for what it did with that audio. A clock that stands still is a hang of its
own: reported after `STALL_S` of wall time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

STALL_S = 30.0
FRAMEWORK_BLOCK_S = 0.02  # a framework device input's blocks (20 ms at 16 kHz)
AUDIO_BLOCK_S = 512 / 16000  # Lull's audio backend's microphone blocks


def heard_seconds(backend) -> Callable[[], float]:  # noqa: ANN001
    """The clock a real-time call's audio runs on: seconds of caller audio `backend`
    has taken in so far (read each time it is asked: the inputs open with the call)."""

    def seconds() -> float:
        if hasattr(backend, "fed_samples"):  # the file backend: the recorded caller's samples
            return backend.fed_samples / 16000
        for name in ("pipeline_input", "input"):  # a framework's microphone (Pipecat, LiveKit)
            if hasattr(backend, name):
                device = getattr(backend, name)
                return 0.0 if device is None else device.health.frames * FRAMEWORK_BLOCK_S
        return backend.health.frames * AUDIO_BLOCK_S  # Lull's audio backend's microphone

    return seconds


async def until(predicate: Callable[[], object], limit_s: float, clock: Callable[[], float],
                why: Callable[[], object] = lambda: None, stall_s: float = STALL_S) -> None:
    """Wait for `predicate`, at most `limit_s` seconds on `clock` (`heard_seconds(backend)`,
    or a virtual loop's `time`)."""
    start = last = clock()
    moved = time.monotonic()
    while not predicate():
        now = clock()
        assert now - start <= limit_s, f"not within {limit_s:g} s of the call's audio: {why()}"
        if now != last:
            last, moved = now, time.monotonic()
        assert time.monotonic() - moved < stall_s, f"the call's audio clock stood still for {stall_s:g} s: {why()}"
        await asyncio.sleep(0.02)


__all__ = ["heard_seconds", "until"]
