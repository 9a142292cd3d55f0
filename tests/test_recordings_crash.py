"""A session's audio survives the session: mic.wav and out.wav from real calls.

A `lull rehearse` call (file backend, and audio backend on the PulseAudio lab) killed
with SIGKILL in the middle leaves both files readable by soundfile, as long as the call
had run, aligned to the journal's clock; a normal stop leaves the same files the
whole-call writer made at stop; an existing recording is never overwritten.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import soundfile

from sessions.journal import read_journal

LULL = Path(sys.executable).parent / "lull"
RATE = 16000
TONE_AT_S, TONE_END_S = 1.0, 3.0  # when the caller file plays its tone


def caller_wav(path: Path) -> Path:
    """A caller file: faint noise, then a 1 kHz tone from 1 s to 3 s (the VAD does not
    take it for speech, so the call walks its usual way), easy to find in mic.wav."""
    rng = np.random.default_rng(5)
    audio = (rng.standard_normal(int(TONE_END_S * RATE)) * 1e-3).astype(np.float32)
    t = np.arange(int((TONE_END_S - TONE_AT_S) * RATE)) / RATE
    audio[int(TONE_AT_S * RATE) :] += (0.1 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    soundfile.write(path, audio, RATE, subtype="PCM_16")
    return path


def journal_lines(folder: Path) -> list[dict]:
    path = folder / "journal.jsonl"
    if not path.exists():
        return []
    lines = []
    for raw in path.read_text().splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            break  # a line being written
    return lines


def wait_for_record(folder: Path, kind: str, process: subprocess.Popen, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [r for r in journal_lines(folder) if r.get("kind") == kind]
        if found:
            return found[0]
        if process.poll() is not None:
            raise AssertionError(f"lull exited early ({process.returncode}): {process.stderr.read()}")
        time.sleep(0.02)
    raise AssertionError(f"no {kind} record within {timeout} s")


def session_s_now(record: dict) -> float:
    """Now on the session's clock, from a journal record's session time and wall time."""
    wall = datetime.fromisoformat(record["wall"]).timestamp()
    return record["t_ms"] / 1000.0 + (time.time() - wall)


def first_record(folder: Path, kind: str, **match) -> dict:
    return next(r for r in journal_lines(folder) if r.get("kind") == kind and all(r.get(k) == v for k, v in match.items()))


def kill_after_the_question(args: list[str], folder: Path, env: dict) -> float:
    """Run `lull rehearse ... --headless --journal folder`; 1.5 s into the quiet wait
    after the first question, SIGKILL it. Returns the session time of the kill (s)."""
    process = subprocess.Popen(
        [str(LULL), "rehearse", *args, "--headless", "--journal", str(folder)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        armed = wait_for_record(folder, "window_armed", process)
        time.sleep(1.5)
        killed_at = session_s_now(armed)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    return killed_at


def rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(audio, dtype=np.float64)))) if len(audio) else 0.0


def check_killed_recordings(folder: Path, killed_at: float) -> tuple[np.ndarray, int, np.ndarray, int]:
    journal = read_journal(folder)
    assert journal.inputs(), journal.report()
    mic, mic_rate = soundfile.read(folder / "mic.wav", dtype="float32")
    out, out_rate = soundfile.read(folder / "out.wav", dtype="float32")
    # written as the call ran: up to the last sync, at most ~0.5 s (plus a little lag) before the kill
    for name, audio, rate in (("mic.wav", mic, mic_rate), ("out.wav", out, out_rate)):
        length = len(audio) / rate
        assert killed_at - 1.2 < length < killed_at + 0.1, (name, length, killed_at)
    # the agent's voice where the output says it played (its own clock, journaled beside
    # the core's: a busy loop hears of it later), silence in the quiet wait
    started = first_record(folder, "playback_observed", event="started")["stream_ms"] / 1000.0
    ended = first_record(folder, "window_armed")["t_ms"] / 1000.0
    assert rms(out[: int((started - 0.05) * out_rate)]) < 1e-4
    assert rms(out[int(started * out_rate) : int(ended * out_rate)]) > 0.02
    assert np.abs(out[int((ended + 0.3) * out_rate) :]).max(initial=0.0) < 1e-3
    return mic, mic_rate, out, out_rate


def test_a_killed_file_backend_call_leaves_readable_aligned_recordings(tmp_path) -> None:
    caller = caller_wav(tmp_path / "caller.wav")
    folder = tmp_path / "take"
    killed_at = kill_after_the_question(["--backend", "file", "--caller", str(caller)], folder, dict(os.environ))
    mic, _, _, _ = check_killed_recordings(folder, killed_at)
    # the caller's tone sits where the file backend played it: from the call's start
    call_start = first_record(folder, "start_call")["t_ms"] / 1000.0
    onset = np.flatnonzero(np.abs(mic) > 0.05)[0] / RATE
    assert abs(onset - (call_start + TONE_AT_S)) < 0.03, (onset, call_start)
    assert rms(mic[int((call_start + TONE_END_S + 0.05) * RATE) :]) < 2e-4  # the faint noise after the file


def test_a_killed_audio_backend_call_leaves_readable_recordings(pulse_lab, tmp_path) -> None:
    floor = pulse_lab.noise_floor()  # a quiet room, not a dead input
    try:
        folder = tmp_path / "take"
        killed_at = kill_after_the_question(
            ["--backend", "audio", "--input-device", "test_mic", "--output-device", "test_speaker"],
            folder,
            pulse_lab.client_env(),
        )
    finally:
        floor.stop()
    mic, _, _, _ = check_killed_recordings(folder, killed_at)
    level = 20 * np.log10(rms(mic[RATE:]) + 1e-12)
    assert -70 < level < -50, level  # the room's -60 dBFS noise, heard all along


# -- a normal stop --------------------------------------------------------------------


def whole_call_files(mic_frames, pieces, out_rate, folder: Path) -> None:
    """What the writer before streaming made at stop from the same audio (kept here as
    the reference): frames and chunks placed at round(t * rate), the agent's chunks mixed
    from the first one's time, clipped, PCM_16."""

    def place(items, rate):
        if not items:
            return np.zeros(0, np.float32)
        end = max(t / 1000 * rate + len(a) for t, a in items)
        track = np.zeros(int(end) + 1, np.float32)
        for t, audio in items:
            i = max(0, int(round(t / 1000 * rate)))
            n = min(len(audio), len(track) - i)
            track[i : i + n] = audio[:n]
        return np.clip(track, -1.0, 1.0)

    def mix(timeline, rate):
        start = timeline[0][0]
        end = max(t + len(a) / rate * 1000 for t, a in timeline)
        track = np.zeros(int((end - start) / 1000 * rate) + 1, np.float32)
        for t, audio in timeline:
            i = int((t - start) / 1000 * rate)
            track[i : i + len(audio)] += audio[: len(track) - i]
        return track, start

    folder.mkdir()
    soundfile.write(folder / "mic.wav", place(mic_frames, RATE), RATE, subtype="PCM_16")
    audio, start = mix(pieces, out_rate)
    soundfile.write(folder / "out.wav", place([(start, audio)], out_rate), out_rate, subtype="PCM_16")


@pytest.fixture(scope="module")
def models(lexical_models):
    return lexical_models  # loaded once for the run (conftest)


def test_a_normal_stop_leaves_the_files_the_whole_call_writer_made(models, tmp_path) -> None:
    from sessions.live import LiveSession
    from voices.backends import FileBackend
    from sessions.flowfiles import load_flow

    folder = tmp_path / "take"
    backend = FileBackend(models, caller_wav(tmp_path / "caller.wav"), record_dir=folder)
    session = LiveSession(load_flow("reference_code"), backend, journal_dir=folder)
    mic_frames, pieces = [], []
    hear = backend.on_frames

    def heard(frames, t_ms):
        if not session.closed.is_set():
            mic_frames.append((t_ms, frames.copy()))
        hear(frames, t_ms)

    backend.on_frames = heard

    async def call():
        await session.start()
        play = backend.output.on_played
        backend.output.on_played = lambda t, chunk: (pieces.append((t, chunk)), play(t, chunk))
        await asyncio.sleep(4.5)  # the greeting, and the disclosure cut short by the stop
        await session.stop()

    asyncio.run(call())
    assert len(pieces) >= 2
    whole_call_files(mic_frames, pieces, models.voice.sample_rate, tmp_path / "before")

    for name in ("mic.wav", "out.wav"):
        new, new_info = soundfile.read(folder / name, dtype="int16"), soundfile.info(folder / name)
        old, old_info = soundfile.read(tmp_path / "before" / name, dtype="int16"), soundfile.info(tmp_path / "before" / name)
        assert (new_info.samplerate, new_info.channels, new_info.subtype) == (old_info.samplerate, old_info.channels, "PCM_16")
        new, old = new[0], old[0]
        # the old writer ended with one or two extra zero samples
        assert 0 <= len(old) - len(new) <= 2 and not old[len(new) :].any(), (name, len(old), len(new))
        if name == "mic.wav":
            assert np.abs(new.astype(int) - old[: len(new)]).max() <= 1
    # the agent's chunks: each at its own time to the sample (the old mix placed later
    # chunks from the first one's time, so it may sit one sample off), silence elsewhere
    out = soundfile.read(folder / "out.wav", dtype="float32")[0]
    rate = models.voice.sample_rate
    covered = np.zeros(len(out), bool)
    for t, chunk in pieces:
        i = int(round(t / 1000 * rate))
        assert np.abs(out[i : i + len(chunk)] - np.clip(chunk, -1, 1)).max() <= 1.5 / 32768
        covered[i : i + len(chunk)] = True
    assert not out[~covered].any()
    assert len(out) == max(int(round(t / 1000 * rate)) + len(c) for t, c in pieces)


def test_an_existing_recording_is_never_overwritten(models, tmp_path) -> None:
    from voices.backends import FileBackend
    from voices.recording import RecordingExistsError

    folder = tmp_path / "take"
    folder.mkdir()
    (folder / "mic.wav").write_bytes(b"an earlier take")
    with pytest.raises(RecordingExistsError, match="mic.wav"):
        FileBackend(models, caller_wav(tmp_path / "caller.wav"), record_dir=folder)
    assert (folder / "mic.wav").read_bytes() == b"an earlier take"
    assert sorted(p.name for p in folder.iterdir()) == ["mic.wav"]
