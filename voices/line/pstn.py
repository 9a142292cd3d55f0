"""A telephone line to rehearse on: 8 kHz G.711 mu-law in 20 ms packets, each way.

Most voice agents answer telephones; a laptop's microphone is wideband and clean. A
`PhoneLine` puts a call's two directions (the caller to the agent, the agent to the
caller) each through the same channel, `LineDirection`:

1. resampled to 8 kHz (soxr's LQ filter, read with a 4 ms look-ahead: its passband
   rolls off as a telephone's does, -8 dB at 3.4 kHz and -44 dB at 3.8 kHz, and its
   short filter keeps the latency it adds to 4 ms each way through it);
2. the line's noise floor added (white, `noise_dbfs` RMS against full scale; -45 by
   default, a quiet line) and the band's lower edge cut (a 300 Hz high-pass, second
   order, G.712's lower band edge), causally, as the analogue end of a line does;
3. G.711 mu-law encoded in 20 ms packets of 160 bytes (`voices.line.g711`);
4. sent: a packet is lost with probability `loss` (independently), and its transit
   time varies by an exponential amount of mean `jitter_ms` (the interarrival jitter
   RTCP reports, RFC 3550, of such a line is that mean). A fixed jitter buffer plays
   packet k out `jitter_buffer_ms` after it was sent, deep enough for 99 % of packets
   (4.6 times the jitter, in whole packets): jitter costs that much latency, and the
   1 % that come later are lost to the listener;
5. decoded; a lost or late packet is concealed by the last packet played, repeated at
   half its level (a quarter for a second loss in a row, and so on: a simple packet
   loss concealment; after three in a row it is silence);
6. resampled to 16 kHz at the far end: what the agent's VAD and whisper hear, and
   what the caller hears (the line carries nothing above 4 kHz, so 16 kHz keeps it all).

Every direction is a fixed delay: `process(block)` returns the samples that span the
same time as `block` did (as many, when the rates in and out are the same), the line's
audio `delay_ms` behind it (the 20 ms packet, the two filters' look-ahead, the jitter
buffer). The noise, losses and transit times come from
generators seeded by (`seed`, direction), drawn per packet in packet order: the same
seed and the same input give the same audio bit for bit, and changing the loss leaves
the noise as it was. What the line does not model: network transit time (add your own
network's one-way delay to both directions), bursty loss, echo from a hybrid, and
automatic gain control.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass, field
from math import gcd

import numpy as np
import soxr

from . import g711

LINE_RATE = 8000
FRAME = 160  # samples of a 20 ms packet at 8 kHz
FRAME_MS = 20.0
LOOKAHEAD_MS = 4.0  # soxr's LQ filter is exact to float precision 4 ms into its window
QUALITY = "LQ"
HIGH_PASS_HZ = 300.0
CONCEAL_GAIN = 0.5  # each concealed packet in a row at half the level of the one before
CONCEAL_MAX = 3  # after this many in a row, silence
LATE_FRACTION = 0.01  # the jitter buffer is deep enough for all but this share of packets
LINES = ("pstn",)  # the kinds of line `--line` takes


class LineError(ValueError):
    """A line's settings that cannot be used; the message is one line for the user."""


@dataclass(frozen=True)
class LineSettings:
    """What the line does to audio. `noise_dbfs`: the noise floor's RMS against full
    scale (None: no noise); `loss`: the fraction of packets lost; `jitter_ms`: the mean
    of each packet's transit variation; `seed`: the seed of both directions."""

    noise_dbfs: float | None = -45.0
    loss: float = 0.0
    jitter_ms: float = 0.0
    seed: int = 0
    kind: str = field(default="pstn")

    def __post_init__(self) -> None:
        if self.kind not in LINES:
            raise LineError(f"--line {self.kind}: expected {' or '.join(LINES)}")
        if self.noise_dbfs is not None and not (-120.0 <= self.noise_dbfs <= 0.0):
            raise LineError(f"--line-noise-dbfs {self.noise_dbfs:g}: expected a level from -120 to 0 dBFS (-45: a quiet line)")
        if not (0.0 <= self.loss < 1.0) or math.isnan(self.loss):
            raise LineError(f"--line-loss {self.loss:g}: expected a fraction of packets from 0 to below 1 (0.02: 2 %)")
        if not (0.0 <= self.jitter_ms <= 200.0) or math.isnan(self.jitter_ms):
            raise LineError(f"--line-jitter-ms {self.jitter_ms:g}: expected 0 to 200 ms")
        if self.seed < 0:
            raise LineError(f"--line-seed {self.seed}: expected a whole number 0 or more")

    @property
    def jitter_buffer_frames(self) -> int:
        """Packets the jitter buffer holds: enough for all but LATE_FRACTION of them."""
        if self.jitter_ms <= 0:
            return 0
        return math.ceil(self.jitter_ms * math.log(1.0 / LATE_FRACTION) / FRAME_MS)


class _Resampler:
    """soxr over a sliding window, so its delay is the filter's own: each `push` returns
    the output whose filter support has arrived (LOOKAHEAD_MS past it), aligned with the
    input sample for sample. (soxr's stream object holds back up to ~115 ms at a time,
    which a line that claims a fixed delay cannot have.)"""

    def __init__(self, rate_in: int, rate_out: int) -> None:
        g = gcd(rate_in, rate_out)
        self.rate_in, self.rate_out = rate_in, rate_out
        self.grid_in, self.grid_out = rate_in // g, rate_out // g  # a window starts on this grid
        self.lookahead = math.ceil(LOOKAHEAD_MS * rate_in / 1000.0)
        context = max(self.lookahead * 2, 1)
        self.context = math.ceil(context / self.grid_in) * self.grid_in
        self.buffer = np.zeros(0, np.float32)
        self.buffer_from = 0  # input index of buffer[0] (on the grid)
        self.n_in = 0
        self.n_out = 0

    def _window_start(self) -> int:
        want = (self.n_out * self.rate_in) // self.rate_out - self.context
        return max(0, want // self.grid_in * self.grid_in)

    def push(self, x: np.ndarray) -> np.ndarray:
        self.buffer = np.concatenate([self.buffer, x.astype(np.float32, copy=False)])
        self.n_in += len(x)
        ready = max(0, (self.n_in - self.lookahead) * self.rate_out // self.rate_in)
        if ready <= self.n_out:
            return np.zeros(0, np.float32)
        start = self._window_start()
        window = self.buffer[start - self.buffer_from :]
        y = soxr.resample(window, self.rate_in, self.rate_out, quality=QUALITY)
        first = start // self.grid_in * self.grid_out  # the output index of y[0]
        out = y[self.n_out - first : ready - first]
        if len(out) < ready - self.n_out:  # never, by the window's length: kept whole regardless
            out = np.concatenate([out, np.zeros(ready - self.n_out - len(out), np.float32)])
        self.n_out = ready
        keep_from = self._window_start()
        self.buffer = self.buffer[keep_from - self.buffer_from :]
        self.buffer_from = keep_from
        return out.astype(np.float32, copy=False)


def _high_pass_response(taps: int = 256) -> np.ndarray:
    """The impulse response of a second-order Butterworth high-pass at HIGH_PASS_HZ (the
    bilinear transform at 8 kHz), truncated where it has decayed below 1e-12."""
    k = math.tan(math.pi * HIGH_PASS_HZ / LINE_RATE)
    norm = 1.0 / (1.0 + math.sqrt(2.0) * k + k * k)
    b = (norm, -2.0 * norm, norm)
    a1, a2 = 2.0 * (k * k - 1.0) * norm, (1.0 - math.sqrt(2.0) * k + k * k) * norm
    h = np.zeros(taps)
    x1 = x2 = y1 = y2 = 0.0
    for n in range(taps):
        x0 = 1.0 if n == 0 else 0.0
        y0 = b[0] * x0 + b[1] * x1 + b[2] * x2 - a1 * y1 - a2 * y2
        h[n] = y0
        x2, x1, y2, y1 = x1, x0, y1, y0
    return h


HIGH_PASS = _high_pass_response()


@dataclass
class LineStats:
    """What happened to one direction's packets."""

    packets: int = 0
    lost: int = 0  # lost on the way
    late: int = 0  # arrived after their turn to play
    concealed: int = 0  # played as the last packet, attenuated (lost + late)
    short: int = 0  # samples the line owed and did not have (never, by its fixed delay)
    # RFC 3550's interarrival jitter, without its running filter: the mean absolute
    # difference of successive packets' transit times
    transit_changes_ms: float = 0.0
    last_transit_ms: float | None = None

    def transit(self, ms: float) -> None:
        if self.last_transit_ms is not None:
            self.transit_changes_ms += abs(ms - self.last_transit_ms)
        self.last_transit_ms = ms

    @property
    def jitter_ms(self) -> float:
        return self.transit_changes_ms / (self.packets - 1) if self.packets > 1 else 0.0

    def as_dict(self) -> dict:
        figures = {k: v for k, v in asdict(self).items() if k not in ("transit_changes_ms", "last_transit_ms")}
        figures["jitter_ms"] = round(self.jitter_ms, 2)
        return figures


class LineDirection:
    """One direction of the line, `rate_in` in and `rate_out` out (16 kHz): a fixed
    delay, `delay_ms`."""

    def __init__(self, rate_in: int, settings: LineSettings, stream: int, rate_out: int = 16000) -> None:
        self.rate_in, self.rate_out = rate_in, rate_out
        self.settings = settings
        self.stats = LineStats()
        self._down = _Resampler(rate_in, LINE_RATE)
        self._up = _Resampler(LINE_RATE, rate_out)
        seeds = np.random.SeedSequence([settings.seed, stream]).spawn(3)
        self._noise_rng, self._loss_rng, self._jitter_rng = (np.random.default_rng(s) for s in seeds)
        self._noise = 0.0 if settings.noise_dbfs is None else 10.0 ** (settings.noise_dbfs / 20.0)
        self._pending = np.zeros(0, np.float32)  # 8 kHz samples short of a packet
        self._filter_tail = np.zeros(len(HIGH_PASS) - 1)
        depth = settings.jitter_buffer_frames
        self.jitter_buffer_ms = depth * FRAME_MS
        self._playout: deque[np.ndarray] = deque(np.zeros(FRAME, np.float32) for _ in range(depth))
        self._last_played = np.zeros(FRAME, np.float32)
        self._concealed_in_a_row = 0
        # the output waits this long for the packet, the filters' look-ahead and rounding
        # (in output samples)
        self._prime = (math.ceil(self._down.lookahead * rate_out / rate_in) + math.ceil(FRAME * rate_out / LINE_RATE)
                       + math.ceil(self._up.lookahead * rate_out / LINE_RATE) + 3)
        self._out = np.zeros(self._prime, np.float32)
        self.delay_samples = self._prime + depth * FRAME * rate_out // LINE_RATE  # at rate_out
        self.delay_ms = self.delay_samples * 1000.0 / rate_out
        self._n_in = 0  # samples taken in
        self._n_given = 0  # samples given out

    def process(self, block: np.ndarray) -> np.ndarray:
        """`block` (float, at `rate_in`) into the line; out, at `rate_out`, the samples
        that span the same time, `delay_ms` late."""
        block = np.asarray(block, np.float32).reshape(-1)
        self._n_in += len(block)
        narrow = self._down.push(block)
        if len(narrow):
            self._pending = np.concatenate([self._pending, narrow])
        played = []
        while len(self._pending) >= FRAME:
            packet = self._send(self._pending[:FRAME])
            self._pending = self._pending[FRAME:]
            self._playout.append(self._receive(packet))
            played.append(self._playout.popleft())
        if played:
            self._out = np.concatenate([self._out, self._up.push(np.concatenate(played))])
        n = self._n_in * self.rate_out // self.rate_in - self._n_given
        self._n_given += n
        if len(self._out) < n:
            self.stats.short += n - len(self._out)
            self._out = np.concatenate([self._out, np.zeros(n - len(self._out), np.float32)])
        out, self._out = self._out[:n], self._out[n:]
        return out

    def process_pcm16(self, pcm16: bytes) -> bytes:
        """`process` for 16-bit audio, as a transport hands it over: in and out as bytes."""
        return g711.pcm16(self.process(np.frombuffer(pcm16, np.int16).astype(np.float32) / 32768.0)).tobytes()

    def _send(self, frame: np.ndarray) -> np.ndarray | None:
        """One 20 ms packet: noise, the band's lower edge, G.711; None if it never plays."""
        noisy = frame.astype(np.float64) + self._noise_rng.standard_normal(FRAME) * self._noise
        filtered = np.convolve(noisy, HIGH_PASS)
        filtered[: len(self._filter_tail)] += self._filter_tail
        self._filter_tail = filtered[FRAME:]
        codes = g711.encode(g711.pcm16(filtered[:FRAME]))
        self.stats.packets += 1
        lost = bool(self._loss_rng.random() < self.settings.loss)
        transit = float(self._jitter_rng.exponential(self.settings.jitter_ms)) if self.settings.jitter_ms > 0 else 0.0
        self.stats.transit(transit)
        if lost:
            self.stats.lost += 1
            return None
        if transit > self.jitter_buffer_ms:
            self.stats.late += 1
            return None
        return codes

    def _receive(self, packet: np.ndarray | None) -> np.ndarray:
        if packet is not None:
            self._concealed_in_a_row = 0
            self._last_played = g711.decode(packet).astype(np.float32) / 32768.0
            return self._last_played
        self.stats.concealed += 1
        self._concealed_in_a_row += 1
        if self._concealed_in_a_row > CONCEAL_MAX:
            return np.zeros(FRAME, np.float32)
        return (self._last_played * CONCEAL_GAIN ** self._concealed_in_a_row).astype(np.float32)

    def through(self, audio: np.ndarray, block: int | None = None) -> np.ndarray:
        """A whole clip through this direction, the delay taken off: aligned with `audio`
        (for a bench that decodes what the line delivers), at `rate_out`."""
        audio = np.asarray(audio, np.float32).reshape(-1)
        tail = math.ceil(self.delay_samples * self.rate_in / self.rate_out) + 1
        padded = np.concatenate([audio, np.zeros(tail, np.float32)])
        step = block or len(padded)
        out = np.concatenate([self.process(padded[i : i + step]) for i in range(0, len(padded), step)])
        length = len(audio) * self.rate_out // self.rate_in
        return out[self.delay_samples : self.delay_samples + length]


class PhoneLine:
    """Both directions of a call: `uplink` the caller (at `caller_rate`) to the agent,
    `downlink` the agent (at the voice's rate, `agent_rate`) to the caller; each end
    hears the line at 16 kHz."""

    RATE_OUT = 16000

    def __init__(self, settings: LineSettings, *, caller_rate: int = 16000, agent_rate: int = 22050) -> None:
        self.settings = settings
        self.uplink = LineDirection(caller_rate, settings, stream=0, rate_out=self.RATE_OUT)
        self.downlink = LineDirection(agent_rate, settings, stream=1, rate_out=self.RATE_OUT)

    @property
    def round_trip_ms(self) -> float:
        return self.uplink.delay_ms + self.downlink.delay_ms

    def describe(self) -> dict:
        """For a journal's header and a bench's figures: what the line was."""
        s = self.settings
        return {
            "kind": s.kind, "codec": "G.711 mu-law", "rate": LINE_RATE, "packet_ms": FRAME_MS,
            "band_hz": [HIGH_PASS_HZ, 3400], "noise_dbfs": s.noise_dbfs, "loss": s.loss, "jitter_ms": s.jitter_ms,
            "jitter_buffer_ms": self.uplink.jitter_buffer_ms, "seed": s.seed,
            "delay_ms": {"caller_to_agent": round(self.uplink.delay_ms, 2), "agent_to_caller": round(self.downlink.delay_ms, 2)},
        }

    def figures(self) -> dict:
        """What happened to each direction's packets, for the journal at the end of a call."""
        return {"caller_to_agent": self.uplink.stats.as_dict(), "agent_to_caller": self.downlink.stats.as_dict()}

    def media_text(self) -> str:
        """The line, for a backend's media line (the console's and headless runs')."""
        s = self.settings
        noise = "no noise" if s.noise_dbfs is None else f"noise {s.noise_dbfs:g} dBFS"
        return f"line {s.kind} 8 kHz mu-law, {noise}, loss {s.loss:.0%}, jitter {s.jitter_ms:g} ms"

    def summary(self) -> str:
        """One line for the start of a rehearsal: what the line does, and its delay."""
        s = self.settings
        noise = "no noise" if s.noise_dbfs is None else f"noise {s.noise_dbfs:g} dBFS"
        return (f"on a {s.kind} line: 8 kHz G.711 mu-law, {noise}, loss {s.loss:g}, jitter {s.jitter_ms:g} ms, "
                f"seed {s.seed}; the line delays each way by {self.uplink.delay_ms:.0f} ms")


__all__ = ["LINES", "LineDirection", "LineError", "LineSettings", "LineStats", "PhoneLine"]
