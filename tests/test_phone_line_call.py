"""`lull rehearse --line pstn`: a recorded caller on a telephone line through the file
backend, as a user runs it (a real process, the real models), completes a call that
reads the code back, journals the line, and replays CLEAN; bad line options get one
clear line before anything loads."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile
from test_cli_errors import lull, one_error_line
from typer.testing import CliRunner

from sessions.flowfiles import library_flow_path
from sessions.journal import read_journal

# the shipped flow with short prompts and a quick lookup: the same stages, slots, redaction
# and confirmation, in about 15 s of real time
SHORT_PROMPTS = {"greet": "Hi.", "disclosure": "Calls are recorded.", "ask_code": "Your code?",
                 "confirm_code": "I heard {reference_code}. Right?", "lookup": "One moment.", "close_found": "Found it. Goodbye."}


def short_flow(path):
    data = json.loads(library_flow_path("reference_code").read_text())
    for stage in data["stages"]:
        if stage["id"] in SHORT_PROMPTS:
            stage["say"] = SHORT_PROMPTS[stage["id"]]
            if "verbatim" in stage:
                stage["verbatim"] = stage["say"]
    data["tools"][0]["latency_ms"] = 300
    data["name"] = "short_reference_code"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="module")
def models(loaded_models):
    return loaded_models  # loaded once for the run (conftest)


def caller_wav(models, path, *said: tuple[float, str]):
    from voices.stt import resample

    audio = np.zeros(16000 * 13, np.float32)
    for at, words in said:
        speech = resample(models.voice.synthesize_all(words), models.voice.sample_rate, 16000) * 0.8
        i = int(at * 16000)
        audio[i : i + len(speech)] += speech
    soundfile.write(path, audio, 16000)
    return path


def test_a_call_on_a_phone_line_reads_the_code_back_and_replays_clean(models, tmp_path):
    from console.cli import app

    # the question ends about 3.5 s in and the read-back about 10 s in
    caller = caller_wav(models, tmp_path / "caller.wav", (5.0, "my code is four eight two one"), (11.0, "yes, that is right"))
    take = tmp_path / "take"
    result = lull("rehearse", str(short_flow(tmp_path / "short.json")), "--backend", "file", "--caller", str(caller),
                  "--line", "pstn", "--line-seed", "3", "--headless", "--journal", str(take), timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "on a pstn line: 8 kHz G.711 mu-law, noise -45 dBFS" in result.stderr
    assert "agent > I heard [redacted]. Right?" in result.stdout, result.stdout  # the code, read back (redacted: piped)
    assert "call ended: completed" in result.stdout, result.stdout
    assert "(on the line)" in result.stdout

    journal = read_journal(take)
    line = journal.header["line"]
    assert line["kind"] == "pstn" and line["seed"] == 3 and line["codec"] == "G.711 mu-law"
    decisions = list(journal.decisions())
    filled = [(r["slot"], r["value"]) for r in decisions if r.get("effect") == "SlotFilled"]
    assert filled == [("reference_code", "[redacted]"), ("code_confirmed", True)]
    waits = [r for r in decisions if r.get("kind") == "turn_latency"]
    assert waits and all(r["caller_wait_on_line_ms"] == pytest.approx(r["perceived_gap_ms"] + r["line_ms"], abs=0.2) for r in waits)
    packets = next(r for r in decisions if r.get("kind") == "phone_line")
    for direction in ("caller_to_agent", "agent_to_caller"):
        assert packets[direction]["packets"] > 500 and packets[direction]["short"] == 0
    # both recordings are what one end heard from the line, at 16 kHz; the read-back is masked
    assert soundfile.info(take / "mic.wav").samplerate == 16000 and soundfile.info(take / "out.wav").samplerate == 16000
    assert {r["track"] for r in decisions if r.get("kind") == "audio_masked"} == {"mic", "out"}

    replayed = CliRunner().invoke(app, ["sessions", "replay", str(take)])
    assert replayed.exit_code == 0 and "CLEAN" in replayed.output, replayed.output


@pytest.mark.parametrize(("args", "says"), [
    (["--line", "foo"], "--line foo: expected pstn"),
    (["--line", "pstn", "--line-loss", "-0.1"], "--line-loss -0.1: expected a fraction of packets from 0 to below 1"),
    (["--line", "pstn", "--line-loss", "1.5"], "--line-loss 1.5: expected a fraction"),
    (["--line", "pstn", "--line-jitter-ms", "-5"], "--line-jitter-ms -5: expected 0 to 200 ms"),
    (["--line-noise-dbfs", "-30"], "--line-noise-dbfs needs --line pstn"),
], ids=["unknown line", "negative loss", "loss over one", "negative jitter", "an option without --line"])
def test_rehearse_refuses_a_line_it_cannot_make_in_one_line(tmp_path, args, says):
    caller = tmp_path / "caller.wav"
    soundfile.write(caller, np.zeros(1600, np.float32), 16000)
    one_error_line(lull("rehearse", "--backend", "file", "--caller", str(caller), "--headless", *args), says)


def test_rehearse_refuses_a_line_on_a_backend_that_cannot_take_one():
    one_error_line(lull("rehearse", "--backend", "text", "--headless", "--line", "pstn"),
                   "--line pstn: the text backend has no audio to put on a telephone line",
                   "use --backend file, audio, pipecat or livekit")


@pytest.mark.parametrize(("args", "says"), [
    (["--backend", "pipecat", "--telephony", "twilio", "--caller", "CALLER"],
     ["--line pstn and --telephony twilio: a twilio media stream is already the call's telephone line", "use one or the other"]),
    (["--backend", "pipecat"], ["--line pstn: on --backend pipecat the line needs a recorded caller (--caller caller.wav)",
                                "--backend audio takes a line"]),
    (["--backend", "livekit"], ["--line pstn: on --backend livekit the line needs a recorded caller"]),
], ids=["with telephony", "pipecat at the devices", "livekit at the devices"])
def test_rehearse_refuses_a_line_a_framework_call_cannot_take_in_one_line(tmp_path, args, says):
    caller = tmp_path / "caller.wav"
    soundfile.write(caller, np.zeros(1600, np.float32), 16000)
    args = [str(caller) if a == "CALLER" else a for a in args]
    one_error_line(lull("rehearse", "--headless", "--line", "pstn", *args), *says)


def test_bench_turn_refuses_a_line_it_cannot_make_before_running():
    one_error_line(lull("bench", "turn", "--line", "isdn"), "--line isdn: expected pstn")
    one_error_line(lull("bench", "turn", "--line", "pstn", "--line-loss", "-1"), "--line-loss -1: expected a fraction")
