"""PauseSafeSileroVAD: Pipecat's Silero VAD, its model not reset inside a caller's pause.

A real caller's code down a telephone line, placed where Pipecat's rule resets the model
in a pause between digits: Pipecat's own VAD never hears two of the digits, ours hears
every one. In a long silence the model is still reset, as Pipecat wants."""

import numpy as np
import pytest

pytest.importorskip("pipecat")

from pipecat.audio.vad.silero import SileroVADAnalyzer  # noqa: E402
from pipecat.audio.vad.vad_analyzer import VADParams, VADState  # noqa: E402

from voices.human_speech import words_s  # noqa: E402
from voices.line.pstn import LineSettings, PhoneLine  # noqa: E402
from voices.pipecat.backend import PAUSE_S  # noqa: E402
from voices.pipecat.vad import PauseSafeSileroVAD  # noqa: E402
from voices.turn_bench import human_turns  # noqa: E402

RATE = 16_000
LINE_DELAY_S = 0.028  # the line's caller->agent delay (voices.line.pstn, 20 ms packets)


def _speaking(vad, audio: np.ndarray) -> list[bool]:
    """The VAD's SPEAKING state for each of its windows of `audio`."""
    vad.set_sample_rate(RATE)
    pcm = (np.clip(audio, -1, 1) * 32767).astype(np.int16).tobytes()
    n = vad.num_frames_required() * 2
    return [vad._run_analyzer(pcm[i : i + n]) == VADState.SPEAKING for i in range(0, len(pcm) - n, n)]


def _word_spans(turn: dict) -> list[tuple[float, float]]:
    """Where each of a turn's words is, in s from its start (as human_turns placed them)."""
    spans, words_end = [], 0.0
    for i, name in enumerate(turn["files"]):
        start, end = words_s(name)
        at = 0.0 if i == 0 else words_end + turn["gaps_s"][i - 1] - start
        spans.append((at + start, at + end))
        words_end = at + end
    return spans


def _words_not_heard(vad, audio: np.ndarray, spans, lead_s: float) -> int:
    speaking = _speaking(vad, audio)
    window_s = vad.num_frames_required() / RATE
    return sum(1 for a, b in spans
               if not any(speaking[int((lead_s + a + LINE_DELAY_S) / window_s) : int((lead_s + b + 0.25) / window_s) + 1]))


def test_a_callers_digits_down_the_line_are_all_heard():
    turn = human_turns()[3]  # a real speaker's "one four two five", pausing between digits
    lead_s = 1.3  # Pipecat's 2 s reset falls due in the pause after "one"
    audio = np.concatenate([np.zeros(int(lead_s * RATE), np.float32), turn["audio"], np.zeros(RATE, np.float32)])
    audio = audio + (np.random.default_rng(3).standard_normal(audio.size) * 3e-4).astype(np.float32)
    on_the_line = PhoneLine(LineSettings(kind="pstn")).uplink.through(audio)
    spans = _word_spans(turn)
    params = VADParams(stop_secs=PAUSE_S)
    assert _words_not_heard(SileroVADAnalyzer(sample_rate=RATE, params=params), on_the_line, spans, lead_s) == 2
    assert _words_not_heard(PauseSafeSileroVAD(sample_rate=RATE, params=params), on_the_line, spans, lead_s) == 0


def test_the_model_is_still_reset_in_a_long_silence():
    vad = PauseSafeSileroVAD(sample_rate=RATE)
    quiet = (np.random.default_rng(1).standard_normal(5 * RATE) * 3e-4).astype(np.float32)
    _speaking(vad, PhoneLine(LineSettings(kind="pstn")).uplink.through(quiet))
    assert vad.resets == 2  # one every 2 s of audio, as Pipecat's
