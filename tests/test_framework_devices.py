"""A rehearsal whose voice loop is a framework's (Pipecat, LiveKit) on the audio lab's
devices: the microphone and speaker through sounddevice on PulseAudio, the caller's
words played into the microphone, Lull's echo canceller and gate before the framework's
VAD. Real models, real time (about 30 s each): the one real-time call per framework (the
echo path at full volume, then the mic unplugged), its limits read from the microphone
audio the call took in (call_clock)."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from call_clock import heard_seconds, until
from file_caller import recorded_caller
from sessions.journal import read_journal
from sessions.live import LiveSession
from sessions.replay import replay

FRAMEWORKS = [pytest.param(name, marks=pytest.mark.skipif(importlib.util.find_spec(module) is None,
                                                          reason=f"the {name} extra is not installed"))
              for name, module in (("pipecat", "pipecat"), ("livekit", "livekit"))]
DEVICES = {"pipecat": "MicrophoneInput/SpeakerOutput", "livekit": "MicrophoneAudio/SpeakerAudio"}


def device_backend(framework: str, models):
    """The framework's rehearsal backend on the lab's microphone and speaker."""
    from voices.audio import resolve_device

    devices = {"input_device": resolve_device("test_mic", "input"), "output_device": resolve_device("test_speaker", "output")}
    if framework == "pipecat":
        from voices.pipecat.backend import PipecatBackend

        return PipecatBackend(models, **devices)
    from voices.livekit import quiet_livekit_logs
    from voices.livekit.backend import LiveKitBackend

    quiet_livekit_logs()
    return LiveKitBackend(models, **devices)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_on_laptop_speakers_at_full_volume_the_framework_agent_hears_the_caller_not_itself_then_the_mic_is_unplugged(
        framework, pulse_lab, loaded_models, tmp_path):
    """No recorded caller: the framework's audio I/O is the lab's microphone and speaker
    (sounddevice on PulseAudio), the caller's words played into the microphone, and the
    lab's echo path at 100 %: the speaker comes back into the microphone at full level.
    Without the canceller and the gate the pipeline took "Take your time" from its own
    reminder for the caller asking for time, and "I heard" for an answer.

    Then, while the agent reads the code back, the mic is unplugged: the audio server
    moves the stream to the mic feed's monitor, where only the echo path is heard (the
    agent's own voice). Neither framework has an event for that; the microphone I/O
    says so (a LullEventFrame, LullLadder.feed), the core's recovery speaks and closes
    the call, and nothing the agent said is taken for the caller. One real-time call per
    framework covers the devices, the echo and the unplugged mic."""
    import json

    from sessions.flowfiles import check_data, library_flow_path

    data = json.loads(library_flow_path("reference_code").read_text())
    data["ladder"] = {"recovery_ms": 2500}
    flow = check_data(data, "reference_code").flow
    caller = recorded_caller(tmp_path / "caller.wav", (10.5, "my code is four eight two one"), (3.0, ""))
    folder = tmp_path / "call"
    lines: list[tuple[str, str]] = []

    def read_back() -> bool:
        return any("4821" in text or "4 8 2 1" in text for who, text in lines if who == "agent")

    async def call(session, backend) -> None:
        await session.start()
        player = asyncio.ensure_future(asyncio.to_thread(pulse_lab.play_into_mic, caller, True))
        try:
            await until(read_back, 40, heard_seconds(backend), why=lambda: lines)
            pulse_lab.pactl("set-default-source", "micfeed.monitor")
            pulse_lab.unload_mic()
            await until(session.closed.is_set, 40, heard_seconds(backend), why=lambda: lines)
        except AssertionError:
            await session.stop()
            raise
        finally:
            await player

    try:
        with pulse_lab.echo_path(100, 30):
            capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
            backend = device_backend(framework, loaded_models)
            backend.on_line = lambda who, text: lines.append((who, text))
            session = LiveSession(flow, backend, journal_dir=folder)
            asyncio.run(call(session, backend))
            recording = capture.stop()
    finally:
        pulse_lab.restore_mic()
        pulse_lab.pactl("set-default-source", "mic")
    heard = [text.lower() for who, text in lines if who == "caller"]
    agent_words = ("reference desk", "recorded", "what is your", "i heard", "let me look", "take your time", "trouble with the line")
    assert not [h for h in heard if any(w in h for w in agent_words)], lines
    assert read_back()
    assert backend.echo is not None and backend.echo.gated_frames > 0
    journal = read_journal(folder)
    assert journal.header["pipeline"].get("transport", journal.header["pipeline"].get("audio")) == DEVICES[framework]
    failed = [r["event"] for r in journal.inputs() if r["kind"] == "transport_failed"]
    assert failed and failed[0]["path"] == "input", failed
    assert failed[0]["reason"].startswith("device_moved: mic -> ") or failed[0]["reason"] == "digital_zeros", failed
    assert [r["outcome"] for r in journal.decisions() if r.get("effect") == "SessionClosed"] == ["input_path_failed"]
    assert any("trouble with the line" in text for who, text in lines if who == "agent"), lines
    assert replay(folder).verdict == "CLEAN"
    # mic.wav (what the microphone heard, echo and all) and out.wav (what the card was
    # given) beside the journal; their clock and masks are the rehearsal tests' to check
    # (on a busy machine a device's recording did not always line up within their limits)
    for name in ("mic.wav", "out.wav"):
        assert (folder / name).stat().st_size > 44 * 1000, name  # a header and some seconds of audio
    # the agent was heard on the speaker: its recording holds about as much audio as was said
    import soundfile

    audio, rate = soundfile.read(recording, dtype="float32")
    loud = (abs(audio.reshape(len(audio), -1)[:, 0]) > 0.01).sum() / rate
    assert loud > 5.0, f"{loud:.1f} s of the agent's voice on the speaker"
