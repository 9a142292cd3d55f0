"""A session's mic.wav and out.wav, written while the call runs (design S1, S6).

Written only at stop, a killed session would keep its journal and lose its audio. Here
one writer thread per call puts each block at its place on the session clock as it
arrives, and about every half second rewrites the RIFF and data sizes in the header,
always after the samples they count are in the file. A file left by a killed process
is therefore a valid WAV up to the last header update (libsndfile, and so soundfile,
reads the number of samples the data size names).

The files are mono PCM_16 starting at session time 0, with silence where nothing was
heard or played; a block placed where audio already lies replaces it (as the whole-file
writer did). They are created exclusively: an existing recording is never overwritten.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MIC_WAV = "mic.wav"
OUT_WAV = "out.wav"
HEADER_BYTES = 44
SAMPLE_BYTES = 2
SYNC_S = 0.5


class RecordingExistsError(FileExistsError):
    """The folder already holds a recording; the message is one line naming it."""


def refuse_existing(folder: Path) -> None:
    """Raise RecordingExistsError if mic.wav or out.wav is already in folder."""
    for name in (MIC_WAV, OUT_WAV):
        path = Path(folder) / name
        if path.exists():
            raise RecordingExistsError(f"{path}: a recording is already there; choose another folder (nothing was overwritten)")


def wav_header(samplerate: int, data_bytes: int) -> bytes:
    """The canonical 44-byte header of a mono PCM_16 WAV holding data_bytes of samples."""
    return (
        b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE"
        + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, samplerate, samplerate * SAMPLE_BYTES, SAMPLE_BYTES, 16)
        + b"data" + struct.pack("<I", data_bytes)
    )


def pcm16(audio: np.ndarray) -> bytes:
    """Float samples as little-endian int16, converted as libsndfile converts them
    (x 32768, rounded down, clipped), so these files match soundfile-written ones."""
    x = np.floor(np.asarray(audio, dtype=np.float32).reshape(-1) * np.float32(32768.0))
    return np.clip(x, -32768, 32767).astype("<i2").tobytes()


class WavTrack:
    """One mono PCM_16 WAV file that grows block by block. Not thread-safe: one writer.

    `samples` counts what is in the file, silence held up to "now" included;
    `audio_end` is one past the last sample of real audio. Closing drops the held
    silence after `audio_end`, so a normal stop ends where the audio ends.
    """

    def __init__(self, path: Path, samplerate: int) -> None:
        self.path = Path(path)
        self.samplerate = samplerate
        self._file = open(self.path, "xb", buffering=0)  # noqa: SIM115  (x: never overwrite; unbuffered: each block reaches the kernel)
        self._file.write(wav_header(samplerate, 0))
        self.samples = 0
        self.audio_end = 0
        self._synced = 0
        self._masks: dict[int, int | None] = {}  # start sample -> end (None: still open)

    def sample_at(self, t_ms: float) -> int:
        return max(0, int(round(t_ms / 1000.0 * self.samplerate)))

    def _grow_to(self, samples: int) -> None:
        if samples > self.samples:
            os.ftruncate(self._file.fileno(), HEADER_BYTES + samples * SAMPLE_BYTES)  # zero-filled
            self.samples = samples

    def mask(self, start: int, end: int | None) -> None:
        """Silence [start, end) (end None: until told, see the next call with the same
        start): what is already in the file is overwritten in place, what arrives later
        for the span is written as silence."""
        self._masks[start] = end
        stop = self.samples if end is None else min(end, self.samples)
        if stop > start:
            self._file.seek(HEADER_BYTES + start * SAMPLE_BYTES)
            self._file.write(bytes((stop - start) * SAMPLE_BYTES))

    def _masked(self, at: int, audio: np.ndarray) -> np.ndarray:
        n = len(audio)
        for start, end in self._masks.items():
            lo, hi = max(start, at), min(at + n, end if end is not None else at + n)
            if hi > lo:
                audio = np.array(audio, dtype=np.float32, copy=True) if audio is not None else audio
                audio[lo - at : hi - at] = 0.0
        return audio

    def place(self, at: int, audio: np.ndarray) -> None:
        """Audio starting at sample `at` (a gap before it becomes silence)."""
        if self._masks:
            audio = self._masked(at, np.asarray(audio, dtype=np.float32).reshape(-1))
        data = pcm16(audio)
        if not data:
            return
        self._grow_to(at)
        self._file.seek(HEADER_BYTES + at * SAMPLE_BYTES)
        self._file.write(data)
        end = at + len(data) // SAMPLE_BYTES
        self.samples = max(self.samples, end)
        self.audio_end = max(self.audio_end, end)

    def extend(self, audio: np.ndarray) -> None:
        """Audio right after the last audio (a device stream's next block)."""
        self.place(self.audio_end, audio)

    def hold_silence_until(self, samples: int) -> None:
        """Silence up to `samples`, so the file runs on to now while nothing plays."""
        self._grow_to(samples)

    def sync(self) -> None:
        """Write the sizes into the header (the samples they count are already in the file)."""
        if self.samples == self._synced:
            return
        data_bytes = self.samples * SAMPLE_BYTES
        self._file.seek(4)
        self._file.write(struct.pack("<I", 36 + data_bytes))
        self._file.seek(40)
        self._file.write(struct.pack("<I", data_bytes))
        self._synced = self.samples

    def close(self) -> None:
        if self._file.closed:
            return
        if self.samples > self.audio_end:  # held silence after the last audio
            os.ftruncate(self._file.fileno(), HEADER_BYTES + self.audio_end * SAMPLE_BYTES)
            self.samples = self.audio_end
        self.sync()
        self._file.close()


class CallRecorder:
    """mic.wav and out.wav of one session, written by one thread while the call runs.

    The methods that take audio may be called from any thread; they only enqueue (the
    arrays must not change afterwards). Times are session ms. `out_clock_ms`, for an
    output that is silent between prompts (the file backend's simulated speaker), holds
    out.wav's silence up to now at each sync, so a killed call's out.wav also runs to the
    moment it died; a device's output stream is continuous and needs none.
    """

    def __init__(
        self,
        folder: Path,
        *,
        mic_rate: int,
        out_rate: int,
        out_clock_ms: Callable[[], float] | None = None,
        sync_s: float = SYNC_S,
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        refuse_existing(self.folder)
        self.error: str | None = None
        self._mic = WavTrack(self.folder / MIC_WAV, mic_rate)
        try:
            self._out = WavTrack(self.folder / OUT_WAV, out_rate)
        except BaseException:
            self._mic.close()
            raise
        self._out_clock_ms = out_clock_ms
        self._out_streaming = False
        self._sync_s = sync_s
        self._queue: queue.SimpleQueue[tuple[str, float | None, np.ndarray] | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._write, name="lull-recorder", daemon=True)
        self._thread.start()

    # -- producers (any thread) --

    def mic(self, t_ms: float, frames: np.ndarray) -> None:
        """Microphone frames whose first sample was heard at t_ms."""
        self._post("mic", t_ms, frames)

    def out_piece(self, t_ms: float, audio: np.ndarray) -> None:
        """Agent audio that started playing at t_ms."""
        self._post("out", t_ms, audio)

    def out_stream(self, t_ms: float, block: np.ndarray) -> None:
        """A block of a device's continuous output stream: the first at its time, each
        later one right after the one before (the stream's own clock, not callback jitter)."""
        self._post("stream", t_ms, block)

    def mask(self, track: str, from_ms: float, to_ms: float | None = None) -> None:
        """Silence `track` ("mic" or "out") from `from_ms` to `to_ms` in the file, also
        where it was already written; `to_ms` None keeps the span open until the same
        call with an end."""
        self._post(f"mask-{track}", from_ms, np.array([np.nan if to_ms is None else to_ms]))

    def _post(self, track: str, t_ms: float | None, audio: np.ndarray) -> None:
        if not self._closed:
            self._queue.put((track, t_ms, audio))

    # -- the writer thread --

    def _write(self) -> None:
        next_sync = time.monotonic() + self._sync_s
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_sync - time.monotonic()))
            except queue.Empty:
                item = ()
            if item is None:
                return
            try:
                if item:
                    self._apply(*item)
                if time.monotonic() >= next_sync:
                    next_sync = time.monotonic() + self._sync_s
                    self._sync()
            except OSError as exc:  # a full or lost disk must not end the call
                self._fail(exc)
                return

    def _apply(self, track: str, t_ms: float, audio: np.ndarray) -> None:
        if track.startswith("mask-"):
            wav = self._mic if track == "mask-mic" else self._out
            end = float(audio[0])
            wav.mask(wav.sample_at(t_ms), None if math.isnan(end) else wav.sample_at(end))
        elif track == "mic":
            self._mic.place(self._mic.sample_at(t_ms), audio)
        elif track == "out":
            self._out.place(self._out.sample_at(t_ms), audio)
        elif self._out_streaming:
            self._out.extend(audio)
        else:
            self._out_streaming = True
            self._out.place(self._out.sample_at(t_ms), audio)

    def _sync(self) -> None:
        if self._out_clock_ms is not None:
            self._out.hold_silence_until(self._out.sample_at(self._out_clock_ms()))
        self._mic.sync()
        self._out.sync()

    def _fail(self, exc: OSError) -> None:
        self.error = f"{type(exc).__name__}: {exc}"
        self._closed = True
        log.error("recording into %s stopped: %s", self.folder, self.error)

    # -- the end --

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, finish both files. Idempotent."""
        if self._thread is None:
            return
        self._closed = True
        self._queue.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._thread.is_alive():  # the disk hangs: leave the files as last synced
            log.error("recording into %s did not finish within %s s", self.folder, timeout)
            self._thread = None
            return
        self._thread = None
        for track in (self._mic, self._out):
            try:
                track.close()
            except OSError as exc:
                self._fail(exc)
