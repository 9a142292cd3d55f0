"""The real-time tests' limits (call_clock): read from the audio the call took in, so a
call slowed by a busy machine is not failed for it, and a call that never ends is."""

from __future__ import annotations

import asyncio

import pytest

from call_clock import heard_seconds, until


class FileLike:
    fed_samples = 0


def test_a_limit_counts_the_calls_audio_not_the_wall_clock():
    backend = FileLike()
    clock = heard_seconds(backend)
    polls = []

    async def slow_call():  # a loaded machine: 0.02 s of audio taken in every other poll
        def done():
            polls.append(clock())
            if len(polls) % 2 == 0:
                backend.fed_samples += 320
            return clock() >= 1.0

        await until(done, 1.5, clock)

    asyncio.run(slow_call())
    assert clock() == pytest.approx(1.0) and len(polls) > 90  # twice the wall time the audio took


def test_a_call_that_takes_in_more_audio_than_its_limit_fails_with_why():
    backend = FileLike()
    clock = heard_seconds(backend)

    def never():
        backend.fed_samples += 1600  # 0.1 s of audio a poll
        return False

    with pytest.raises(AssertionError, match=r"not within 0.5 s of the call's audio: said nothing"):
        asyncio.run(until(never, 0.5, clock, why=lambda: "said nothing"))


def test_a_clock_that_stands_still_is_a_hang():
    with pytest.raises(AssertionError, match="stood still for 0.2 s"):
        asyncio.run(until(lambda: False, 10, heard_seconds(FileLike()), stall_s=0.2))


class Health:
    frames = 0


class Device:
    health = Health()


class Framework:
    pipeline_input = None


def test_a_frameworks_clock_is_its_microphones_blocks_from_the_moment_it_opens():
    backend = Framework()
    clock = heard_seconds(backend)
    assert clock() == 0.0  # not open yet
    backend.pipeline_input = Device()
    backend.pipeline_input.health.frames = 50
    assert clock() == pytest.approx(1.0)  # fifty 20 ms blocks
