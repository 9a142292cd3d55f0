"""The echo gate before a framework's VAD (`voices.room_echo.RoomEcho`) and the device
inputs' health while the agent speaks. The canceller is replaced by a pass-through
whose far end is loud (the agent speaking): what is tested is the gate's decision on
what the canceller left; the canceller itself is tested in test_echo_canceller."""

from __future__ import annotations

import asyncio
import importlib.util

import numpy as np
import pytest

from voices.room_echo import RoomEcho

FRAME = 320  # 20 ms at 16 kHz


class AgentSpeaking:
    """A canceller stand-in: the agent plays at -10 dBFS and what the mic hears passes."""

    far_recent_power = 0.1
    agent_audible = True

    def near(self, samples, t_ms):  # noqa: ANN001
        return np.asarray(samples, np.float32), t_ms


def gated_room(coupling: float = 0.01) -> RoomEcho:
    room = RoomEcho(enabled=False)
    room.canceller = AgentSpeaking()
    room.gate.coupling = coupling  # the echo comes back 20 dB down
    return room


def echo(level: float = 0.03) -> np.ndarray:  # -30 dBFS: within the echo estimate
    return np.full(FRAME, level, np.float32)


def loud() -> np.ndarray:  # -6 dBFS: far louder than the echo could be
    return np.full(FRAME, 0.5, np.float32)


def passed(room: RoomEcho, frames: list[np.ndarray]) -> list[bool]:
    return [bool(np.any(room.heard(f, 20.0 * i))) for i, f in enumerate(frames)]


def test_one_loud_frame_passes_alone_and_the_echo_after_it_is_gated():
    room = gated_room()
    heard = passed(room, [echo(), loud()] + [echo()] * 10)
    assert heard == [False, True] + [False] * 10
    assert room.gated_frames == 11


def test_a_caller_louder_than_the_echo_opens_the_gate_across_their_quieter_stretches():
    room = gated_room()
    heard = passed(room, [echo()] + [loud()] * 5 + [echo()] * 25)
    # ~100 ms of the caller opens it; it stays open HANGOVER_MS after their last loud frame
    assert heard[:6] == [False] + [True] * 5
    open_frames = int(RoomEcho.HANGOVER_MS // 20)
    assert heard[6:6 + open_frames - 1] == [True] * (open_frames - 1)
    assert not any(heard[6 + open_frames:])


def test_loud_frames_scattered_wider_than_the_window_never_open_the_gate():
    room = gated_room()
    pattern = ([loud()] + [echo()] * 24) * 6  # one loud frame every 500 ms
    heard = passed(room, pattern)
    assert sum(heard) == 6
    assert all(h == (i % 25 == 0) for i, h in enumerate(heard))


@pytest.mark.skipif(importlib.util.find_spec("livekit") is None, reason="the livekit extra is not installed")
def test_a_failed_microphone_is_not_recovered_by_the_agents_own_voice():
    """LiveKit's MicrophoneAudio (Pipecat's MicrophoneInput shares the rule): once the mic
    failed, sound heard while the agent is audible may be its echo and is no sign the mic
    is back; the same sound once the agent is quiet is."""
    from ladder import TransportRecovered
    from voices.livekit.audio_io import MicrophoneAudio

    async def run() -> list:
        events: list = []
        room = gated_room()
        mic = MicrophoneAudio(None, room, on_event=events.append, watch_devices=False)
        mic.health.reset(0.0)
        mic.report.failed = True
        mic.health.stream_error("digital_zeros")
        assert mic.health.check(0.0) == "digital_zeros"
        for i in range(20):
            mic._heard(echo(), 20.0 * i)
            mic.health.check(20.0 * i)
        assert events == []
        room.canceller.agent_audible = False
        mic._heard(echo(), 400.0)
        mic._check()
        return events

    events = asyncio.run(run())
    assert events == [TransportRecovered("input")]
