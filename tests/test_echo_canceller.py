"""The echo canceller's plumbing (with a fake module), the real WebRTC module on a
synthetic echo path, the echo gate, and the file backend's simulated room."""

from __future__ import annotations

import numpy as np
import pytest

from voices.echo import FRAME, RATE, EchoCanceller, EchoGate, SimulatedEchoPath, dbfs, power


class FakeProcessor:
    """Subtracts the far end it was given `lag` frames earlier (a perfect canceller of an
    echo path of whole frames), keeping the order of calls."""

    def __init__(self, lag: int = 0) -> None:
        self.far: list[np.ndarray] = []
        self.near = 0
        self.calls: list[str] = []
        self.lag = lag
        self.delay_ms = None

    def reverse(self, frame):
        assert frame.dtype == np.int16 and len(frame) == FRAME
        self.far.append(frame.copy())
        self.calls.append("far")

    def process(self, frame):
        assert frame.dtype == np.int16 and len(frame) == FRAME
        i = self.near - self.lag
        self.near += 1
        self.calls.append("near")
        if 0 <= i < len(self.far):
            return (frame.astype(np.int32) - self.far[i]).clip(-32768, 32767).astype(np.int16)
        return frame

    def set_stream_delay_ms(self, ms):
        self.delay_ms = ms


def speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    """Noise shaped like speech (syllables at about 4 Hz), not a pure tone."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    noise = rng.standard_normal(n).astype(np.float32)
    noise = np.convolve(noise, np.ones(8) / 8, mode="same").astype(np.float32)
    envelope = (0.5 + 0.5 * np.sin(2 * np.pi * 4 * np.arange(n) / RATE)).astype(np.float32)
    return 0.3 * noise * envelope


def test_frames_are_10ms_int16_far_before_near_and_time_is_kept():
    fake = FakeProcessor()
    aec = EchoCanceller(processor=fake, stream_delay_ms=47.6)
    assert fake.delay_ms == 48
    far = speechlike(0.2)
    aec.far(far[:1000], RATE)  # not a whole number of frames: the rest waits
    assert fake.calls == ["far"] * 6
    out, t = aec.near(np.zeros(512, np.float32), 1000.0)
    assert len(out) == 480 and t == 1000.0  # whole frames only; 32 samples wait
    out, t = aec.near(np.zeros(512, np.float32), 1032.0)
    assert len(out) == 480 and t == pytest.approx(1030.0)  # starts with the 32 held samples
    assert fake.near == 6


def test_the_far_end_is_resampled_to_16k_and_a_perfect_canceller_removes_it():
    fake = FakeProcessor()
    aec = EchoCanceller(processor=fake)
    tone = (0.3 * np.sin(2 * np.pi * 300 * np.arange(22050) / 22050)).astype(np.float32)
    aec.far(tone, 22050)
    got = np.concatenate(fake.far).astype(np.float32) / 32768
    assert abs(len(got) - RATE) <= 2 * FRAME + 400  # one second, minus the resampler's hold-back
    assert abs(np.sqrt(np.mean(got[2000:] ** 2)) - 0.3 / np.sqrt(2)) < 0.01


def test_disabled_it_passes_the_mic_through_and_still_measures_the_echo_path():
    aec = EchoCanceller(enabled=False)
    far = speechlike(2.0)
    echo = 0.4 * far  # -8 dB, no delay
    heard = []
    for i in range(0, len(far), 512):
        aec.far(far[i : i + 512], RATE)
        out, _ = aec.near(echo[i : i + 512], i / RATE * 1000)
        heard.append(out)
    heard = np.concatenate(heard)
    assert np.allclose(heard, echo[: len(heard)])
    assert aec.meter.erl_db == pytest.approx(8.0, abs=1.5)
    assert aec.meter.erle_db == pytest.approx(0.0, abs=0.1)
    assert aec.describe().startswith("aec off · echo path 8 dB")


def test_the_figures_skip_double_talk():
    aec = EchoCanceller(processor=FakeProcessor())
    far = speechlike(1.0)
    aec.caller_active = True
    for i in range(0, len(far), 512):
        aec.far(far[i : i + 512], RATE)
        aec.near(far[i : i + 512], 0.0)
    assert aec.meter.erl_db is None and "not yet measured" in aec.describe()


def test_the_gate_needs_more_than_the_echo_estimate_while_the_agent_is_audible():
    gate = EchoGate(margin_db=10)
    far_p = power(speechlike(0.1))
    assert gate.frame(1e-3, 1e-9) is None  # the agent is silent: not the gate's call
    # echo at -8 dB, frame after frame: never evidence, and the coupling learns it
    results = [gate.frame(far_p * 10 ** (-0.8), far_p) for _ in range(50)]
    assert not any(results) and gate.coupling_db == pytest.approx(-8, abs=0.5)  # down from 0 dB
    # a caller 6 dB louder than the agent's echo is not enough with a 10 dB margin ...
    assert gate.frame(far_p * 10 ** (-0.2), far_p) is False
    # ... and lifts the bar by 1 dB at most; a caller 4 dB above the agent's own level is
    assert gate.coupling_db == pytest.approx(-7, abs=0.5)
    assert gate.frame(far_p * 10 ** 0.4, far_p) is True
    # a quiet frame is never evidence, however little echo there is
    assert EchoGate().frame(10 ** (-6.0), far_p) is False


def test_the_simulated_room_delays_and_attenuates_what_was_played():
    path = SimulatedEchoPath(delay_ms=40, gain_db=-6)
    block = np.ones(160, np.float32)
    for k in range(20):
        path.played(block * (k + 1), RATE, k * 10.0)  # 10 ms blocks, values 1..20
    mixed = path.mix(np.zeros(160, np.float32), 100.0)  # hears what played at 60 ms
    assert np.allclose(mixed, 7 * 10 ** (-6 / 20), atol=1e-6)
    assert np.allclose(path.mix(np.zeros(160, np.float32), 300.0), 0.0)  # nothing played yet at 260 ms


def test_the_real_webrtc_module_removes_a_synthetic_40ms_echo():
    """The real module (livekit's WebRTC APM): the echo of speech-like far-end audio, 40 ms
    late and 8 dB down, comes out at least 25 dB quieter once it has converged."""
    aec = EchoCanceller(stream_delay_ms=40)
    far = speechlike(4.0, seed=3)
    d = int(0.040 * RATE)
    echo = np.concatenate([np.zeros(d, np.float32), 0.4 * far])[: len(far)]
    rng = np.random.default_rng(1)
    mic = echo + rng.normal(0, 1e-3, len(far)).astype(np.float32)
    out = []
    for i in range(0, len(far) - 512, 512):
        aec.far(far[i : i + 512], RATE)
        y, _ = aec.near(mic[i : i + 512], i / RATE * 1000)
        out.append(y)
    out = np.concatenate(out)
    tail = slice(2 * RATE, 3 * RATE)
    removed = dbfs(power(mic[tail])) - dbfs(power(out[tail]))
    assert removed > 25, removed
    assert aec.meter.erle_db is not None and aec.meter.erle_db > 15
    assert aec.describe().startswith("aec on · echo return loss")


def residue(gate: EchoGate, db: float, frames: int, far_p: float = 10 ** (-1.5)) -> list[bool | None]:
    """`frames` of the canceller's output `db` under what the agent played."""
    return [gate.frame(far_p * 10 ** (db / 10), far_p) for _ in range(frames)]


def test_the_bar_comes_down_to_the_cancellers_recent_residue_once_the_agent_has_spoken_its_window():
    gate = EchoGate(margin_db=10, window_ms=1500, frame_ms=32)  # 47 frames
    far_p = 10 ** (-1.5)
    # a residue 50 dB under the agent: the bar stays at the agent's own level for the
    # first 1.5 s of its speech (no history yet), then is the residue's level at once
    assert not any(residue(gate, -50, 46)) and gate.coupling_db == 0.0
    residue(gate, -50, 1)
    assert gate.coupling_db == pytest.approx(-50, abs=0.1)
    # a caller 12 dB under the agent (the canceller damps them in double talk) is now
    # plainly louder than the echo; with the bar still at 0 dB they were not
    assert gate.frame(far_p * 10 ** -1.2, far_p) is True
    assert EchoGate().frame(far_p * 10 ** -1.2, far_p) is False
    # a silent agent is not the gate's call, and teaches it nothing
    assert gate.frame(1e-3, 1e-9) is None and gate.coupling_db == pytest.approx(-50, abs=0.1)


def test_a_residue_peak_within_the_window_keeps_the_bar_up_until_the_window_has_passed_it():
    gate = EchoGate(margin_db=10, window_ms=1500, frame_ms=32)
    # the canceller converging over the first 0.3 s: its residue 20 dB under the agent
    residue(gate, -20, 10)
    assert not any(residue(gate, -55, 40))  # 1.6 s in all: the 0 dB start has passed
    assert gate.coupling_db == pytest.approx(-20, abs=0.1)  # the peak is still in the window
    # so a residue peak as loud again is no evidence ...
    assert not any(residue(gate, -15, 3))
    # ... and once 1.5 s of the agent have passed the peaks, the bar is the residue's
    residue(gate, -55, 47)
    assert gate.coupling_db == pytest.approx(-55, abs=0.1)
    # a frame just short of the margin lifts the bar 1 dB, not to its own level
    assert gate.frame(10 ** (-1.5) * 10 ** -4.6, 10 ** (-1.5)) is False
    assert gate.coupling_db == pytest.approx(-54, abs=0.1)


def test_the_quieter_moments_of_the_agent_teach_the_bar_nothing():
    # as a prompt ends the far end fades and the ratio of the canceller's floor to it
    # climbs: frames more than LOUD_DB under the agent's loudest would hold the bar up
    gate = EchoGate(margin_db=10, window_ms=1500, frame_ms=32)
    loud = 10 ** (-1.5)
    residue(gate, -50, 47, loud)
    for fade in range(22, 38, 2):  # the far end 22-36 dB down (still audible), the output at its floor
        assert gate.frame(loud * 10 ** -5.0, loud * 10 ** (-fade / 10)) is False
    assert gate.coupling_db == pytest.approx(-50, abs=0.1)
