"""Microphone and speaker through sounddevice (design V1, V7).

The PortAudio callbacks only copy a block, stamp it with `time.monotonic()` in ms and
hand it off: to an asyncio loop with `loop.call_soon_threadsafe`, or, with no loop, to a
queue drained by one consumer thread. Everything else (resampling, re-chunking,
recording, events) happens on the consumer side, never in the audio thread.

sounddevice is imported lazily: importing this module never fails on a machine without
PortAudio. A missing PortAudio or device becomes `AudioUnavailable` with one line that
says what is missing and points to the text backend.

Devices through PulseAudio: PortAudio sees ALSA names ("pulse", "default" and whatever
asound.conf defines, e.g. "test_mic"/"test_speaker" in the test lab). Those accept any
sample rate (PulseAudio resamples), so 16 kHz input opens directly; raw hardware devices
may not, and then the stream opens at the device's default rate and is resampled here.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Self

import numpy as np

TEXT_BACKEND_HINT = "run `lull rehearse --backend text` to rehearse without audio"

Kind = Literal["input", "output"]


class AudioUnavailable(RuntimeError):
    """No usable audio: the message is one line naming what is missing and the way out."""


def _now_ms() -> float:
    return time.monotonic() * 1000.0


def _sd() -> Any:
    """Import sounddevice on first use (it loads PortAudio at import and raises OSError
    when the library is missing)."""
    try:
        import sounddevice
    except OSError as exc:
        raise AudioUnavailable(
            f"no audio: the PortAudio library is missing ({exc}; install libportaudio2); "
            f"{TEXT_BACKEND_HINT}"
        ) from None
    except ImportError as exc:
        raise AudioUnavailable(
            f"no audio: the sounddevice package is not installed ({exc}); {TEXT_BACKEND_HINT}"
        ) from None
    return sounddevice


def rescan_devices() -> None:
    """Make PortAudio scan devices again (it scans once, when sounddevice is imported).

    Needed after the audio server or its environment changed (e.g. PULSE_SERVER set after
    import). Only call it with no stream open: it tears PortAudio down.
    """
    sd = _sd()
    sd._terminate()
    sd._initialize()


# -- devices ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    max_input_channels: int
    max_output_channels: int
    default_samplerate: float
    is_default_input: bool
    is_default_output: bool

    def channels(self, kind: Kind) -> int:
        return self.max_input_channels if kind == "input" else self.max_output_channels


def _default_index(sd: Any, kind: Kind) -> int | None:
    try:
        info = sd.query_devices(kind=kind)
    except Exception:  # PortAudioError: no default device of that kind
        return None
    index = info.get("index") if isinstance(info, dict) else None
    return int(index) if index is not None and index >= 0 else None


def list_devices() -> list[DeviceInfo]:
    """Every device PortAudio reports, with which ones are the defaults."""
    sd = _sd()
    try:
        raw = sd.query_devices()
    except Exception as exc:  # PortAudio could not initialise at all
        raise AudioUnavailable(f"no audio: PortAudio cannot list devices ({exc}); {TEXT_BACKEND_HINT}") from None
    default_in = _default_index(sd, "input")
    default_out = _default_index(sd, "output")
    return [
        DeviceInfo(
            index=int(d["index"]),
            name=str(d["name"]),
            max_input_channels=int(d["max_input_channels"]),
            max_output_channels=int(d["max_output_channels"]),
            default_samplerate=float(d["default_samplerate"]),
            is_default_input=int(d["index"]) == default_in,
            is_default_output=int(d["index"]) == default_out,
        )
        for d in raw
    ]


def _candidates(devices: list[DeviceInfo], kind: Kind, limit: int = 8) -> str:
    names = [f"{d.index}:{d.name}" for d in devices if d.channels(kind) > 0]
    if not names:
        return f"no {kind} devices at all"
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return f"{kind} devices: " + ", ".join(names[:limit]) + more


def resolve_device(spec: str | int | None, kind: Kind) -> int | None:
    """Turn a user's device choice into a PortAudio index.

    None means the default device (checked to exist); an int (or a string of digits) is an
    index; any other string is a case-insensitive name: an exact name wins, else the first
    device whose name contains it and that has channels of that kind.
    """
    devices = list_devices()
    if spec is None:
        if not any(d.is_default_input if kind == "input" else d.is_default_output for d in devices):
            raise AudioUnavailable(
                f"no audio: there is no default {kind} device ({_candidates(devices, kind)}); "
                f"{TEXT_BACKEND_HINT}"
            )
        return None
    if isinstance(spec, str) and spec.strip().isdigit():
        spec = int(spec.strip())
    if isinstance(spec, int):
        match = next((d for d in devices if d.index == spec), None)
        if match is None or match.channels(kind) <= 0:
            why = "no such device" if match is None else f"'{match.name}' has no {kind} channels"
            raise AudioUnavailable(
                f"no {kind} device {spec}: {why} ({_candidates(devices, kind)}); {TEXT_BACKEND_HINT}"
            )
        return match.index
    wanted = spec.strip().lower()
    usable = [d for d in devices if d.channels(kind) > 0]
    exact = [d for d in usable if d.name.lower() == wanted]
    partial = [d for d in usable if wanted in d.name.lower()]
    if exact or partial:
        return (exact or partial)[0].index
    named = [d for d in devices if wanted in d.name.lower()]
    why = f"'{named[0].name}' has no {kind} channels" if named else "nothing matches"
    raise AudioUnavailable(
        f"no {kind} device matches '{spec}': {why} ({_candidates(devices, kind)}); {TEXT_BACKEND_HINT}"
    )


# -- resampling (consumer side only) ---------------------------------------------------


class StreamResampler:
    """Streaming sample-rate conversion for mono float32 blocks: libsoxr's
    `ResampleStream` (python-soxr), its filter state carried across calls.

    Quality "LQ" is libsoxr's 16-bit-precision filter with the shortest hold-back
    (measured: 17-21 ms at 48 or 22.05 -> 16 kHz, 1 ms at 22.05 -> 48 kHz): every
    path here ends in 16-bit PCM or a 16 kHz recogniser, and the hold-back is latency
    on the microphone and the speaker. Output is aligned (soxr compensates its filter
    delay): the samples out so far lag the samples in by `delay_ms`.
    """

    QUALITY = "LQ"

    def __init__(self, in_rate: int, out_rate: int) -> None:
        if in_rate <= 0 or out_rate <= 0:
            raise ValueError("sample rates must be positive")
        import soxr

        self.in_rate, self.out_rate = int(in_rate), int(out_rate)
        self._stream = (
            soxr.ResampleStream(self.in_rate, self.out_rate, 1, dtype="float32", quality=self.QUALITY)
            if self.in_rate != self.out_rate
            else None
        )

    @property
    def delay_ms(self) -> float:
        """How far the last sample out lags the last sample in."""
        return float(self._stream.delay()) * 1000.0 / self.out_rate if self._stream is not None else 0.0

    @property
    def delay_samples(self) -> float:
        """The same hold-back in input samples."""
        return self.delay_ms * self.in_rate / 1000.0

    def process(self, block: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(block, dtype=np.float32).reshape(-1)
        if self._stream is None:
            return x.copy()
        return np.asarray(self._stream.resample_chunk(x), dtype=np.float32).reshape(-1)

    def flush(self) -> np.ndarray:
        """Push the held-back tail out at the end of a finite signal."""
        if self._stream is None:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self._stream.resample_chunk(np.zeros(0, np.float32), last=True), dtype=np.float32).reshape(-1)


# -- hand-off from the audio thread ----------------------------------------------------


class _Handoff:
    """Runs `fn(*args)` off the audio thread: on the asyncio loop when there is one,
    otherwise on one consumer thread fed by a SimpleQueue (put never blocks)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None, name: str) -> None:
        self._loop = loop
        self._queue: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None] | None = None
        self._thread: threading.Thread | None = None
        self.dropped = 0
        if loop is None:
            self._queue = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._drain, name=name, daemon=True)
            self._thread.start()

    def post(self, fn: Callable[..., None], *args: Any) -> None:
        if self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # loop closed: nobody left to tell
                self.dropped += 1
        elif self._queue is not None:
            self._queue.put((fn, args))

    def _drain(self) -> None:
        assert self._queue is not None
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except Exception:  # a failing handler must not kill the consumer
                import traceback

                traceback.print_exc()

    def close(self) -> None:
        if self._queue is not None and self._thread is not None:
            self._queue.put(None)
            if self._thread is not threading.current_thread():
                self._thread.join(timeout=2.0)
            self._thread = None


# sounddevice keeps a stream's cffi callbacks on the stream object. A worker aborted with a
# PortAudio thread calling a freed callback (cffi's general_invoke_callback on a closure
# that was no longer one) after a call whose microphone had been unplugged, its streams
# closed: a thread leaving a stream that lost its device can outlive Pa_CloseStream's
# return. Closed streams are therefore kept a few seconds (with what their callbacks
# reach: a call's backend), never freed at once.
_RECENTLY_CLOSED: deque[tuple[float, Any]] = deque()
_KEEP_CLOSED_S = 10.0


def close_stream(stream: Any) -> None:
    """Close a sounddevice stream (errors ignored: a lost device may refuse) and keep the
    object, with its callbacks, alive past any PortAudio thread still leaving it."""
    now = time.monotonic()
    while _RECENTLY_CLOSED and now - _RECENTLY_CLOSED[0][0] > _KEEP_CLOSED_S:
        _RECENTLY_CLOSED.popleft()
    _RECENTLY_CLOSED.append((now, stream))
    try:
        stream.close()
    except Exception:
        pass


def _open_stream(
    factory: Callable[..., Any],
    device: int | None,
    kind: Kind,
    samplerate: int,
    forced_rate: int | None,
    blocksize: int,
    **kwargs: Any,
) -> tuple[Any, int, int]:
    """Open a stream at the wanted rate, mono; fall back to the device's default rate and
    then to two channels (some hardware accepts neither 16 kHz nor mono).
    Returns (stream, device_rate, channels)."""
    sd = _sd()
    try:
        info = sd.query_devices(device, kind=kind)
    except Exception as exc:
        what = f"there is no default {kind} device" if device is None else f"{kind} device {device}: {exc}"
        raise AudioUnavailable(f"no audio: {what}; {TEXT_BACKEND_HINT}") from None
    default_rate = round(float(info["default_samplerate"]))
    rates = [forced_rate] if forced_rate else [samplerate] + ([default_rate] if default_rate != samplerate else [])
    max_ch = int(info["max_input_channels" if kind == "input" else "max_output_channels"])
    channel_options = [1] + ([2] if max_ch >= 2 else [])
    last_error: Exception | None = None
    for channels in channel_options:
        for rate in rates:
            block = blocksize if rate == samplerate or blocksize == 0 else max(1, round(blocksize * rate / samplerate))
            try:
                stream = factory(
                    device=device, samplerate=rate, blocksize=block, channels=channels, dtype="float32", **kwargs
                )
                return stream, rate, channels
            except Exception as exc:  # PortAudioError: try the next combination
                last_error = exc
    raise AudioUnavailable(
        f"no audio: cannot open {kind} device '{info['name']}' ({last_error}); {TEXT_BACKEND_HINT}"
    )


# -- microphone ------------------------------------------------------------------------


class MicStream:
    """Mono float32 microphone frames of exactly `blocksize` samples at `samplerate`.

    `on_frames(frames, t_ms)` runs on the loop (or the consumer thread), never in the audio
    thread; `t_ms` is time.monotonic() in ms taken in the callback that completed the frame.
    `on_error("device_lost" | "stream_error: ...")` reports a stream that ended on its own.
    """

    def __init__(
        self,
        device: int | None,
        *,
        samplerate: int = 16000,
        blocksize: int = 512,
        on_frames: Callable[[np.ndarray, float], None],
        loop: asyncio.AbstractEventLoop | None = None,
        on_error: Callable[[str], None] | None = None,
        device_samplerate: int | None = None,
        latency: str | float = "low",
    ) -> None:
        """`device_samplerate` forces the rate the device is opened at (resampled to
        `samplerate`); by default the device opens at `samplerate` when it can."""
        if blocksize <= 0:
            raise ValueError("blocksize must be positive (the VAD needs fixed frames)")
        sd = _sd()
        self.samplerate = samplerate
        self.blocksize = blocksize
        self._on_frames = on_frames
        self._on_error = on_error
        self.callbacks = 0
        self.last_callback_t: float | None = None
        self.overflows = 0
        self.errors: list[str] = []
        self._stopping = False
        self._closed = False
        self._error_reported = False
        self._callback_error: str | None = None
        self._handoff = _Handoff(loop, "lull-mic-consumer")
        try:
            self._stream, self.device_samplerate, self.channels = _open_stream(
                sd.InputStream,
                device,
                "input",
                samplerate,
                device_samplerate,
                blocksize,
                latency=latency,
                callback=self._callback,
                finished_callback=self._finished,
            )
        except BaseException:
            self._handoff.close()  # no consumer thread left behind
            raise
        # consumer-side state: resampler and the re-chunking buffer
        self._resampler = (
            StreamResampler(self.device_samplerate, samplerate) if self.device_samplerate != samplerate else None
        )
        self._pending = np.zeros(0, dtype=np.float32)

    @property
    def resampling(self) -> bool:
        return self._resampler is not None

    @property
    def input_latency_ms(self) -> float:
        """PortAudio's input latency: how long before its callback a sample was heard."""
        return float(self._stream.latency) * 1000.0

    # audio thread: copy, stamp, hand off; nothing else
    def _callback(self, indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        t = _now_ms()
        self.callbacks += 1
        self.last_callback_t = t
        if status and status.input_overflow:
            self.overflows += 1
        try:
            data = indata[:, 0].copy() if self.channels == 1 else indata.mean(axis=1, dtype=np.float32)
            self._handoff.post(self._consume, data, t)
        except Exception as exc:  # a bug here must end as a reported stream error
            self._callback_error = f"{type(exc).__name__}: {exc}"
            raise _sd().CallbackAbort from None

    # PortAudio thread, once, when the stream became inactive without being asked to:
    # the audio server or device went away (measured: killing PulseAudio lands here)
    def _finished(self) -> None:
        if self._stopping or self._closed:
            return
        reason = f"stream_error: {self._callback_error}" if self._callback_error else "device_lost"
        self._handoff.post(self._report_error, reason)

    def _report_error(self, reason: str) -> None:
        if self._error_reported:
            return
        self._error_reported = True
        self.errors.append(reason)
        if self._on_error is not None:
            self._on_error(reason)

    # consumer side (loop or consumer thread)
    def _consume(self, data: np.ndarray, t: float) -> None:
        if self._closed:
            return
        if self._resampler is None and len(data) == self.blocksize and not len(self._pending):
            self._on_frames(data, t)
            return
        chunk = self._resampler.process(data) if self._resampler is not None else data
        # the last sample out of the resampler was heard `delay_ms` before this callback
        end_t = t - (self._resampler.delay_ms if self._resampler is not None else 0.0)
        self._pending = np.concatenate([self._pending, chunk]) if len(self._pending) else chunk
        while len(self._pending) >= self.blocksize:
            frame, self._pending = self._pending[: self.blocksize], self._pending[self.blocksize :]
            self._on_frames(frame, end_t - len(self._pending) * 1000.0 / self.samplerate)

    def start(self) -> None:
        if self._closed:
            raise RuntimeError("MicStream is closed")
        self._stopping = False
        self._error_reported = False
        try:
            self._stream.start()
        except Exception as exc:
            raise AudioUnavailable(f"no audio: the microphone stream did not start ({exc}); {TEXT_BACKEND_HINT}") from None

    def stop(self) -> None:
        if self._closed:
            return
        self._stopping = True
        try:
            self._stream.stop()
        except Exception as exc:  # a lost device may refuse to stop cleanly
            self._handoff.post(self._report_error, f"stream_error: {exc}")

    def close(self) -> None:
        if self._closed:
            return
        self.stop()
        self._closed = True
        close_stream(self._stream)
        self._handoff.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- speaker ---------------------------------------------------------------------------


class PromptAudio:
    """One prompt's audio on its way to a speaker (a device's, or the file backend's).
    Producers append chunks and set `finished`/`flush`; only the output's callback reads
    and advances it (deque append/popleft are atomic in CPython)."""

    __slots__ = ("chunks", "finished", "flush", "offset", "pad_left", "resampler", "started", "token")

    def __init__(self, token: int, pad_samples: int, resampler: StreamResampler | None = None) -> None:
        self.token = token
        self.chunks: deque[np.ndarray] = deque()
        self.offset = 0
        self.finished = False
        self.flush = False
        self.started = False
        self.pad_left = pad_samples
        self.resampler = resampler


def _as_mono_float32(chunk: np.ndarray) -> np.ndarray:
    a = np.asarray(chunk)
    if a.ndim == 2:
        a = a.mean(axis=1) if a.shape[1] > 1 else a[:, 0]
    if a.dtype == np.int16:
        return (a.astype(np.float32) / 32768.0).reshape(-1)
    return np.ascontiguousarray(a, dtype=np.float32).reshape(-1)


class Speaker:
    """Plays prompts one after another on one OutputStream that runs from construction to
    close (silence when idle, so the recording stays aligned to the clock).

    Events via `on_event(kind, token, t_ms)` on the loop (or the consumer thread):
    "started" when the token's first sample is written in the callback, "completed" when
    its last sample and the trailing pad have been written, "interrupted" when
    `interrupt(token)` flushed it after it had started. t_ms is time.monotonic() in ms at
    the callback plus the sample's offset inside the block.

    Every block written to the device (device rate, mono, silence included) goes to
    `on_played(block, t_ms)` on the loop (or the consumer thread), t_ms being its
    callback's time; with `record` it is also kept for `played_audio()`.
    """

    def __init__(
        self,
        device: int | None,
        *,
        samplerate: int,
        on_event: Callable[[str, int, float], None],
        loop: asyncio.AbstractEventLoop | None = None,
        pad_ms: float = 150,
        on_error: Callable[[str], None] | None = None,
        blocksize: int | None = None,
        device_samplerate: int | None = None,
        latency: str | float = "low",
        record: bool = True,
        on_played: Callable[[np.ndarray, float], None] | None = None,
    ) -> None:
        sd = _sd()
        self.samplerate = samplerate
        self._on_event = on_event
        self._on_error = on_error
        self._record = record
        self._on_played = on_played
        self._prompts: deque[PromptAudio] = deque()  # play order; callback pops finished ones
        self._by_token: dict[int, PromptAudio] = {}  # producers' view; guarded by _lock
        self._cancelled: set[int] = set()  # interrupted tokens (tokens are unique per prompt)
        self._lock = threading.Lock()  # producers only, never taken in the callback
        self._blocks: list[np.ndarray] = []
        self._blocks_lock = threading.Lock()
        self._start_t: float | None = None
        self._closed = False
        self._stopping = False
        self._error_reported = False
        self._callback_error: str | None = None
        self.callbacks = 0
        self.underflows = 0
        self.last_callback_t: float | None = None
        self._handoff = _Handoff(loop, "lull-speaker-consumer")
        # 10 ms blocks by default: PortAudio's own choice over pulse is ~2 ms, i.e. 500
        # callbacks and hand-offs a second for nothing; 10 ms bounds barge-in latency
        try:
            self._stream, self.device_samplerate, self.channels = _open_stream(
                sd.OutputStream,
                device,
                "output",
                samplerate,
                device_samplerate,
                blocksize if blocksize is not None else max(1, samplerate // 100),
                latency=latency,
                callback=self._callback,
                finished_callback=self._finished,
            )
        except BaseException:
            self._handoff.close()
            raise
        # pad counts device-rate samples: PortAudio drops the last tens of ms at stream stop
        self._pad_samples = round(pad_ms * self.device_samplerate / 1000.0)
        try:
            self._stream.start()
        except Exception as exc:
            close_stream(self._stream)
            self._handoff.close()
            raise AudioUnavailable(f"no audio: the speaker stream did not start ({exc}); {TEXT_BACKEND_HINT}") from None

    # -- producers (any thread) --

    def _prompt(self, token: int) -> PromptAudio:
        p = self._by_token.get(token)
        if p is None:
            resampler = (
                StreamResampler(self.samplerate, self.device_samplerate)
                if self.device_samplerate != self.samplerate
                else None
            )
            p = PromptAudio(token, self._pad_samples, resampler)
            self._by_token[token] = p
            self._prompts.append(p)
        return p

    def append(self, token: int, chunk: np.ndarray) -> None:
        """Add audio for `token` (mono float32 at `samplerate`, or int16); a new token
        queues behind the prompts already queued."""
        data = _as_mono_float32(chunk)
        with self._lock:
            if token in self._cancelled:
                return  # interrupted while TTS was still producing: drop the rest quietly
            p = self._prompt(token)
            if p.finished:
                raise ValueError(f"prompt {token} is already finished")
            if p.resampler is not None:
                data = p.resampler.process(data)
            if len(data):
                p.chunks.append(data)

    def finish(self, token: int) -> None:
        """No more audio for `token`: after its last sample and the pad it completes."""
        with self._lock:
            if token in self._cancelled:
                return
            p = self._prompt(token)
            if p.finished:
                return
            if p.resampler is not None:
                tail = p.resampler.flush()
                if len(tail):
                    p.chunks.append(tail)
            p.finished = True

    def enqueue(self, token: int, chunks: Iterable[np.ndarray] | np.ndarray) -> None:
        """Queue a whole prompt. An iterable is consumed here, in the caller's thread; for
        audio still being synthesised call append()/finish() from the TTS worker."""
        if isinstance(chunks, np.ndarray):
            self.append(token, chunks)
        else:
            for chunk in chunks:
                self.append(token, chunk)
        self.finish(token)

    def interrupt(self, token: int) -> bool:
        """Barge-in: drop the token's queued audio at once. The callback reports
        "interrupted" if it had started; nothing if it had not. Audio appended for the
        token afterwards (TTS still running) is dropped, also for a token cancelled before
        its first chunk arrived. Returns whether the token was queued or playing."""
        with self._lock:
            self._cancelled.add(token)  # late or early append()/finish() are ignored
            p = self._by_token.get(token)
            if p is None:
                return False
            p.flush = True
            p.finished = True
            return True

    @property
    def output_latency_ms(self) -> float:
        """PortAudio's output latency: how long after its callback a sample is heard."""
        return float(self._stream.latency) * 1000.0

    @property
    def idle(self) -> bool:
        """Nothing queued or playing (pads included)."""
        return not self._prompts

    # -- audio thread --

    def _emit(self, kind: str, token: int, t: float) -> None:
        self._handoff.post(self._on_event, kind, token, t)

    def _callback(self, outdata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        t = _now_ms()
        self.callbacks += 1
        self.last_callback_t = t
        if status and status.output_underflow:
            self.underflows += 1
        try:
            self._fill(outdata, frames, t)
        except Exception as exc:  # a bug here must end as a reported stream error
            self._callback_error = f"{type(exc).__name__}: {exc}"
            raise _sd().CallbackAbort from None

    def _fill(self, outdata: np.ndarray, frames: int, t: float) -> None:
        ms_per_sample = 1000.0 / self.device_samplerate
        i = 0
        while i < frames and self._prompts:
            p = self._prompts[0]
            if p.flush:
                self._prompts.popleft()
                self._by_token.pop(p.token, None)
                if p.started:
                    self._emit("interrupted", p.token, t + i * ms_per_sample)
                continue
            if p.chunks:
                chunk = p.chunks[0]
                n = min(frames - i, len(chunk) - p.offset)
                if not p.started:
                    p.started = True
                    self._emit("started", p.token, t + i * ms_per_sample)
                outdata[i : i + n, :] = chunk[p.offset : p.offset + n, None]
                p.offset += n
                i += n
                if p.offset >= len(chunk):
                    p.chunks.popleft()
                    p.offset = 0
                continue
            if not p.finished:
                break  # audio still being synthesised: silence until it arrives
            if not p.started:  # finished with no audio at all: still a prompt that ran
                p.started = True
                self._emit("started", p.token, t + i * ms_per_sample)
            n = min(frames - i, p.pad_left)
            outdata[i : i + n, :] = 0.0
            p.pad_left -= n
            i += n
            if p.pad_left <= 0:
                self._prompts.popleft()
                self._by_token.pop(p.token, None)
                self._emit("completed", p.token, t + i * ms_per_sample)
        if i < frames:
            outdata[i:, :] = 0.0
        if self._record or self._on_played is not None:
            self._handoff.post(self._played, outdata[:, 0].copy(), t)

    def _finished(self) -> None:
        if self._stopping or self._closed:
            return
        reason = f"stream_error: {self._callback_error}" if self._callback_error else "device_lost"
        self._handoff.post(self._report_error, reason)

    # -- consumer side --

    def _report_error(self, reason: str) -> None:
        if self._error_reported:
            return
        self._error_reported = True
        if self._on_error is not None:
            self._on_error(reason)

    def _played(self, block: np.ndarray, t: float) -> None:
        if self._record:
            with self._blocks_lock:
                if self._start_t is None:
                    self._start_t = t
                self._blocks.append(block)
        if self._on_played is not None:
            self._on_played(block, t)

    def played_audio(self) -> tuple[np.ndarray, float | None]:
        """Everything written to the device so far (device rate, mono float32) and the
        monotonic ms of its first callback; contiguous, silence included.

        Measured: sample i sits at start + i/rate ms, which is about one output latency
        after the callback that wrote it (PortAudio pre-fills its buffer at start), i.e.
        about when it is heard; events are stamped at callback time, earlier by
        `output_latency_ms`.
        """
        with self._blocks_lock:
            blocks = list(self._blocks)
            start = self._start_t
        audio = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)
        return audio, start

    def close(self) -> None:
        """Stop now; prompts still queued are dropped without events."""
        if self._closed:
            return
        self._stopping = True
        try:
            self._stream.stop()
        except Exception:
            pass
        self._closed = True
        close_stream(self._stream)
        self._handoff.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
