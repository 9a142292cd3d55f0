"""The telephone line (voices.line): G.711 mu-law against the ITU reference's values, the
channel's fixed delay, noise floor, losses and jitter within their bounds, and the same
seed giving the same audio bit for bit. No models: numpy and soxr only."""

from __future__ import annotations

import numpy as np
import pytest

from voices.line import g711
from voices.line.pstn import FRAME_MS, LineDirection, LineError, LineSettings, PhoneLine

# -- G.711 mu-law ---------------------------------------------------------------------------

# (16-bit sample, code) from the ITU-T G.191 reference (g711.c, ulaw_compress)
KNOWN_CODES = [
    (0, 0xFF), (-1, 0x7F),  # zero, and negative zero (one's complement)
    (32767, 0x80), (-32768, 0x00),  # full scale, both ways
    (8, 0xFE), (-9, 0x7E),  # the first step of segment 0
    (132, 0xEF), (-133, 0x6F),  # the first level of segment 1
    (32124, 0x80), (31100, 0x81), (1000, 0xCE), (-1000, 0x4E), (4000, 0xAF),
]
# (code, 16-bit sample) from the reference's ulaw_expand (the ITU's reconstruction levels)
KNOWN_LEVELS = [
    (0xFF, 0), (0x7F, 0), (0xFE, 8), (0x7E, -8), (0xF0, 120), (0xEF, 132),
    (0x80, 32124), (0x00, -32124), (0x81, 31100), (0x8F, 16764), (0x90, 15996),
]


@pytest.mark.parametrize(("sample", "code"), KNOWN_CODES)
def test_known_samples_encode_to_the_reference_codes(sample, code):
    assert int(g711.encode(np.array([sample]))[0]) == code


@pytest.mark.parametrize(("code", "sample"), KNOWN_LEVELS)
def test_known_codes_decode_to_the_reference_levels(code, sample):
    assert int(g711.decode(np.array([code], np.uint8))[0]) == sample


def test_every_code_decodes_to_a_level_that_encodes_back_to_it():
    codes = np.arange(256, dtype=np.uint8)
    again = g711.encode(g711.decode(codes))
    differ = codes[again != codes]
    assert list(differ) == [0x7F]  # negative zero decodes to 0, which is (positive) 0xFF
    positive = g711.decode(np.arange(0xFF, 0x7F, -1, dtype=np.uint8))  # 0xFF (0) up to 0x80 (full scale)
    assert np.all(np.diff(positive.astype(np.int32)) > 0)
    assert np.array_equal(g711.decode(codes[:128]), -g711.decode(codes[128:]))  # symmetric


def test_a_round_trip_is_off_by_at_most_half_a_step_of_its_segment():
    x = np.arange(-32768, 32768, dtype=np.int32)
    codes = g711.encode(x)
    back = g711.decode(codes).astype(np.int32)
    segment = ((~codes.astype(np.int32)) >> 4) & 0x07
    step = 8 << segment  # 8 near silence ... 1024 near full scale
    inside = np.abs(x) <= 32124 + 512  # past the last level, the codec clips
    error = np.abs(back - x)
    assert np.all(error[inside] <= step[inside] // 2 + 4), int(np.max(error[inside] - step[inside] // 2))
    assert np.max(error) <= 32768 - 32124  # the clipped top


@pytest.mark.parametrize("level_dbfs", [-6.0, -20.0, -40.0])
def test_speech_levels_keep_mu_laws_signal_to_noise(level_dbfs):
    t = np.arange(8000) / 8000.0
    tone = (10 ** (level_dbfs / 20) * np.sqrt(2) * np.sin(2 * np.pi * 441.0 * t)).astype(np.float32)
    error = g711.round_trip(tone) - tone
    snr = 10 * np.log10(np.mean(tone.astype(np.float64) ** 2) / np.mean(error.astype(np.float64) ** 2))
    assert snr >= 33.0, (level_dbfs, snr)


# -- the line ----------------------------------------------------------------------------------


def speech_like(seconds: float, rate: int, seed: int = 1) -> np.ndarray:
    """Bursts of band-limited noise with gaps, at a speaking level."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    noise = np.convolve(rng.standard_normal(n), np.hanning(9) / 4, mode="same")
    gate = (np.sin(2 * np.pi * 1.3 * np.arange(n) / rate) > -0.2).astype(np.float64)
    return (0.1 * noise * gate).astype(np.float32)


def run(direction: LineDirection, audio: np.ndarray, block: int) -> np.ndarray:
    return np.concatenate([direction.process(audio[i : i + block]) for i in range(0, len(audio), block)])


@pytest.mark.parametrize(("rate", "block"), [(16000, 512), (22050, 220)], ids=["caller at 16 kHz", "voice at 22.05 kHz"])
def test_each_direction_is_a_fixed_delay_that_keeps_time(rate, block):
    direction = LineDirection(rate, LineSettings(noise_dbfs=None), stream=0)
    audio = np.zeros(3 * rate, np.float32)
    n = int(0.005 * rate)
    burst = (np.hanning(n) * np.sin(2 * np.pi * 1000 * np.arange(n) / rate) * 0.5).astype(np.float32)
    starts = [int(s * rate) for s in (0.5, 1.25, 2.0)]
    for s in starts:
        audio[s : s + n] += burst
    out = run(direction, audio, block)
    assert len(out) == len(audio) * 16000 // rate  # the same time, at 16 kHz
    assert direction.stats.short == 0
    assert 25.0 < direction.delay_ms < 32.0  # the packet, two 4 ms look-aheads
    envelope = np.convolve(np.abs(out), np.ones(16) / 16, mode="same")
    for s in starts:
        centre_ms = (s + n / 2) / rate * 1000
        window = slice(int(centre_ms * 16), int(centre_ms * 16) + 1600)
        heard_ms = (int(np.argmax(envelope[window])) + window.start) / 16.0
        assert abs(heard_ms - centre_ms - direction.delay_ms) < 0.5, (heard_ms - centre_ms, direction.delay_ms)


def test_the_same_seed_gives_the_same_audio_bit_for_bit_and_another_seed_does_not():
    settings = LineSettings(noise_dbfs=-45, loss=0.05, jitter_ms=10, seed=11)
    audio = speech_like(4.0, 16000)
    first = run(LineDirection(16000, settings, stream=0), audio, 512)
    again = run(LineDirection(16000, settings, stream=0), audio, 512)
    assert first.tobytes() == again.tobytes()
    other_seed = run(LineDirection(16000, LineSettings(noise_dbfs=-45, loss=0.05, jitter_ms=10, seed=12), stream=0), audio, 512)
    other_way = run(LineDirection(16000, settings, stream=1), audio, 512)  # the other direction draws its own
    assert not np.array_equal(first, other_seed) and not np.array_equal(first, other_way)
    # the losses do not move the noise: away from the lost packets, a line of the same seed
    # with no loss plays the same samples
    silence = np.zeros(4 * 16000, np.float32)
    lossless = run(LineDirection(16000, LineSettings(noise_dbfs=-45, seed=11), stream=0), silence, 512)
    lossy_line = LineDirection(16000, LineSettings(noise_dbfs=-45, loss=0.05, seed=11), stream=0)
    lossy = run(lossy_line, silence, 512)
    assert lossy_line.stats.lost > 0 and np.std(lossless[1000:]) > 0
    assert 0.6 < np.mean(lossless == lossy) < 1.0


def test_the_noise_floor_is_where_it_was_set():
    for level in (-45.0, -30.0):
        direction = LineDirection(16000, LineSettings(noise_dbfs=level), stream=0)
        out = run(direction, np.zeros(5 * 16000, np.float32), 512)[16000:]
        rms = 10 * np.log10(np.mean(out.astype(np.float64) ** 2))
        # white at 8 kHz, less what the band's edges (300 Hz, 3.4 kHz) take off
        assert level - 2.5 < rms < level + 0.5, (level, rms)
    silent = run(LineDirection(16000, LineSettings(noise_dbfs=None), stream=0), np.zeros(16000, np.float32), 512)
    assert not silent.any()


def test_losses_are_the_fraction_asked_for_and_concealed_by_the_last_packet_attenuated():
    direction = LineDirection(16000, LineSettings(loss=0.1, seed=3), stream=0)
    run(direction, np.zeros(100 * 16000, np.float32), 512)  # 5000 packets
    stats = direction.stats
    assert stats.packets == 4999  # all but the last, whose look-ahead is still to come
    assert abs(stats.lost / stats.packets - 0.1) < 4 * np.sqrt(0.1 * 0.9 / stats.packets)
    assert stats.concealed == stats.lost + stats.late and stats.late == 0
    # the concealment itself: the last packet played, at half its level, a quarter, ..., then silence
    line = LineDirection(16000, LineSettings(noise_dbfs=None), stream=0)
    packet = g711.encode(g711.pcm16(np.full(160, 0.25)))
    played = line._receive(packet)
    assert np.allclose(played, g711.decode(packet) / 32768.0)
    concealed = [line._receive(None) for _ in range(4)]
    assert [round(float(c[0] / played[0]), 3) for c in concealed] == [0.5, 0.25, 0.125, 0.0]
    assert np.allclose(line._receive(packet), played)  # a packet that arrives ends it


def test_jitter_is_absorbed_by_a_buffer_that_adds_its_depth_and_lets_about_one_in_a_hundred_be_late():
    settings = LineSettings(noise_dbfs=None, jitter_ms=20.0, seed=5)
    direction = LineDirection(16000, settings, stream=0)
    assert direction.jitter_buffer_ms == 100.0  # 4.6 x 20 ms, in whole packets
    assert abs(direction.delay_ms - LineDirection(16000, LineSettings(), stream=0).delay_ms - 100.0) < 1e-9
    run(direction, np.zeros(100 * 16000, np.float32), 512)
    stats = direction.stats
    assert abs(stats.jitter_ms - 20.0) < 2.0  # RFC 3550's jitter of the line is the mean asked for
    assert stats.as_dict()["jitter_ms"] == round(stats.jitter_ms, 2)
    late = stats.late / stats.packets
    assert 0.002 < late < 0.015, late  # e^-5 = 0.7 % expected
    assert stats.lost == 0 and stats.concealed == stats.late


def test_through_gives_a_clip_back_aligned_and_as_long():
    direction = LineDirection(16000, LineSettings(noise_dbfs=None), stream=0)
    audio = speech_like(1.0, 16000)
    heard = direction.through(audio)
    assert len(heard) == len(audio)
    lags = range(-40, 41)
    scores = [float(np.dot(audio[400:-400], heard[400 + k : len(heard) - 400 + k])) for k in lags]
    assert abs(list(lags)[int(np.argmax(scores))]) <= 2  # aligned within 2 samples (the high-pass's phase)


def test_a_phone_line_describes_both_directions():
    line = PhoneLine(LineSettings(jitter_ms=10, seed=4))
    described = line.describe()
    assert described["kind"] == "pstn" and described["codec"] == "G.711 mu-law" and described["packet_ms"] == FRAME_MS
    assert described["jitter_buffer_ms"] == 60.0
    assert line.round_trip_ms == pytest.approx(line.uplink.delay_ms + line.downlink.delay_ms)
    assert line.downlink.rate_in == 22050 and line.downlink.rate_out == 16000


@pytest.mark.parametrize(("settings", "says"), [
    ({"kind": "isdn"}, "--line isdn: expected pstn"),
    ({"loss": -0.1}, "--line-loss -0.1: expected a fraction"),
    ({"loss": 1.0}, "--line-loss 1: expected a fraction"),
    ({"jitter_ms": -3.0}, "--line-jitter-ms -3: expected 0 to 200 ms"),
    ({"noise_dbfs": 6.0}, "--line-noise-dbfs 6: expected a level"),
    ({"seed": -1}, "--line-seed -1: expected a whole number"),
])
def test_settings_that_cannot_be_used_are_refused_in_one_line(settings, says):
    with pytest.raises(LineError) as caught:
        LineSettings(**settings)
    assert str(caught.value).startswith(says) and "\n" not in str(caught.value)


# -- a line under a framework's speaker (voices.line.feed) --------------------------------------


def test_a_line_feed_carries_what_was_placed_at_its_time_and_silence_between():
    """A speaker that only hears of the agent's audio while it speaks places it at the
    time it plays; the line runs as a stream all the same, each piece out the line's
    delay after its place, nothing but silence between, what was taken back never heard."""
    from voices.line.feed import LineFeed

    direction = LineDirection(22050, LineSettings(noise_dbfs=None), stream=1)
    feed = LineFeed(direction)
    heard: list[tuple[float, np.ndarray]] = []
    feed.on_heard = lambda at, pcm16: heard.append((at, np.frombuffer(pcm16, np.int16).astype(np.float32) / 32768.0))
    feed.start(10.0)
    t = np.arange(int(0.2 * 22050)) / 22050
    tone = (0.3 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    pcm = (tone * 32767).astype(np.int16).tobytes()
    half = len(pcm) // 4 * 2  # two pieces of one prompt, the second stamped a rounding late
    feed.place(10.5, pcm[:half])
    feed.place(10.5 + (half // 2) / 22050 + 2e-5, pcm[half:])
    feed.place(11.2, pcm)  # another, cut 50 ms in (a barge-in)
    for k in range(1, 31):
        feed.advance(10.0 + k * 0.02)
    feed.drop_from(11.25)
    for k in range(31, 76):
        feed.advance(10.0 + k * 0.02)
    assert feed.late_samples == 0
    starts = [at for at, _ in heard]
    out = np.concatenate([x for _, x in heard])
    assert starts[0] == 10.0 and len(out) == pytest.approx(1.5 * 16000, abs=1)  # the stream, 1.5 s of it
    assert all(b == pytest.approx(a + len(x) / 16000, abs=1e-9) for (a, x), b in zip(heard, starts[1:]))
    loud = np.flatnonzero(np.abs(out) > 0.05) / 16000 * 1000  # ms from the line's start
    delay = direction.delay_ms
    first = loud[loud < 1000]
    assert first[0] == pytest.approx(500 + delay, abs=2) and first[-1] == pytest.approx(700 + delay, abs=2)
    assert np.all(np.diff(first) < 1.0)  # the two pieces are one tone: no gap between them
    second = loud[loud >= 1000]
    assert second[0] == pytest.approx(1200 + delay, abs=2) and second[-1] == pytest.approx(1250 + delay, abs=2)
    assert np.abs(out[: int((500 + delay - 3) * 16)]).max() == 0.0  # silence before, no noise asked for


def test_audio_placed_where_the_line_has_already_been_fed_is_late_and_dropped():
    from voices.line.feed import LineFeed

    feed = LineFeed(LineDirection(16000, LineSettings(noise_dbfs=None), stream=1))
    feed.start(0.0)
    feed.advance(0.1)
    feed.place(0.09, np.full(320, 1000, np.int16).tobytes())  # 20 ms from 90 ms: the first 10 ms are gone
    assert feed.late_samples == 160
