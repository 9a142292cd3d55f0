"""Where sound is audible in a buffer: the first audible sample of a prompt, the last
audible sample of a caller's speech (issue 10: what the caller feels is measured from
the end of their speech as heard to the agent's first audible sample).

Audible is judged in 5 ms windows by level: above an absolute floor and within a
range below the buffer's loudest window, so a quiet breath before a word and a noise
floor between words are not speech, and a quiet fricative onset ("f" in "five") is.
"""

from __future__ import annotations

import numpy as np

WINDOW_MS = 5.0
FLOOR_DBFS = -62.0  # nothing quieter is audible over a laptop's speaker or a phone line
BELOW_PEAK_DB = 40.0  # nor anything this far below the loudest part of the same sound


def _levels(audio: np.ndarray, rate: int) -> tuple[np.ndarray, int]:
    x = np.asarray(audio, dtype=np.float32).reshape(-1)
    win = max(1, int(rate * WINDOW_MS / 1000.0))
    n = len(x) // win
    if n == 0:
        return np.zeros(0), win
    blocks = x[: n * win].reshape(n, win).astype(np.float64)
    rms = np.sqrt(np.mean(blocks * blocks, axis=1))
    return 20.0 * np.log10(np.maximum(rms, 1e-9)), win


def _audible(db: np.ndarray, floor_dbfs: float, below_peak_db: float = BELOW_PEAK_DB) -> np.ndarray:
    if not len(db):
        return np.zeros(0, bool)
    return db >= max(floor_dbfs, float(db.max()) - below_peak_db)


def audible_onset(audio: np.ndarray, rate: int, floor_dbfs: float = FLOOR_DBFS, below_peak_db: float = BELOW_PEAK_DB) -> int | None:
    """The first sample of the first audible window, or None if nothing is audible."""
    db, win = _levels(audio, rate)
    loud = np.nonzero(_audible(db, floor_dbfs, below_peak_db))[0]
    return int(loud[0]) * win if len(loud) else None


def audible_end(audio: np.ndarray, rate: int, floor_dbfs: float | None = None) -> int | None:
    """The sample just after the last audible window, or None if nothing is audible.

    With no `floor_dbfs`, the floor is 12 dB above the buffer's own quiet part (its
    tenth-percentile window), so a microphone's noise floor is not speech."""
    db, win = _levels(audio, rate)
    if not len(db):
        return None
    if floor_dbfs is None:
        floor_dbfs = max(FLOOR_DBFS, float(np.percentile(db, 10)) + 12.0)
    loud = np.nonzero(_audible(db, floor_dbfs))[0]
    return (int(loud[-1]) + 1) * win if len(loud) else None


TRIM_FLOOR_DBFS = -70.0  # piper's leading silence is -85 to -95 dBFS; a quiet attack is above this


def trim_leading_silence(audio: np.ndarray, rate: int, keep_ms: float = 10.0, fade_ms: float = 5.0) -> np.ndarray:
    """`audio` without the silence before its first sound, keeping `keep_ms` of it and
    fading the kept part in over `fade_ms`. The first sound is judged by an absolute
    floor well under any phoneme's attack (the "f" of "five" starts near -67 dBFS), so
    the first phoneme is never clipped and no click is made. Silent audio is returned
    as it is."""
    onset = audible_onset(audio, rate, floor_dbfs=TRIM_FLOOR_DBFS, below_peak_db=200.0)
    if onset is None:
        return audio
    start = max(0, onset - int(rate * keep_ms / 1000.0))
    if start == 0:
        return audio
    out = np.array(audio[start:], dtype=np.float32, copy=True)
    fade = min(len(out), int(rate * fade_ms / 1000.0))
    if fade:
        out[:fade] *= np.linspace(0.0, 1.0, fade, endpoint=False, dtype=np.float32)
    return out
