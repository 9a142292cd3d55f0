"""`--line pstn` beyond the file backend: a recorded caller on a telephone line through a
real Pipecat pipeline and a real LiveKit AgentSession (on virtual time, about 4 s each:
the models' work in threads takes no virtual time), and the person at the laptop on a
line through the audio backend (the PulseAudio lab's microphone and speaker, in real
time, about 15 s). Each call reads the code back, replays CLEAN, journals the line and
each answered turn's wait on it, and records what each end heard from the line:
mic.wav and out.wav at 16 kHz with next to nothing above the line's 4 kHz.

The caller and the flow are the file backend's line test's (test_phone_line_call): the
agent's own piper voice saying the code and the confirmation, and the shipped flow with
short prompts."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import soundfile
from test_phone_line_call import caller_wav, short_flow
from typer.testing import CliRunner

from sessions.flowfiles import load_flow
from sessions.journal import read_journal
from voices.line.pstn import LineSettings


def above_4k(audio: np.ndarray, rate: int) -> float:
    """The share of the audio's energy above 4 kHz (the line carries none)."""
    spectrum = np.abs(np.fft.rfft(np.asarray(audio, np.float64))) ** 2
    return float(spectrum[np.fft.rfftfreq(len(audio), 1.0 / rate) > 4000].sum() / spectrum.sum())


def check_a_call_on_the_line(folder, caller, seed: int, heard: np.ndarray | None = None) -> dict:
    """What every call on a line must leave in its session folder; returns the journal's
    line header. `heard`: what the agent heard from the line, when mic.wav cannot show
    its spectrum (a sound card's blocks are placed at their callbacks' times, and a few
    samples' gap between two is a click)."""
    from console.cli import app

    journal = read_journal(folder)
    line = journal.header["line"]
    assert line["kind"] == "pstn" and line["seed"] == seed and line["codec"] == "G.711 mu-law"
    decisions = list(journal.decisions())
    filled = [(r["slot"], r["value"]) for r in decisions if r.get("effect") == "SlotFilled"]
    assert filled[:1] == [("reference_code", "[redacted]")] and ("code_confirmed", True) in filled, filled
    # each answered turn's wait: the agent's gap and the line's round trip, as on the file backend
    waits = [r for r in decisions if r.get("kind") == "turn_latency"]
    round_trip = line["delay_ms"]["caller_to_agent"] + line["delay_ms"]["agent_to_caller"]
    assert len(waits) >= 2, waits
    for wait in waits:
        assert wait["line_ms"] == pytest.approx(round_trip, abs=0.2)
        assert wait["caller_wait_on_line_ms"] == pytest.approx(wait["perceived_gap_ms"] + wait["line_ms"], abs=0.2)
    packets = next(r for r in decisions if r.get("kind") == "phone_line")
    for direction in ("caller_to_agent", "agent_to_caller"):
        assert packets[direction]["packets"] > 300 and packets[direction]["short"] == 0, packets
    # what the agent heard from the line and what the caller heard from it, band-limited;
    # the caller's own recording is not
    mic, mic_rate = soundfile.read(folder / "mic.wav", dtype="float32")
    out, out_rate = soundfile.read(folder / "out.wav", dtype="float32")
    said, said_rate = soundfile.read(caller, dtype="float32")
    assert mic_rate == out_rate == 16000
    assert np.abs(mic).max() > 0.1 and np.abs(out).max() > 0.1  # the caller's words, the agent's prompts
    assert above_4k(said, said_rate) > 0.003
    heard = mic if heard is None else heard
    assert above_4k(heard, 16000) < 1e-4 and above_4k(out, out_rate) < 1e-4, (above_4k(heard, 16000), above_4k(out, out_rate))
    assert {r["track"] for r in decisions if r.get("kind") == "audio_masked"} == {"mic", "out"}
    replayed = CliRunner().invoke(app, ["sessions", "replay", str(folder)])
    assert replayed.exit_code == 0 and "CLEAN" in replayed.output, replayed.output
    return line


def framework_call(backend_class, models, tmp_path, seed: int):
    from sessions.live import LiveSession
    from voices.virtual_loop import run_virtual

    # the question ends about 3.5 s in and the read-back about 10 s in
    caller = caller_wav(models, tmp_path / "caller.wav", (5.0, "my code is four eight two one"), (11.0, "yes, that is right"))
    backend = backend_class(models, caller, line=LineSettings(seed=seed))
    lines: list[tuple[str, str]] = []
    backend.on_line = lambda who, text: lines.append((who, text))
    folder = tmp_path / "call"

    async def call() -> LiveSession:
        session = LiveSession(load_flow(str(short_flow(tmp_path / "short.json"))), backend, journal_dir=folder,
                              clock=asyncio.get_running_loop().time)
        await session.start()
        await asyncio.wait_for(session.closed.wait(), 60)  # virtual seconds: the call takes about 15
        return session

    session = run_virtual(call())
    said = [text for who, text in lines if who == "agent"]
    assert any("4821" in text or "4 8 2 1" in text for text in said), lines  # read back, as heard down the line
    assert session.runtime.snapshot()["ladder"]["outcome"] == "completed", lines
    assert backend.line.summary().startswith("on a pstn line: 8 kHz G.711 mu-law, noise -45 dBFS")
    assert "line pstn 8 kHz mu-law" in backend.media_line()
    assert [lat.as_dict()["caller_wait_on_line_ms"] for lat in backend.latencies]  # what `lull rehearse` sums up
    return folder, caller


def test_a_pipecat_call_on_a_phone_line_reads_the_code_back_and_replays_clean(loaded_models, tmp_path):
    pytest.importorskip("pipecat", reason="the pipecat extra is not installed")
    from console.cli._app import quiet_pipecat_logs
    from voices.pipecat.backend import PipecatBackend

    quiet_pipecat_logs()
    folder, caller = framework_call(PipecatBackend, loaded_models, tmp_path, seed=3)
    check_a_call_on_the_line(folder, caller, seed=3)
    assert "on a pstn line" in read_journal(folder).header["pipeline"]["transport"]


def test_a_livekit_call_on_a_phone_line_reads_the_code_back_and_replays_clean(loaded_models, tmp_path):
    pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")
    from voices.livekit import quiet_livekit_logs
    from voices.livekit.backend import LiveKitBackend

    quiet_livekit_logs()
    folder, caller = framework_call(LiveKitBackend, loaded_models, tmp_path, seed=5)
    check_a_call_on_the_line(folder, caller, seed=5)
    assert "on a pstn line" in read_journal(folder).header["pipeline"]["audio"]


def test_the_person_at_the_laptop_on_a_phone_line_answers_the_code(pulse_lab, loaded_models, tmp_path):
    """The audio backend on the lab's devices: the microphone's blocks through the line
    to the agent, the agent's voice down the line to the speaker."""
    from test_e2e_audio import Call, run, transcript_of
    from test_e2e_audio import caller_wav as said_into_the_mic

    floor = pulse_lab.noise_floor()
    capture = pulse_lab.start_capture(tmp_path / "speaker.wav")
    call = Call(pulse_lab, loaded_models, load_flow(str(short_flow(tmp_path / "short.json"))), tmp_path / "take",
                line=LineSettings(seed=2))
    # what the microphone gave and what the line delivered of it, block by block
    uplink, raw, heard = call.backend.line.uplink, [], []
    through = uplink.process

    def tapped(block):
        raw.append(np.array(block))
        heard.append(through(block))
        return heard[-1]

    uplink.process = tapped
    code = said_into_the_mic(loaded_models, tmp_path, "code", "my code is four eight two one")
    yes = said_into_the_mic(loaded_models, tmp_path, "yes", "yes, that is right")

    async def scenario():
        await call.session.start()
        await call.question_asked("ask_code")
        await call.say(code)
        await call.question_asked("confirm_code")
        await call.say(yes)
        await call.until(call.session.closed.is_set, 30)

    try:
        run(call, scenario)
    finally:
        floor.stop()
        capture.stop()
    assert call.session.runtime.state["reference_code"] == "4821", call.last_events()
    assert call.session.runtime.ladder.outcome == "completed", call.last_events()
    raw, heard = np.concatenate(raw), np.concatenate(heard)
    assert len(raw) == len(heard) and above_4k(raw, 16000) > 0.003  # the piper caller, as the microphone heard it
    check_a_call_on_the_line(tmp_path / "take", code, seed=2, heard=heard)
    # what the speaker played is what came out of the line: band-limited, and the agent's words
    played, rate = soundfile.read(tmp_path / "speaker.wav", dtype="float32")
    played = played if played.ndim == 1 else played.mean(axis=1)
    assert above_4k(played, rate) < 1e-3, above_4k(played, rate)
    assert "your code" in transcript_of(tmp_path / "speaker.wav")
