"""A rehearsal whose voice loop is a real Pipecat pipeline (`lull rehearse --backend
pipecat`): a recorded caller (espeak-ng's voice, not the agent's, over room noise)
through Pipecat's Silero VAD and smart-turn stop strategy,
Lull's whisper and piper as Pipecat services, LullProcessor in flow mode bound to the
live session. Real models, real time (about 30 s)."""

from __future__ import annotations

import asyncio
import re

import pytest

pytest.importorskip("pipecat", reason="the pipecat extra is not installed")

from file_caller import recorded_caller  # noqa: E402
from framework_recordings import check_the_recordings_and_the_wait  # noqa: E402
from sessions.flowfiles import load_flow  # noqa: E402
from sessions.journal import read_journal  # noqa: E402
from sessions.live import LiveSession  # noqa: E402
from sessions.replay import replay  # noqa: E402


def test_a_pipecat_rehearsal_reads_the_code_back_and_its_journal_replays_clean(loaded_models, tmp_path):
    from voices.pipecat.backend import PipecatBackend

    caller = recorded_caller(tmp_path / "caller.wav", (10.5, "my code is four eight two one"), (6.0, "yes it is"), (3.0, ""))
    flow = load_flow("reference_code")
    folder = tmp_path / "call"
    backend = PipecatBackend(loaded_models, caller)
    lines: list[tuple[str, str]] = []
    backend.on_line = lambda who, text: lines.append((who, text))
    session = LiveSession(flow, backend, journal_dir=folder)

    async def call() -> None:
        await session.start()
        await asyncio.wait_for(session.closed.wait(), 60)

    asyncio.run(call())
    said = [text for who, text in lines if who == "agent"]
    assert any("4821" in text or "4 8 2 1" in text for text in said), lines  # read back, as heard
    assert session.runtime.snapshot()["ladder"]["outcome"] == "completed", lines
    journal = read_journal(folder / "journal.jsonl")
    assert journal.header["source"] == "pipecat"
    assert journal.header["pipeline"]["stt"] == "LullWhisperSTT"
    text = (folder / "journal.jsonl").read_text()
    # redacted as always (a whole number: a wall clock's microseconds may hold the digits)
    assert not re.search(r"\b4821\b|4 8 2 1|four eight two one", text)
    result = replay(folder)
    assert result.verdict == "CLEAN", result.describe()
    # the turns came from Pipecat's frames: each caller turn is the processor's
    turns = [r["event"]["turn"] for r in journal.records if r.get("type") == "input" and r.get("kind") == "turn_started"]
    assert turns[:1] == ["user-1"], turns
    # mic.wav and out.wav beside the journal, masked where it says, the wait readable from them
    print("wait after yes it is, from the recordings:", check_the_recordings_and_the_wait(folder, journal))


async def call_with_the_caller_in_the_mic(lab, session, caller) -> None:
    """The call, with the caller's recording played into the lab's microphone from its start."""
    await session.start()
    player = asyncio.ensure_future(asyncio.to_thread(lab.play_into_mic, caller, True))
    await asyncio.wait_for(session.closed.wait(), 60)
    await player


def test_a_pipecat_rehearsal_on_the_devices_hears_the_microphone_and_plays_the_speaker(pulse_lab, loaded_models, tmp_path):
    """No recorded caller: the pipeline's transports are the lab's microphone and speaker
    (sounddevice on PulseAudio), the caller's words played into the microphone."""
    from voices.audio import resolve_device
    from voices.pipecat.backend import PipecatBackend

    caller = recorded_caller(tmp_path / "caller.wav", (10.5, "my code is four eight two one"), (6.0, "yes it is"), (3.0, ""))
    capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
    backend = PipecatBackend(loaded_models, input_device=resolve_device("test_mic", "input"),
                             output_device=resolve_device("test_speaker", "output"))
    lines: list[tuple[str, str]] = []
    backend.on_line = lambda who, text: lines.append((who, text))
    folder = tmp_path / "call"
    session = LiveSession(load_flow("reference_code"), backend, journal_dir=folder)

    asyncio.run(call_with_the_caller_in_the_mic(pulse_lab, session, caller))
    recording = capture.stop()
    said = [text for who, text in lines if who == "agent"]
    assert any("4821" in text or "4 8 2 1" in text for text in said), lines
    assert session.runtime.snapshot()["ladder"]["outcome"] == "completed", lines
    assert read_journal(folder / "journal.jsonl").header["pipeline"]["transport"] == "MicrophoneInput/SpeakerOutput"
    assert replay(folder).verdict == "CLEAN"
    # the agent was heard on the speaker: its recording holds about as much audio as was said
    import soundfile

    audio, rate = soundfile.read(recording, dtype="float32")
    loud = (abs(audio.reshape(len(audio), -1)[:, 0]) > 0.01).sum() / rate
    assert loud > 5.0, f"{loud:.1f} s of the agent's voice on the speaker"


def test_on_laptop_speakers_at_full_volume_the_pipecat_agent_does_not_hear_itself(pulse_lab, loaded_models, tmp_path):
    """The lab's echo path at 100 %: the speaker comes back into the microphone at full
    level. Without the canceller and the gate the pipeline took "Take your time" from
    its own reminder for the caller asking for time, and "I heard" for an answer."""
    from voices.audio import resolve_device
    from voices.pipecat.backend import PipecatBackend

    caller = recorded_caller(tmp_path / "caller.wav", (10.5, "my code is four eight two one"), (6.0, "yes it is"), (3.0, ""))
    with pulse_lab.echo_path(100, 30):
        backend = PipecatBackend(loaded_models, input_device=resolve_device("test_mic", "input"),
                                 output_device=resolve_device("test_speaker", "output"))
        lines: list[tuple[str, str]] = []
        backend.on_line = lambda who, text: lines.append((who, text))
        session = LiveSession(load_flow("reference_code"), backend, journal_dir=tmp_path / "call")

        asyncio.run(call_with_the_caller_in_the_mic(pulse_lab, session, caller))
    heard = [text.lower() for who, text in lines if who == "caller"]
    agent_words = ("reference desk", "recorded", "what is your", "i heard", "let me look", "take your time")
    assert not [h for h in heard if any(w in h for w in agent_words)], lines
    assert session.runtime.snapshot()["ladder"]["outcome"] == "completed", lines
    assert backend.echo is not None and backend.echo.gated_frames > 0


def test_an_unplugged_microphone_under_pipecat_ends_in_the_flows_channel_recovery(pulse_lab, loaded_models, tmp_path):
    """The mic goes after the question: the audio server moves the stream to a silent
    source. Pipecat has no frame for that; the microphone transport says so as a
    LullEventFrame, and the core's recovery speaks and closes the call."""
    import json

    from sessions.flowfiles import check_data, library_flow_path
    from voices.audio import resolve_device
    from voices.pipecat.backend import PipecatBackend

    data = json.loads(library_flow_path("reference_code").read_text())
    data["ladder"] = {"recovery_ms": 2500}
    flow = check_data(data, "reference_code").flow
    floor = pulse_lab.noise_floor()
    backend = PipecatBackend(loaded_models, input_device=resolve_device("test_mic", "input"),
                             output_device=resolve_device("test_speaker", "output"))
    lines: list[tuple[str, str]] = []
    backend.on_line = lambda who, text: lines.append((who, text))
    session = LiveSession(flow, backend, journal_dir=tmp_path / "take")

    async def call() -> None:
        await session.start()
        while not any("reference code" in text for _, text in lines):
            await asyncio.sleep(0.05)
        floor.stop()
        pulse_lab.pactl("set-default-source", "micfeed.monitor")
        pulse_lab.unload_mic()
        await asyncio.wait_for(session.closed.wait(), 40)

    try:
        asyncio.run(call())
    finally:
        pulse_lab.restore_mic()
        pulse_lab.pactl("set-default-source", "mic")
    journal = read_journal(tmp_path / "take")
    failed = [r["event"] for r in journal.inputs() if r["kind"] == "transport_failed"]
    assert failed and failed[0]["path"] == "input", failed
    assert failed[0]["reason"].startswith("device_moved: mic -> ") or failed[0]["reason"] == "digital_zeros", failed
    assert [r["outcome"] for r in journal.decisions() if r.get("effect") == "SessionClosed"] == ["input_path_failed"]
    assert any("trouble with the line" in text for who, text in lines if who == "agent"), lines
    assert replay(tmp_path / "take").verdict == "CLEAN"
