"""Input media health (design V6): tell a healthy quiet stream from a dead one.

A live microphone, even in a silent room, has a noise floor: its samples are small but
not exactly zero. A dead input shows up as no callbacks at all, as blocks of exact digital
zeros (a muted or vanished device, a stream moved to an idle source), or as a stream error.
Dead input is a transport event for the ladder (L9), not caller silence.

Note for tests: a PulseAudio null-sink monitor delivers exact zeros while nothing plays
into it, so a virtual microphone looks dead unless something plays; the audio lab plays a
very low noise floor (about -60 dBFS) into the virtual mic to stand for a real room.

The observer is fed from the consumer side (never the audio callback) and is given the
clock: `observe(frames, t_ms)` for every frame, `check(now_ms)` from a periodic timer.
"""

from __future__ import annotations

import math

import numpy as np

from ladder import State, TransportFailed, TransportRecovered

NO_CALLBACKS = "no_callbacks"
DIGITAL_ZEROS = "digital_zeros"
RECOVERED = "recovered"

SILENCE_DBFS = -120.0  # level reported for exact zeros (finite, so journals stay JSON)


class InputHealth:
    """Reports each input failure once, then "recovered" once when signal comes back.

    `check(now_ms)` returns "no_callbacks", "digital_zeros", the reason given to
    `stream_error()` (e.g. "device_lost" or "stream_error: ..."), or "recovered" -- each at
    most once per episode -- or None. While a failure stands, a different reason may still
    be reported once (e.g. zeros first, then no callbacks). Recovery needs a frame with
    signal (not all zeros) observed after the failure.
    """

    def __init__(self, *, no_callback_ms: float = 1000.0, zeros_ms: float = 1500.0) -> None:
        self.no_callback_ms = no_callback_ms
        self.zeros_ms = zeros_ms
        self.reset()

    def reset(self, now_ms: float | None = None) -> None:
        """Forget everything; `now_ms` starts the no-callbacks clock (else the first check)."""
        self._since_ms: float | None = now_ms
        self._last_frame_ms: float | None = None
        self._zeros_since_ms: float | None = None
        self._signal_since_failure = False
        self._pending_error: str | None = None
        self._reported: set[str] = set()
        self._failed = False
        self._held: str | None = None
        self.level_dbfs: float = SILENCE_DBFS
        self.frames = 0
        self.reasons: list[str] = []  # every report, in order (for journals and tests)

    @property
    def healthy(self) -> bool:
        return not self._failed

    def observe(self, frames: np.ndarray, t_ms: float) -> None:
        data = np.asarray(frames, dtype=np.float32)
        self.frames += 1
        self._last_frame_ms = t_ms
        if self._since_ms is None:
            self._since_ms = t_ms
        if data.size == 0:
            return
        peak = float(np.max(np.abs(data)))
        if peak == 0.0:
            self.level_dbfs = SILENCE_DBFS
            if self._zeros_since_ms is None:
                # the block that ends at t_ms began one block earlier; counting from t_ms
                # errs on the side of reporting late, never early
                self._zeros_since_ms = t_ms
            return
        rms = float(np.sqrt(np.mean(np.square(data, dtype=np.float64))))
        self.level_dbfs = max(SILENCE_DBFS, 20.0 * math.log10(rms)) if rms > 0 else SILENCE_DBFS
        self._zeros_since_ms = None
        if self._failed:
            self._signal_since_failure = True

    def stream_error(self, reason: str) -> None:
        """Record a stream error or lost device; the next check reports it."""
        self._pending_error = reason

    def hold(self, reason: str) -> None:
        """A failure that signal alone does not end (the stream was moved to another
        source, e.g. a monitor of the agent's own output): reported at the next check,
        no recovery until `release()`."""
        self._held = reason
        self._pending_error = reason

    def release(self) -> None:
        """The held failure is over: signal observed from now on is a recovery."""
        self._held = None
        self._signal_since_failure = False

    def _fail(self, reason: str) -> str | None:
        self._failed = True
        self._signal_since_failure = False
        if reason in self._reported:
            return None
        self._reported.add(reason)
        self.reasons.append(reason)
        return reason

    def check(self, now_ms: float) -> str | None:
        if self._since_ms is None:
            self._since_ms = now_ms
        if self._pending_error is not None:
            reason, self._pending_error = self._pending_error, None
            report = self._fail(reason)
            if report:
                return report
        if self._failed and self._signal_since_failure and self._held is None:
            self._failed = False
            self._reported.clear()
            self._signal_since_failure = False
            self.reasons.append(RECOVERED)
            return RECOVERED
        last = self._last_frame_ms if self._last_frame_ms is not None else self._since_ms
        if now_ms - last > self.no_callback_ms:
            return self._fail(NO_CALLBACKS)
        if self._zeros_since_ms is not None and now_ms - self._zeros_since_ms > self.zeros_ms:
            return self._fail(DIGITAL_ZEROS)
        return None


class InputFailureReport:
    """What the core is told of its microphone: `InputHealth`'s verdicts, weighed against
    the call's state. One object for every backend that owns a microphone (Lull's own,
    Pipecat's and LiveKit's transports), so they tell the core the same things:

    - a failure, once per episode;
    - its recovery only while the core waits for one (after a repair injected from the
      console, a recovery would be rejected as nothing to recover from);
    - the failure again ("still digital_zeros") when the core was told the channel is
      back while the microphone is still dead: its silence is not the caller's (L9).

    `state` is the core's state as the caller of `verdict` last saw it, or None when it is
    not known (then only the first two apply). A failure told is not told again until the
    core has been seen to take it: a frame still on its way is not a second failure.
    """

    def __init__(self) -> None:
        self.failed = False
        self.failure = ""  # what the failure was, while it stands
        self._told = False  # a failure was sent and the core has not yet been seen to take it

    def verdict(self, reason: str | None, state: State | None) -> TransportFailed | TransportRecovered | None:
        taken = state in (State.RECOVERING, State.CLOSING, State.CLOSED)
        if taken:
            self._told = False
        if reason == RECOVERED and self.failed:
            self.failed = self._told = False
            return TransportRecovered("input") if state is None or state is State.RECOVERING else None
        if reason is not None and reason != RECOVERED and not self.failed:
            self.failed, self.failure, self._told = True, reason, state is not None
            return TransportFailed("input", reason[:200])
        if self.failed and state is not None and not taken and not self._told:
            self._told = True
            return TransportFailed("input", f"still {self.failure}"[:200])
        return None
