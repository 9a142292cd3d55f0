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


def recorded_caller(path, *parts, length_scale: float = 1.25, noise_dbfs: float = -50.0):
    """A caller's recording for a file transport: (seconds of silence, words) parts in a
    slower piper voice than the agent's, over room noise; written to `path` (16 kHz)."""
    import soundfile

    from voices.stt import resample
    from voices.tts import PiperVoice

    voice = PiperVoice(None, deterministic=True, length_scale=length_scale)
    rng = np.random.default_rng(7)
    audio = []
    for pause, words in parts:
        audio.append(np.zeros(int(pause * 16000), np.float32))
        if words:
            audio.append(resample(voice.synthesize_all(words), voice.sample_rate, 16000) * 0.7)
    audio = np.concatenate(audio)
    audio = audio + rng.normal(0.0, 10 ** (noise_dbfs / 20), audio.size).astype(np.float32)
    soundfile.write(path, audio, 16000)
    return path
