"""`PauseSafeSileroVAD`: Pipecat's Silero VAD, its model never reset inside a caller's
pause between words.

Pipecat's `SileroVADAnalyzer` resets the model's recurrent state about every 2 s of
audio, at the first 160 ms of clear non-speech (5 windows under 0.1), to recover from
non-speech that leaves the model deaf to what follows (music; long silence at 8 kHz).
Its own notes say the cost: a reset just ahead of speech can confirm that speech a few
hundred ms late. A caller reading a code pauses 150-450 ms between digits, so on a
telephone line the reset lands in those pauses, and the next digit's confidence stays
under the VAD's bar: on a real caller's "four, three, one, five" down a G.711 line, the
reset 130 ms after "four" left "three" at 0.3-0.7 (under 0.7), the VAD heard nothing for
a second, the turn ended on "four", and the code was read as "3 1 5".

Here a reset waits for `QUIET_BEFORE_RESET_S` of clear non-speech: longer than a
caller's pause between words, shorter than the gaps between turns (the agent is
speaking), where the resets Pipecat wants still happen. Measured on six real callers'
codes, each placed at 46 offsets after the line's start so the resets fall everywhere:
words the VAD never heard, down the line, 28 of 1,104 with Pipecat's rule, 19 with
this one (one caller's 9 misses became 1); wideband, none either way.
"""

from __future__ import annotations

import math

from pipecat.audio.vad.silero import (
    _MODEL_RESET_INTERVAL_SECS as RESET_INTERVAL_S,  # Pipecat's own: a reset every 2 s of audio,
    _MODEL_RESET_MAX_CONFIDENCE as RESET_MAX_CONFIDENCE,  # during windows that score under 0.1
    SileroVADAnalyzer,
)
from pipecat.audio.vad.vad_analyzer import VADState

# clear non-speech a reset waits for: Pipecat waits 0.16 s
QUIET_BEFORE_RESET_S = 0.8


class PauseSafeSileroVAD(SileroVADAnalyzer):
    """A `SileroVADAnalyzer` whose model resets wait for `quiet_before_reset_s` of clear
    non-speech instead of 160 ms. Everything else is Pipecat's."""

    def __init__(self, *, quiet_before_reset_s: float = QUIET_BEFORE_RESET_S, **kwargs) -> None:
        super().__init__(**kwargs)
        self.quiet_before_reset_s = quiet_before_reset_s
        self.resets = 0  # how many times the model was reset (for tests and traces)

    def _maybe_reset_model(self, confidence: float) -> None:
        # Pipecat's rule (SileroVADAnalyzer._maybe_reset_model), its quiet run made longer
        self._windows_since_reset += 1
        self._low_confidence_windows = self._low_confidence_windows + 1 if confidence < RESET_MAX_CONFIDENCE else 0
        window = self.num_frames_required()
        due = self._windows_since_reset * window >= RESET_INTERVAL_S * self.sample_rate
        quiet = self._low_confidence_windows >= math.ceil(self.quiet_before_reset_s * self.sample_rate / window)
        if due and quiet and self._vad_state == VADState.QUIET:
            self._model.reset_states()
            self._windows_since_reset = 0
            self.resets += 1


__all__ = ["QUIET_BEFORE_RESET_S", "PauseSafeSileroVAD"]
