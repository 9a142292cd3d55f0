"""When the segmenter reports a pause within speech (for the speculative decode at its
onset): only once it has lasted `pause_report_ms`, stamped with the pause's onset."""

import numpy as np

from voices.vad import SileroVad, SpeechSegmenter

FRAME_MS = SileroVad.FRAME * 1000.0 / 16000


class _ScriptedVad:
    """A VAD whose speech probability per frame is given in advance."""

    def __init__(self, probabilities):
        self.probabilities = list(probabilities)
        self.i = 0

    def reset(self):
        self.i = 0

    def probability(self, frame):
        p = self.probabilities[self.i] if self.i < len(self.probabilities) else 0.0
        self.i += 1
        return p


def _events(probabilities, **options):
    segmenter = SpeechSegmenter(_ScriptedVad(probabilities), end_of_speech_ms=2000, min_speech_ms=60,
                                report_pauses=True, **options)
    return segmenter.feed(np.full(SileroVad.FRAME * len(probabilities), 0.1, np.float32), 0.0)


# speech for 10 frames, a dip of 2 frames, speech for 10, then a pause of 8 frames
SPEECH = [0.9] * 10 + [0.0] * 2 + [0.9] * 10 + [0.0] * 8


def test_every_dip_is_a_pause_when_reported_at_its_first_quiet_frame():
    kinds = [e.kind for e in _events(SPEECH)]
    assert kinds == ["speech_started", "pause_started", "speech_resumed", "pause_started"]


def test_a_dip_shorter_than_the_report_delay_is_not_a_pause_and_the_pause_keeps_its_onset():
    events = _events(SPEECH, pause_report_ms=96)
    assert [e.kind for e in events] == ["speech_started", "speech_resumed", "pause_started"]
    pause = events[-1]
    onset_ms = 22 * FRAME_MS  # the end of the first quiet frame after the second run of speech
    assert abs(pause.t_ms - (onset_ms + FRAME_MS)) < 1e-6, pause.t_ms
    assert pause.speech_end_ms == onset_ms
    # the audio so far reaches the frame on which the pause was reported (3 quiet frames)
    assert len(pause.audio) >= (22 + 3) * SileroVad.FRAME - 1
