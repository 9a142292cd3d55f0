"""The agent's own voice in the microphone (design V8): cancel it, measure it, gate on it.

A laptop's microphone hears its speakers. Three parts, all on the consumer side (the
audio callbacks only copy and hand off):

- `EchoCanceller`: WebRTC's audio processing module (AEC3, noise suppression, high-pass
  filter) through `livekit.rtc.AudioProcessingModule`, on 10 ms frames at 16 kHz. The
  far end is what the speaker actually played, handed over when the output callback
  wrote it (`far`); the microphone goes through `near`. Disabled (`--no-aec`), it only
  measures: the far end's level and the echo path's return loss.
- `EchoMeter`: echo return loss (speaker -> microphone, the acoustic path), what the
  canceller removed (ERLE), and the coupling of what the agent played into what the
  recogniser hears, learned while the agent speaks and no caller turn is open.
- `EchoGate`: while the agent is audible, a frame is evidence of the caller only when it
  is louder than the echo estimate (far-end level x coupling, the canceller's recent
  residue) by a margin. A barge-in needs several such frames; echo alone never opens a
  caller turn.

`SimulatedEchoPath` is the echo of a room for the file backend (its speaker has no
device): what it played comes back into the caller's audio, delayed and attenuated.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Protocol

import numpy as np

RATE = 16000
FRAME = 160  # 10 ms at 16 kHz: the module's frame
FLOOR_DBFS = -120.0
AUDIBLE_FAR_DBFS = -55.0  # below this the agent is not audible: no echo to fear
RECENT_FAR_MS = 300.0  # how long after the agent played a sound its echo may still arrive


def power(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float32)
    return float(np.mean(np.square(x, dtype=np.float64))) if x.size else 0.0


def dbfs(p: float) -> float:
    return 10.0 * math.log10(p) if p > 1e-12 else FLOOR_DBFS


class Processor(Protocol):
    """What the canceller needs of an audio processing module (int16 10 ms frames)."""

    def reverse(self, frame: np.ndarray) -> None: ...
    def process(self, frame: np.ndarray) -> np.ndarray: ...
    def set_stream_delay_ms(self, ms: int) -> None: ...


class WebRtcProcessor:
    """livekit's binding of the WebRTC audio processing module, frames as int16 arrays."""

    def __init__(self, *, noise_suppression: bool = True, high_pass: bool = True) -> None:
        from livekit import rtc

        self._rtc = rtc
        self._apm = rtc.AudioProcessingModule(
            echo_cancellation=True, noise_suppression=noise_suppression, high_pass_filter=high_pass
        )

    def reverse(self, frame: np.ndarray) -> None:
        self._apm.process_reverse_stream(self._rtc.AudioFrame(frame.tobytes(), RATE, 1, len(frame)))

    def process(self, frame: np.ndarray) -> np.ndarray:
        f = self._rtc.AudioFrame(frame.tobytes(), RATE, 1, len(frame))
        self._apm.process_stream(f)  # in place
        return np.frombuffer(bytes(f.data), dtype=np.int16).copy()

    def set_stream_delay_ms(self, ms: int) -> None:
        self._apm.set_stream_delay_ms(int(ms))


def _int16(x: np.ndarray) -> np.ndarray:
    return (np.clip(x, -1.0, 32767 / 32768) * 32768.0).astype(np.int16)


class EchoMeter:
    """Echo figures, smoothed over about two seconds of the agent speaking.

    `erl_db`: how much quieter the agent is in the microphone than in what it played
    (the acoustic path); `erle_db`: what the canceller took away on top; their sum is
    the echo return loss the recogniser sees. None until the agent has spoken.
    """

    def __init__(self, tau_frames: float = 200.0) -> None:
        self._alpha = 1.0 / tau_frames
        self._far = self._raw = self._out = None
        self.frames = 0

    def update(self, far_p: float, raw_p: float, out_p: float) -> None:
        self.frames += 1
        if self._far is None:
            self._far, self._raw, self._out = far_p, raw_p, out_p
            return
        a = self._alpha
        self._far += a * (far_p - self._far)
        self._raw += a * (raw_p - self._raw)
        self._out += a * (out_p - self._out)

    @property
    def erl_db(self) -> float | None:
        return None if self._far is None else round(dbfs(self._far) - dbfs(self._raw), 1)

    @property
    def erle_db(self) -> float | None:
        return None if self._raw is None else round(dbfs(self._raw) - dbfs(self._out), 1)

    def as_dict(self) -> dict:
        return {"erl_db": self.erl_db, "erle_db": self.erle_db, "frames": self.frames}


class EchoCanceller:
    """Cancel the far end out of the microphone, 10 ms at a time, at 16 kHz.

    `far(block, rate)` for every block the speaker wrote (silence included), in order;
    `near(frames, t_ms)` for every microphone block (t_ms: its first sample), which
    returns the processed audio and the time of its first sample (whole 10 ms frames:
    up to 10 ms wait for the next block). Call both from one thread, in the order the
    blocks were handed off: a far block is always given before the echo it causes.
    With `enabled=False` the microphone passes through untouched and only the figures
    are kept.
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        processor: Processor | None = None,
        stream_delay_ms: float = 0.0,
    ) -> None:
        self.enabled = enabled
        self._proc = (processor if processor is not None else WebRtcProcessor()) if enabled else None
        if self._proc is not None:
            self._proc.set_stream_delay_ms(int(round(stream_delay_ms)))
        self.meter = EchoMeter()
        self.caller_active = False  # the backend says so: the figures skip double talk
        self._resamplers: dict[int, Any] = {}
        self._far_pending = np.zeros(0, np.float32)
        self._near_pending = np.zeros(0, np.float32)
        self._near_t: float | None = None
        self._far_powers: deque[float] = deque(maxlen=int(RECENT_FAR_MS / 10))
        self.far_frames = 0
        self.near_frames = 0

    # -- far end: what the speaker played --

    def far(self, block: np.ndarray, rate: int) -> None:
        x = np.asarray(block, dtype=np.float32).reshape(-1)
        if rate != RATE:
            resampler = self._resamplers.get(rate)
            if resampler is None:
                from .audio import StreamResampler

                resampler = self._resamplers[rate] = StreamResampler(rate, RATE)
            x = resampler.process(x)
        buf = np.concatenate([self._far_pending, x]) if len(self._far_pending) else x
        n = len(buf) // FRAME
        for i in range(n):
            frame = buf[i * FRAME : (i + 1) * FRAME]
            self._far_powers.append(power(frame))
            self.far_frames += 1
            if self._proc is not None:
                self._proc.reverse(_int16(frame))
        self._far_pending = buf[n * FRAME :].copy()

    @property
    def far_recent_power(self) -> float:
        """The loudest 10 ms the agent played in the last 300 ms (its echo may be due)."""
        return max(self._far_powers, default=0.0)

    @property
    def agent_audible(self) -> bool:
        return dbfs(self.far_recent_power) > AUDIBLE_FAR_DBFS

    # -- near end: the microphone --

    def near(self, frames: np.ndarray, t_ms: float) -> tuple[np.ndarray, float]:
        x = np.asarray(frames, dtype=np.float32).reshape(-1)
        if self._near_t is None or not len(self._near_pending):
            self._near_t = t_ms - len(self._near_pending) * 1000.0 / RATE
        buf = np.concatenate([self._near_pending, x]) if len(self._near_pending) else x
        n = len(buf) // FRAME
        out = np.empty(n * FRAME, np.float32)
        far_p = self.far_recent_power
        audible = dbfs(far_p) > AUDIBLE_FAR_DBFS
        far_mean = sum(self._far_powers) / len(self._far_powers) if self._far_powers else 0.0
        for i in range(n):
            frame = buf[i * FRAME : (i + 1) * FRAME]
            if self._proc is not None:
                y = self._proc.process(_int16(frame)).astype(np.float32) / 32768.0
            else:
                y = frame
            out[i * FRAME : (i + 1) * FRAME] = y
            self.near_frames += 1
            if audible and not self.caller_active:
                self.meter.update(far_mean, power(frame), power(y))  # means: the delay drops out
        first_t = self._near_t
        self._near_pending = buf[n * FRAME :].copy()
        self._near_t = first_t + n * FRAME * 1000.0 / RATE
        return out, first_t

    def describe(self) -> str:
        """For the media line: on/off and the measured echo return loss."""
        erl, erle = self.meter.erl_db, self.meter.erle_db
        if not self.enabled:
            return "aec off" + (f" · echo path {erl:.0f} dB" if erl is not None else "")
        if erl is None:
            return "aec on · echo not yet measured"
        return f"aec on · echo return loss {erl + erle:.0f} dB (path {erl:.0f} + canceller {erle:.0f})"


class EchoGate:
    """Is this frame the caller, or could it be the agent's own voice?

    `frame(out_power, far_power)` per recogniser frame (post-canceller): returns None
    when the agent is not audible (the VAD alone decides), else whether the frame is
    louder than the echo estimate (far-end level x coupling) by `margin_db`, and louder
    than `min_dbfs`.

    The coupling is the canceller's recent residue: the largest ratio of what came out
    of it to what the agent played over the last `window_ms` of the agent speaking
    (frames within `LOUD_DB` of its loudest in that time; not ones already evidence).
    A residue peak inside the window keeps the bar up; once the window has passed it,
    the bar is down at the residue's level. Before the agent has spoken `window_ms`
    the window holds 0 dB (a caller must first be louder than the agent itself), so the
    first prompt needs no history. A frame short of the margin lifts the bar by at most
    `RISE_DB`: a caller just under it must not raise the bar for their next frame.

    In the audio lab (tests/echo_lab.py replays its recordings) the residue sits 45-65 dB
    under the agent and a caller talking over it 0-20 dB under: a bar that started at
    0 dB and came down 6 dB a second was still 13 dB under the agent when the first
    question began, 2.6 s into the call, and missed a caller who spoke then.
    """

    LOUD_DB = 20.0  # the frames that teach the coupling: the agent within this of its loudest
    RISE_DB = 1.0  # how much a frame short of the margin may lift the bar

    def __init__(self, *, margin_db: float = 10.0, window_ms: float = 1500.0, min_dbfs: float = -50.0, frame_ms: float = 32.0) -> None:
        self.margin = 10 ** (margin_db / 10.0)
        self._floor = 10 ** (min_dbfs / 10.0)
        self._rise = 10 ** (self.RISE_DB / 10.0)
        self._loud = 10 ** (-self.LOUD_DB / 10.0)
        self._min_coupling = 10 ** (-70 / 10.0)
        n = max(1, round(window_ms / frame_ms))
        self._residue: deque[float] = deque(maxlen=n)  # out_p / far_p of the agent's recent frames
        self._far: deque[float] = deque(maxlen=n)  # what it played then
        self.coupling = 1.0

    @property
    def coupling(self) -> float:
        return self._coupling

    @coupling.setter
    def coupling(self, value: float) -> None:
        """As if the last `window_ms` of residue had all been `value`."""
        self._residue.clear()
        self._residue.extend([float(value)] * self._residue.maxlen)
        self._coupling = float(value)

    def frame(self, out_p: float, far_p: float) -> bool | None:
        if dbfs(far_p) <= AUDIBLE_FAR_DBFS:
            return None
        evidence = out_p > self._floor and out_p > far_p * self._coupling * self.margin
        if not evidence:
            self._far.append(far_p)
            if far_p >= max(self._far) * self._loud:
                self._residue.append(min(out_p / far_p, self._coupling * self._rise))
                self._coupling = max(max(self._residue), self._min_coupling)
        return evidence

    @property
    def coupling_db(self) -> float:
        return round(dbfs(self._coupling), 1)


class SimulatedEchoPath:
    """A room for the file backend: what the speaker played, `delay_ms` later and
    `gain_db` quieter, added to the caller's audio (16 kHz, on the session clock)."""

    def __init__(self, *, delay_ms: float = 40.0, gain_db: float = -8.0, keep_s: float = 3.0) -> None:
        self.delay_ms = delay_ms
        self.gain = 10 ** (gain_db / 20.0)
        self._keep = int(keep_s * RATE)
        self._buf = np.zeros(0, np.float32)
        self._base = 0  # session sample index of _buf[0]
        self._resamplers: dict[int, Any] = {}

    def played(self, block: np.ndarray, rate: int, t_ms: float) -> None:
        """A block the speaker played, its first sample at t_ms (contiguous stream)."""
        x = np.asarray(block, dtype=np.float32).reshape(-1)
        if rate != RATE:
            resampler = self._resamplers.get(rate)
            if resampler is None:
                from .audio import StreamResampler

                resampler = self._resamplers[rate] = StreamResampler(rate, RATE)
            x = resampler.process(x)
            # the last sample out is `delay_ms` behind the block's last sample
            t_ms = t_ms + len(block) * 1000.0 / rate - resampler.delay_ms - len(x) * 1000.0 / RATE
        if not len(self._buf):
            self._base = int(round(t_ms * RATE / 1000.0))
        self._buf = np.concatenate([self._buf, x])
        if len(self._buf) > self._keep:
            drop = len(self._buf) - self._keep
            self._buf = self._buf[drop:]
            self._base += drop

    def mix(self, frames: np.ndarray, t_ms: float) -> np.ndarray:
        """The caller's frames (first sample at t_ms) with the room's echo in them."""
        x = np.asarray(frames, dtype=np.float32).reshape(-1).copy()
        start = int(round((t_ms - self.delay_ms) * RATE / 1000.0)) - self._base
        lo, hi = max(0, start), min(len(self._buf), start + len(x))
        if hi > lo:
            x[lo - start : hi - start] += self.gain * self._buf[lo:hi]
        return x
