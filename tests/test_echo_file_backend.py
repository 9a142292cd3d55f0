"""The file backend with a simulated room echo (real models): the agent's own voice comes
back into the caller's audio; echo cancellation and the echo gate keep it out of the
core, a caller talking over the question still cuts it at once (reported once) and is
captured, and the recordings mask the code."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
import soundfile

from file_caller import speech, talk
from call_clock import heard_seconds
from call_clock import until as wait_until

from sessions.flowfiles import check_data, library_flow_path
from sessions.journal import read_journal


@pytest.fixture(scope="module")
def models(loaded_models):
    return loaded_models  # loaded once for the run (conftest)


def flow():
    data = json.loads(library_flow_path("reference_code").read_text())
    report = check_data(data, "reference_code")
    return report.flow


def test_a_caller_over_the_question_cuts_it_once_and_is_captured_through_the_echo(models, tmp_path):
    from voices.backends.file import FileBackend
    from sessions.live import LiveSession
    from voices.echo import SimulatedEchoPath

    quiet = tmp_path / "quiet.wav"
    soundfile.write(quiet, np.zeros(1600, np.float32), 16000)
    backend = FileBackend(models, quiet, echo_path=SimulatedEchoPath(delay_ms=40, gain_db=-8), aec=True)
    session = LiveSession(flow(), backend, journal_dir=tmp_path / "take")
    # "my code is ..." through the echo was once heard as "I could go to 4 8 2 1", which
    # the runtime rightly reads as no answer (1 run in 4); the digits alone lose their
    # first word to the barge-in's onset. This carrier phrase was heard right every time.
    code = speech(models, "the number is four eight two one")
    yes = speech(models, "yes, that's right")
    marks = {}

    def question():
        return next((p for p in session.runtime.ladder.prompts.values() if p.kind == "question"), None)

    def until(predicate, timeout=40):
        return wait_until(predicate, timeout, heard_seconds(backend), why=lambda: [p.status.value for p in session.runtime.ladder.prompts.values()])

    async def body():
        try:
            await session.start()
            await until(lambda: question() is not None and question().status.value == "started")
            await asyncio.sleep(0.4)
            marks["talk"] = session.now_ms()
            talk(backend, code)
            await until(lambda: session.runtime.state.get("reference_code") is not None)
            await until(lambda: session.runtime.asking == ("main", "confirm_code") and session.runtime.ladder.state.value == "listening")
            talk(backend, yes)
            await until(session.closed.is_set, 40)
        finally:
            await session.stop()

    asyncio.run(body())
    take = tmp_path / "take"
    journal = read_journal(take)
    assert question().status.value == "interrupted"
    assert session.runtime.state["reference_code"] == "4821"
    assert session.runtime.ladder.outcome == "completed"
    interrupted = [r for r in journal.inputs() if r["kind"] == "playback_interrupted"]
    assert len(interrupted) == 1 and interrupted[0]["event"]["token"] == question().token, interrupted
    assert interrupted[0]["t_ms"] - marks["talk"] < 1200, (interrupted[0]["t_ms"], marks)
    # the agent's own voice never became a caller turn: one turn for the code, one for yes
    turns = [r for r in journal.inputs() if r["kind"] == "turn_started"]
    assert len(turns) == 2, turns
    masked = [r for r in journal.decisions() if r.get("kind") == "audio_masked"]
    assert {m["track"] for m in masked} == {"mic", "out"}
    from voices.stt import WhisperRecognizer, load_wav_16k

    from ladder.flow.understanding.text import parse_digits

    whisper = WhisperRecognizer()
    for name in ("mic.wav", "out.wav"):
        text = whisper.transcribe(load_wav_16k(take / name)).text
        assert "4821" not in (parse_digits(text) or "") and "4821" not in text.replace(" ", ""), (name, text)
