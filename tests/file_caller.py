"""A caller for the file backend in tests: piper speech at 16 kHz, said into the call from
the next VAD frame on, and a real-time wait for what the call does."""

from __future__ import annotations

import asyncio
import time

import numpy as np


def speech(models, text: str) -> np.ndarray:
    """`text` in the deterministic piper voice, at 16 kHz and a speaking level."""
    from voices.stt import resample

    return resample(models.voice.synthesize_all(text), models.voice.sample_rate, 16000) * 0.8


def talk(backend, audio: np.ndarray) -> None:
    """The caller says `audio` from just after what the backend has already heard."""
    i = backend.fed_samples + 512
    backend.caller_audio = np.concatenate(
        [backend.caller_audio[:i], np.zeros(max(0, i - len(backend.caller_audio)), np.float32), audio]
    )


async def until(predicate, timeout: float = 40, why=lambda: None) -> None:
    """Wait in real time (the file backend plays at real-time pace) for `predicate`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, why()
        await asyncio.sleep(0.02)
