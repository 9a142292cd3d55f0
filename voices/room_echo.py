"""Lull's echo canceller and echo gate before a framework's VAD, on laptop speakers."""

from __future__ import annotations

from collections import deque

import numpy as np

RATE = 16000


class RoomEcho:
    """What keeps the agent from hearing itself on laptop speakers, shared by the device
    transports of every framework (Pipecat's, LiveKit's audio I/O): Lull's echo canceller
    (WebRTC AEC3, `voices.echo`) fed with every block the speaker played, silence
    included, and Lull's echo gate, which hands the VAD silence for a frame that is no
    louder than the agent's own echo would be.

    The gate opens (for `HANGOVER_MS`, so the VAD hears the caller's words whole) only on
    `EVIDENCE_MS` of frames louder than the echo within `EVIDENCE_WINDOW_MS`, as Lull's own
    backend accepts a barge-in (`voices.backends.voice`: 3 frames of 32 ms in about
    380 ms). A single loud frame (the canceller's residue as a prompt begins after a
    silence) passes alone, too short for a VAD to call speech: with one frame enough, the
    lab's echo path at full volume started a caller turn 0.4 s into the agent's prompt
    and cut it."""

    HANGOVER_MS = 400.0  # how long the gate stays open after the caller was plainly in
    EVIDENCE_MS = 96.0  # of frames louder than the echo estimate ...
    EVIDENCE_WINDOW_MS = 380.0  # ... within this long, to open the gate

    def __init__(self, *, enabled: bool = True, stream_delay_ms: float = 0.0, frame_ms: float = 20.0) -> None:
        from voices.echo import EchoCanceller, EchoGate

        self.canceller = EchoCanceller(enabled=enabled, stream_delay_ms=stream_delay_ms)
        self.gate = EchoGate(frame_ms=frame_ms)
        self.gated_frames = 0
        self._open_until = float("-inf")
        self._evidence: deque[tuple[float, float]] = deque()  # (start, ms) of frames louder than the echo

    @property
    def agent_audible(self) -> bool:
        """The agent's voice may be in the microphone now: sound heard is no evidence of
        a caller, nor of a dead microphone having come back."""
        return self.canceller.agent_audible

    def played(self, block: np.ndarray, rate: int) -> None:
        self.canceller.far(block, rate)

    def heard(self, samples: np.ndarray, t_ms: float) -> np.ndarray:
        from voices.echo import power

        out, first_t = self.canceller.near(samples, t_ms)
        if not len(out):
            return out
        evidence = self.gate.frame(power(out), self.canceller.far_recent_power)
        if evidence:
            self._evidence.append((first_t, len(out) * 1000.0 / RATE))
            while self._evidence and self._evidence[0][0] < first_t - self.EVIDENCE_WINDOW_MS:
                self._evidence.popleft()
            if sum(ms for _, ms in self._evidence) >= self.EVIDENCE_MS:
                self._open_until = first_t + self.HANGOVER_MS
            return out
        if evidence is False and first_t >= self._open_until:
            self.gated_frames += 1
            return np.zeros_like(out)
        return out


__all__ = ["RoomEcho"]
