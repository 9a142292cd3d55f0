"""A caller for the file backend in tests: piper speech at 16 kHz, said into the call from
the next VAD frame on (waits on the call's own clock: call_clock)."""

from __future__ import annotations

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


def espeak(words: str, voice: str = "en-us", words_per_minute: int = 145) -> np.ndarray:
    """`words` in espeak-ng's voice (Debian's espeak-ng, a formant synthesiser: another
    voice than the agent's piper), at 16 kHz. Outside CI a missing espeak-ng skips the
    test; in CI (.ci/setup installs it) it fails."""
    import io
    import os
    import shutil
    import subprocess

    import pytest
    import soundfile

    from voices.stt import resample

    if shutil.which("espeak-ng") is None:
        message = "espeak-ng is not installed (apt-get install espeak-ng; .ci/setup does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    wav = subprocess.run(["espeak-ng", "-v", voice, "-s", str(words_per_minute), "--stdout", words],
                         capture_output=True, check=True).stdout
    audio, rate = soundfile.read(io.BytesIO(wav), dtype="float32")
    return resample(audio, rate, 16000)


def recorded_caller(path, *parts, noise_dbfs: float = -50.0):
    """A caller's recording for a file transport: (seconds of silence, words) parts in
    espeak-ng's voice (not the agent's), over room noise; written to `path` (16 kHz)."""
    import soundfile

    rng = np.random.default_rng(7)
    audio = []
    for pause, words in parts:
        audio.append(np.zeros(int(pause * 16000), np.float32))
        if words:
            audio.append(espeak(words) * 0.7)
    audio = np.concatenate(audio)
    audio = audio + rng.normal(0.0, 10 ** (noise_dbfs / 20), audio.size).astype(np.float32)
    soundfile.write(path, audio, 16000)
    return path
