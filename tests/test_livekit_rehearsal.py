"""A rehearsal whose voice loop is a real LiveKit AgentSession (`lull rehearse --backend
livekit`): a recorded caller (espeak-ng's voice, not the agent's, over room noise)
through LiveKit's Silero VAD plugin and its audio recognition, Lull's whisper and piper
as LiveKit plugins, LullLadder in flow mode bound to the live session. Real models,
real time (about 30 s)."""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest

pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")

from file_caller import recorded_caller  # noqa: E402
from sessions.flowfiles import load_flow  # noqa: E402
from sessions.journal import read_journal  # noqa: E402
from sessions.live import LiveSession  # noqa: E402
from sessions.replay import replay  # noqa: E402
from voices.backends.recorded_wait import AUDIBLE  # noqa: E402


def test_a_livekit_rehearsal_reads_the_code_back_records_the_call_and_its_journal_replays_clean(loaded_models, tmp_path):
    import soundfile

    from voices.livekit import quiet_livekit_logs
    from voices.livekit.backend import LiveKitBackend

    quiet_livekit_logs()
    caller = recorded_caller(tmp_path / "caller.wav", (10.5, "my code is four eight two one"), (6.0, "yes it is"), (3.0, ""))
    folder = tmp_path / "call"
    backend = LiveKitBackend(loaded_models, caller, record_dir=folder)
    lines: list[tuple[str, str]] = []
    backend.on_line = lambda who, text: lines.append((who, text))
    session = LiveSession(load_flow("reference_code"), backend, journal_dir=folder)

    async def call() -> None:
        await session.start()
        await asyncio.wait_for(session.closed.wait(), 60)

    asyncio.run(call())
    said = [text for who, text in lines if who == "agent"]
    assert any("4821" in text or "4 8 2 1" in text for text in said), lines  # read back, as heard
    assert session.runtime.snapshot()["ladder"]["outcome"] == "completed", lines
    journal = read_journal(folder / "journal.jsonl")
    assert journal.header["source"] == "livekit"
    assert journal.header["pipeline"]["stt"] == "LullWhisperSTT"
    text = (folder / "journal.jsonl").read_text()
    assert not re.search(r"\b4821\b|4 8 2 1|four eight two one", text)
    result = replay(folder)
    assert result.verdict == "CLEAN", result.describe()
    turns = [r["event"]["turn"] for r in journal.records if r.get("type") == "input" and r.get("kind") == "turn_started"]
    assert turns[:1] == ["user-1"], turns  # the turns came from the session's user state

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
    ended = next(r for r in inputs if r["kind"] == "turn_ended" and r["event"]["turn"] == confirmed["event"]["turn"])
    frame = mic_rate // 100
    look_from = int((ended["t_ms"] - 2000) / 1000 * mic_rate) // frame
    rms = np.sqrt(np.mean(mic[: mic.size // frame * frame].reshape(-1, frame) ** 2, axis=1))
    loud = np.flatnonzero(rms[look_from:int(ended["t_ms"] / 10)] >= AUDIBLE)
    speech_end_ms = (look_from + loud[-1] + 1) * 10.0
    onset = np.flatnonzero(np.abs(out[int(speech_end_ms / 1000 * out_rate):]) >= AUDIBLE)
    wait_ms = onset[0] / out_rate * 1000
    answer = next(r for r in inputs if r["kind"] == "playback_started" and r["t_ms"] > speech_end_ms)
    # the journal's playback start and the recording's first audible sample agree
    assert abs((speech_end_ms + wait_ms) - answer["t_ms"]) < 150, (speech_end_ms, wait_ms, answer["t_ms"])
    assert 0 < wait_ms < 3000, wait_ms
