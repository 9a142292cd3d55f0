"""What the caller feels (issue 10, items 1 and 3): the gap from the end of their speech
as heard to the agent's first audible sample, journaled per answered turn beside its
stages; a turn the agent does not answer has no latency; piper's leading silence is
trimmed from each prompt's first chunk without clipping the first phoneme.

Real models through the file backend: the journaled gap must agree with the same gap
measured from the call's own recordings (mic.wav against out.wav)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
import soundfile

from voices.backends.turn_latency import TurnLatency
from call_clock import heard_seconds
from call_clock import until as wait_until
from file_caller import speech, talk

from sessions.flowfiles import check_data, library_flow_path
from sessions.journal import read_journal
from voices.levels import TRIM_FLOOR_DBFS, audible_end, audible_onset


@pytest.fixture(scope="module")
def models(loaded_models):
    return loaded_models  # loaded once for the run (conftest)


def test_the_stages_add_up_to_the_perceived_gap():
    lat = TurnLatency("t", end_of_speech=1500.0, speech_end=980.0, vad_speech_end=1000.0, transcript=1900.0,
                      decision=1901.0, first_audio=2050.0, leading_silence_ms=12.0)
    d = lat.as_dict()
    assert d["perceived_gap_ms"] == 1082.0
    parts = ("vad_lag_ms", "hold_ms", "eos_to_transcript_ms", "transcript_to_decision_ms", "decision_to_first_audio_ms", "leading_silence_ms")
    assert sum(d[k] for k in parts) == pytest.approx(d["perceived_gap_ms"])
    assert TurnLatency("t", 1.0).as_dict()["perceived_gap_ms"] is None


@pytest.mark.parametrize("text", ["What is your reference code?", "Five five four one.", "Fine!", "Sure, take your time."])
def test_leading_silence_is_trimmed_and_the_first_phoneme_kept(models, text):
    voice = models.voice
    rate = voice.sample_rate
    voice.trim_leading = False
    try:
        raw = next(iter(voice.synthesize(text)))
    finally:
        voice.trim_leading = True
    trimmed = next(iter(voice.synthesize(text)))
    cut = len(raw) - len(trimmed)
    attack = audible_onset(raw, rate, floor_dbfs=TRIM_FLOOR_DBFS, below_peak_db=200.0)
    assert cut <= attack  # nothing at or after the first sound is cut
    fade = int(rate * 0.005)
    assert np.array_equal(trimmed[fade:], raw[cut + fade:])  # only a 5 ms fade-in over near-silence
    assert audible_onset(trimmed, rate) * 1000 / rate <= audible_onset(raw, rate) * 1000 / rate
    assert audible_onset(trimmed, rate) * 1000 / rate < 40  # the caller hears it within 40 ms


def _flow():
    report = check_data(json.loads(library_flow_path("reference_code").read_text()), "reference_code")
    return report.flow


def test_an_answered_turn_journals_the_gap_the_recordings_show_and_an_unanswered_one_none(models, tmp_path):
    from voices.backends.file import FileBackend
    from sessions.live import LiveSession

    quiet = tmp_path / "quiet.wav"
    soundfile.write(quiet, np.zeros(1600, np.float32), 16000)
    backend = FileBackend(models, quiet, keep_secret_audio=True)
    session = LiveSession(_flow(), backend, journal_dir=tmp_path / "take")

    def listening_at(stage):
        return session.runtime.asking == ("main", stage) and session.runtime.ladder.state.value == "listening"

    def until(predicate, limit_s=40):
        return wait_until(predicate, limit_s, heard_seconds(backend))

    async def body():
        try:
            await session.start()
            await until(lambda: listening_at("ask_code"))
            await asyncio.sleep(0.3)
            talk(backend, speech(models, "two nine"))  # a partial code: the agent says nothing back
            await until(lambda: session.runtime.partial.get("reference_code"))
            await asyncio.sleep(0.3)
            talk(backend, speech(models, "three four zero"))
            await until(lambda: listening_at("confirm_code"))
            await asyncio.sleep(0.5)
        finally:
            await session.stop()

    asyncio.run(body())
    assert session.runtime.state.get("reference_code") == "29340"
    assert backend.unanswered_turns == 1
    journal = read_journal(tmp_path / "take")
    noted = [r for r in journal.decisions() if r.get("kind") == "turn_latency"]
    assert len(noted) == 1, noted  # the partial turn has no latency
    lat = noted[0]
    assert lat["perceived_gap_ms"] is not None and 0 < lat["perceived_gap_ms"] < 4000
    # the same gap from the recordings: the caller's last audible sound in mic.wav -> the
    # agent's first audible sample in out.wav after it
    mic, mic_rate = soundfile.read(tmp_path / "take" / "mic.wav", dtype="float32")
    out, out_rate = soundfile.read(tmp_path / "take" / "out.wav", dtype="float32")
    answer_turn = lat["turn"]
    ended = next(r for r in journal.inputs() if r["kind"] == "turn_ended" and r["event"]["turn"] == answer_turn)
    window = mic[: int(ended["t_ms"] * mic_rate / 1000)]
    caller_end = audible_end(window[-int(2.5 * mic_rate):], mic_rate)
    caller_end_ms = (len(window) - int(2.5 * mic_rate) + caller_end) * 1000 / mic_rate
    after = int(ended["t_ms"] * out_rate / 1000)
    agent_onset = audible_onset(out[after:], out_rate)
    agent_ms = (after + agent_onset) * 1000 / out_rate
    assert abs((agent_ms - caller_end_ms) - lat["perceived_gap_ms"]) < 40, (agent_ms - caller_end_ms, lat)
