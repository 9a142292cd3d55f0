"""Lull's echo canceller and echo gate before a framework's VAD, on laptop speakers."""

from __future__ import annotations

import numpy as np


class RoomEcho:
    """What keeps the agent from hearing itself on laptop speakers, shared by the device
    transports of every framework (Pipecat's, LiveKit's audio I/O): Lull's echo canceller (WebRTC AEC3, `voices.echo`) fed with every
    block the speaker played, silence included, and Lull's echo gate, which hands the
    VAD silence for a frame that is no louder than the agent's own echo would be."""

    HANGOVER_MS = 400.0  # how long the gate stays open after a frame the caller was plainly in

    def __init__(self, *, enabled: bool = True, stream_delay_ms: float = 0.0, frame_ms: float = 20.0) -> None:
        from voices.echo import EchoCanceller, EchoGate

        self.canceller = EchoCanceller(enabled=enabled, stream_delay_ms=stream_delay_ms)
        self.gate = EchoGate(frame_ms=frame_ms)
        self.gated_frames = 0
        self._open_until = float("-inf")

    def played(self, block: np.ndarray, rate: int) -> None:
        self.canceller.far(block, rate)

    def heard(self, samples: np.ndarray, t_ms: float) -> np.ndarray:
        from voices.echo import power

        out, first_t = self.canceller.near(samples, t_ms)
        if not len(out):
            return out
        evidence = self.gate.frame(power(out), self.canceller.far_recent_power)
        if evidence:
            # the caller, louder than the agent's echo: keep the gate open across the
            # quieter stretches of their words, so the VAD hears them whole
            self._open_until = first_t + self.HANGOVER_MS
        elif evidence is False and first_t >= self._open_until:
            self.gated_frames += 1
            return np.zeros_like(out)
        return out


__all__ = ["RoomEcho"]
