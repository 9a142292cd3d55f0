"""What a framework call's session folder (Pipecat, LiveKit) must hold beside its journal:
mic.wav and out.wav on the journal's clock, silent where the journal says a value was
masked, and the caller's wait readable from the two files."""

from __future__ import annotations

import numpy as np
import soundfile

from voices.backends.recorded_wait import AUDIBLE


def check_the_recordings_and_the_wait(folder, journal) -> float:
    """Checks the recordings of a reference-code call (code masked, "yes it is" heard);
    returns the caller's wait after "yes it is", read from the files (ms)."""
    # mic.wav and out.wav, on the journal's clock: the caller's answer and the read-back
    # masked (the journal says where), the rest heard as it was
    masked = [r for r in journal.records if r.get("kind") == "audio_masked"]
    assert {m["track"] for m in masked} == {"mic", "out"}, masked
    mic, mic_rate = soundfile.read(folder / "mic.wav", dtype="float32")
    out, out_rate = soundfile.read(folder / "out.wav", dtype="float32")
    end_ms = journal.records[-1]["t_ms"]
    assert abs(mic.size / mic_rate * 1000 - end_ms) < 500 and abs(out.size / out_rate * 1000 - end_ms) < 1000
    for m in masked:
        audio, rate = (mic, mic_rate) if m["track"] == "mic" else (out, out_rate)
        span = audio[int(m["from_ms"] / 1000 * rate) + 1:int(m["to_ms"] / 1000 * rate) - 1]  # ms rounded: a sample either side
        assert span.size and float(np.abs(span).max()) == 0.0, m
    # the caller's wait after "yes it is", read from the two files: from the end of the
    # words (the last 10 ms louder than AUDIBLE: the room noise is far below it, though
    # a sample of it may peak above) to the first audible sample of the agent's answer
    inputs = [r for r in journal.records if r.get("type") == "input"]
    confirmed = next(r for r in inputs if r["kind"] == "caller_utterance" and "yes" in r["event"]["text"].lower())
    turn = confirmed["event"]["turn"]
    started = next(r for r in inputs if r["kind"] == "turn_started" and r["event"]["turn"] == turn)
    ended = next(r for r in inputs if r["kind"] == "turn_ended" and r["event"]["turn"] == turn)
    frame = mic_rate // 100
    look_from = int(max(0.0, started["t_ms"] - 500) / 1000 * mic_rate) // frame
    rms = np.sqrt(np.mean(mic[: mic.size // frame * frame].reshape(-1, frame) ** 2, axis=1))
    loud = np.flatnonzero(rms[look_from:int(ended["t_ms"] / 10)] >= AUDIBLE)
    speech_end_ms = (look_from + loud[-1] + 1) * 10.0
    onset = np.flatnonzero(np.abs(out[int(speech_end_ms / 1000 * out_rate):]) >= AUDIBLE)
    wait_ms = onset[0] / out_rate * 1000
    answer = next(r for r in inputs if r["kind"] == "playback_started" and r["t_ms"] > speech_end_ms)
    # the journal's playback start and the recording's first audible sample agree
    assert abs((speech_end_ms + wait_ms) - answer["t_ms"]) < 150, (speech_end_ms, wait_ms, answer["t_ms"])
    assert 0 < wait_ms < 10_000, wait_ms  # a framework's turn end may be slow: the wait is the bench's to judge
    return wait_ms
