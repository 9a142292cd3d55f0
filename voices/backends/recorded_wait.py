"""The caller's wait, measured from the recording: the same measure on any backend
(`lull bench turn` puts the file backend and a Pipecat pipeline side by side with it)."""

from __future__ import annotations

import numpy as np

AUDIBLE = 0.01  # a sample this loud (about -40 dBFS) is the agent's voice, not silence


def gaps_from_audio(speech_ends_ms: list[float], played: list[tuple[float, np.ndarray, int]]) -> list[float | None]:
    """The caller's wait, measured the same way on any backend: from the end of each
    turn's speech in the caller's recording to the first audible sample the agent's
    speaker played after it (None: nothing played before the next turn's end)."""
    onsets: list[float] = []
    for t_ms, block, rate in played:
        loud = np.flatnonzero(np.abs(block) >= AUDIBLE)
        if loud.size:
            onsets.append(t_ms + loud[0] * 1000.0 / rate)
    gaps: list[float | None] = []
    for i, end in enumerate(speech_ends_ms):
        until = speech_ends_ms[i + 1] if i + 1 < len(speech_ends_ms) else float("inf")
        first = next((t for t in onsets if end < t < until), None)
        gaps.append(None if first is None else round(first - end, 1))
    return gaps


def speech_end_s(start_s: float, clip: np.ndarray, rate: int) -> float:
    """When the words in `clip` (played from `start_s`) end: its last audible sample."""
    loud = np.flatnonzero(np.abs(clip) >= AUDIBLE)
    return start_s + ((loud[-1] + 1) if loud.size else clip.size) / rate


__all__ = ["AUDIBLE", "gaps_from_audio", "speech_end_s"]
