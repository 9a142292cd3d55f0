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


def words_in_turn(names: list[str], gaps_s: list[float], lead_s: float = 0.0) -> tuple[list[tuple[float, str]], list[float]]:
    """Recordings one after another, `gaps_s[i]` from the words of the i-th to those of
    the next (the files overlap where their margins would make a gap longer): where each
    file starts, in seconds, and where each one's words end. The first words start at
    `lead_s` (0: the first file at the start, its own margin before its words)."""
    pieces: list[tuple[float, str]] = []
    ends: list[float] = []
    for i, name in enumerate(names):
        start, end = words_s(name)
        at = (lead_s - start if lead_s else 0.0) if i == 0 else ends[-1] + gaps_s[i - 1] - start
        pieces.append((at, name))
        ends.append(at + end)
    return pieces, ends


def laid_out(pieces: list[tuple[float, str]], tail_s: float = 0.0) -> np.ndarray:
    """The recordings placed where `pieces` says ((start s, file)), summed where they
    overlap, with `tail_s` of silence after the last one ends."""
    rate = material()["rate"]
    total = max(at + len(clip(name)) / rate for at, name in pieces) + tail_s
    audio = np.zeros(int(round(total * rate)), np.float32)
    for at, name in pieces:
        samples = clip(name)
        i = int(round(at * rate))
        audio[i : i + samples.size] += samples[: audio.size - i]
    return audio


__all__ = ["clip", "digit_file", "laid_out", "material", "words_in_turn", "words_s"]
