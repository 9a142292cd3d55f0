"""A rehearsal whose voice loop is a real Pipecat pipeline (`lull rehearse --backend
pipecat`): a recorded caller (espeak-ng's voice, not the agent's, over room noise)
through Pipecat's Silero VAD and smart-turn stop strategy,
Lull's whisper and piper as Pipecat services, LullProcessor in flow mode bound to the
live session. Real models, on virtual time (about 4 s): the models' work in threads
takes no virtual time, so the call is the same on a busy machine. Real time through
each framework is the device test's (test_framework_devices)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pipecat", reason="the pipecat extra is not installed")

from file_caller import recorded_caller  # noqa: E402
from framework_recordings import check_the_recordings_and_the_wait  # noqa: E402
from sessions.flowfiles import load_flow  # noqa: E402
from sessions.journal import read_journal  # noqa: E402
from sessions.live import LiveSession  # noqa: E402
from sessions.replay import replay  # noqa: E402
from redaction_checks import journal_leaks  # noqa: E402
from voices.virtual_loop import run_virtual  # noqa: E402


def test_a_pipecat_rehearsal_reads_the_code_back_and_its_journal_replays_clean(loaded_models, tmp_path):
    from voices.pipecat.backend import PipecatBackend

    caller = recorded_caller(tmp_path / "caller.wav", (10.5, "my code is four eight two one"), (6.0, "yes it is"), (3.0, ""))
    flow = load_flow("reference_code")
    folder = tmp_path / "call"
    backend = PipecatBackend(loaded_models, caller)
    lines: list[tuple[str, str]] = []
    backend.on_line = lambda who, text: lines.append((who, text))

    async def call() -> LiveSession:
        session = LiveSession(flow, backend, journal_dir=folder, clock=asyncio.get_running_loop().time)
        await session.start()
        await asyncio.wait_for(session.closed.wait(), 60)  # virtual seconds: the call takes about 27
        return session

    session = run_virtual(call())
    said = [text for who, text in lines if who == "agent"]
    assert any("4821" in text or "4 8 2 1" in text for text in said), lines  # read back, as heard
    assert session.runtime.snapshot()["ladder"]["outcome"] == "completed", lines
    journal = read_journal(folder / "journal.jsonl")
    assert journal.header["source"] == "pipecat"
    assert journal.header["pipeline"]["stt"] == "LullWhisperSTT"
    assert journal_leaks(folder / "journal.jsonl", "4821") == []  # redacted as always
    result = replay(folder)
    assert result.verdict == "CLEAN", result.describe()
    # the turns came from Pipecat's frames: each caller turn is the processor's
    turns = [r["event"]["turn"] for r in journal.records if r.get("type") == "input" and r.get("kind") == "turn_started"]
    assert turns[:1] == ["user-1"], turns
    # mic.wav and out.wav beside the journal, masked where it says, the wait readable from them
    print("wait after yes it is, from the recordings:", check_the_recordings_and_the_wait(folder, journal))
