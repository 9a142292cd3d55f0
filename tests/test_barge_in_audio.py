"""What audio a turn keeps when it began as the agent's own voice (a barge-in), or
under the room's voices (a television)."""

from types import SimpleNamespace

import numpy as np

from voices.background_voices import BackgroundVoices
from voices.backends.voice import BARGE_IN_LOOKBACK_MS, PRE_ROLL_MS, VAD_RATE, VoiceBackend, _Segment


def kept(seg: _Segment, speech_start_ms: float, seconds: float = 3.0) -> tuple[int, float]:
    audio = np.arange(int(seconds * VAD_RATE), dtype=np.float32)
    # its only state: the room, whose level is not known here (the turn's gating is
    # test_background_voices's)
    out, first_ms = VoiceBackend._turn_audio(SimpleNamespace(room=BackgroundVoices()), seg, audio, speech_start_ms)
    return int(out[0]), first_ms


def test_a_caller_heard_from_the_start_keeps_the_pre_roll():
    assert kept(_Segment(start_ms=1000.0), 1000.0) == (0, 1000.0 - PRE_ROLL_MS)


def test_a_barge_in_keeps_what_came_well_before_the_evidence():
    # the VAD heard the agent's echo from 500 ms; the caller was louder than it from 2000 ms:
    # their first word started under the echo, so more than the pre-roll is kept
    seg = _Segment(start_ms=500.0, echo_suspect=True)
    seg.accepted_ms = 2000.0
    first_sample, first_ms = kept(seg, 500.0)
    assert first_ms == 2000.0 - BARGE_IN_LOOKBACK_MS and BARGE_IN_LOOKBACK_MS > PRE_ROLL_MS
    assert first_sample == int((first_ms - (500.0 - PRE_ROLL_MS)) * VAD_RATE / 1000)
    # evidence right after the start: nothing before the audio's first sample is invented
    seg.accepted_ms = 700.0
    assert kept(seg, 500.0) == (0, 500.0 - PRE_ROLL_MS)


def test_a_turn_over_the_room_keeps_only_a_little_before_the_evidence():
    # the VAD heard a television from 500 ms; the caller was louder than it from 2000 ms:
    # the television's words ahead of theirs would be read as the start of their turn
    from voices.background_voices import ROOM_LOOKBACK_MS

    seg = _Segment(start_ms=500.0, room_suspect=True)
    seg.accepted_ms = 2000.0
    assert kept(seg, 500.0)[1] == 2000.0 - ROOM_LOOKBACK_MS
    assert ROOM_LOOKBACK_MS < BARGE_IN_LOOKBACK_MS
    # over the agent's voice and the room both: the echo's lookback (a masked first word)
    seg.echo_suspect = True
    assert kept(seg, 500.0)[1] == 2000.0 - BARGE_IN_LOOKBACK_MS
