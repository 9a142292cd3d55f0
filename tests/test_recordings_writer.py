"""voices.recording: WAV files that are valid while they are written, read with soundfile."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest
import soundfile

from voices.recording import (
    MIC_WAV,
    OUT_WAV,
    CallRecorder,
    RecordingExistsError,
    WavTrack,
    pcm16,
)

RATE = 16000


def noise(seconds: float, seed: int = 1, level: float = 0.3) -> np.ndarray:
    return (np.random.default_rng(seed).uniform(-level, level, int(seconds * RATE))).astype(np.float32)


def as_int16(audio: np.ndarray) -> np.ndarray:
    return np.frombuffer(pcm16(audio), "<i2")


def read_int16(path) -> np.ndarray:
    audio, rate = soundfile.read(path, dtype="int16")
    assert rate == RATE
    return audio


def test_samples_convert_as_soundfile_converts_them() -> None:
    x = np.random.default_rng(3).uniform(-1.2, 1.2, 50000).astype(np.float32)
    x[:4] = [1.0, -1.0, 0.4 / 32768, -0.4 / 32768]
    buffer = io.BytesIO()
    soundfile.write(buffer, x, RATE, subtype="PCM_16", format="WAV")
    written = np.frombuffer(buffer.getvalue()[44:], "<i2")
    assert np.abs(written.astype(int) - as_int16(x)).max() <= 1  # libsndfile builds may round a hair differently


def test_a_track_is_readable_while_it_is_written_up_to_its_last_sync(tmp_path) -> None:
    path = tmp_path / "t.wav"
    track = WavTrack(path, RATE)
    assert soundfile.info(path).frames == 0  # a valid, empty WAV from the first moment
    first, second = noise(0.5, 1), noise(0.5, 2)
    track.place(0, first)
    track.sync()
    track.place(len(first), second)  # written, not yet synced: a reader sees the first half
    assert np.array_equal(read_int16(path), as_int16(first))
    track.sync()
    assert np.array_equal(read_int16(path), as_int16(np.concatenate([first, second])))
    track.close()
    assert np.array_equal(read_int16(path), as_int16(np.concatenate([first, second])))


def test_a_track_places_blocks_by_sample_with_silence_in_gaps_and_later_blocks_winning(tmp_path) -> None:
    path = tmp_path / "t.wav"
    track = WavTrack(path, RATE)
    a, b, c = noise(0.1, 1), noise(0.1, 2), noise(0.05, 3)
    track.place(800, a)  # 50 ms of silence first
    track.place(800 + len(a) + 1600, b)  # a 100 ms gap
    track.place(900, c)  # over part of a
    track.extend(a)  # right after the last audio
    track.close()
    expected = np.zeros(800 + len(a) + 1600 + len(b) + len(a), np.float32)
    expected[800 : 800 + len(a)] = a
    expected[800 + len(a) + 1600 : 800 + len(a) + 1600 + len(b)] = b
    expected[900 : 900 + len(c)] = c
    expected[-len(a) :] = a
    assert np.array_equal(read_int16(path), as_int16(expected))


def test_held_silence_counts_until_close_and_then_is_dropped(tmp_path) -> None:
    path = tmp_path / "t.wav"
    track = WavTrack(path, RATE)
    track.place(0, noise(0.2))
    track.hold_silence_until(RATE)  # the output was quiet until 1 s
    track.sync()
    assert soundfile.info(path).frames == RATE  # what a killed process leaves: up to then
    track.close()
    assert soundfile.info(path).frames == int(0.2 * RATE)  # a normal stop ends with the audio


def test_a_track_never_overwrites_a_file(tmp_path) -> None:
    path = tmp_path / "t.wav"
    path.write_bytes(b"precious")
    with pytest.raises(FileExistsError):
        WavTrack(path, RATE)
    assert path.read_bytes() == b"precious"


def test_a_recorder_refuses_a_folder_with_a_recording_and_touches_nothing(tmp_path) -> None:
    (tmp_path / OUT_WAV).write_bytes(b"precious")
    with pytest.raises(RecordingExistsError, match="out.wav") as err:
        CallRecorder(tmp_path, mic_rate=RATE, out_rate=22050)
    assert "\n" not in str(err.value)
    assert not (tmp_path / MIC_WAV).exists() and (tmp_path / OUT_WAV).read_bytes() == b"precious"


def test_a_recorder_writes_both_tracks_on_the_session_clock(tmp_path) -> None:
    now = [0.0]
    recorder = CallRecorder(tmp_path, mic_rate=RATE, out_rate=RATE, out_clock_ms=lambda: now[0], sync_s=0.05)
    frames = [noise(0.032, seed) for seed in range(10)]
    for i, frame in enumerate(frames):
        recorder.mic(100.0 + i * 32.0, frame)  # the first frame heard at 100 ms
    prompt = noise(0.3, 42)
    recorder.out_piece(250.0, prompt)
    now[0] = 2000.0  # nothing plays after the prompt: out.wav runs on in silence
    time.sleep(0.3)
    assert soundfile.info(tmp_path / OUT_WAV).frames == 2 * RATE
    assert soundfile.info(tmp_path / MIC_WAV).frames == 1600 + 10 * 512
    recorder.close()
    recorder.close()  # idempotent
    mic = read_int16(tmp_path / MIC_WAV)
    assert np.array_equal(mic[:1600], np.zeros(1600, np.int16))
    assert np.array_equal(mic[1600:], as_int16(np.concatenate(frames)))
    out = read_int16(tmp_path / OUT_WAV)
    assert len(out) == 4000 + len(prompt)  # ends with the prompt once stopped
    assert np.array_equal(out[4000:], as_int16(prompt)) and not out[:4000].any()
    recorder.mic(9999.0, frames[0])  # after close: ignored, not an error
    assert soundfile.info(tmp_path / MIC_WAV).frames == len(mic)


def test_a_device_stream_is_written_back_to_back_from_its_first_block(tmp_path) -> None:
    recorder = CallRecorder(tmp_path, mic_rate=RATE, out_rate=RATE)
    blocks = [noise(0.01, seed) for seed in range(20)]
    for i, block in enumerate(blocks):
        # callback times jitter; the stream's samples are contiguous all the same
        recorder.out_stream(500.0 + i * 10.0 + (3.0 if i % 2 else -3.0), block)
    recorder.close()
    out = read_int16(tmp_path / OUT_WAV)
    start = round(497.0 / 1000 * RATE)
    assert len(out) == start + 20 * 160
    assert np.array_equal(out[start:], as_int16(np.concatenate(blocks))) and not out[:start].any()
