"""The file backend: a caller WAV in at real-time pace, the agent's audio out to a clocked
speaker with no device (for headless rehearsal, tests and benches).

The speaker runs like a device's output stream: one 10 ms block at a time on the session
clock, silence when idle, so a barge-in cuts a prompt within one block and out.wav is one
continuous stream. With `echo_path` (a `voices.echo.SimulatedEchoPath`), what it played
comes back into the caller's audio as a laptop's microphone hears its speakers, and
`aec=True` cancels it through the same canceller the audio backend uses.

With `line` (`voices.line.pstn.LineSettings`), the call is on a telephone line: the
caller's audio reaches the agent through the line's one direction and the agent's voice
reaches the caller through the other (`voices.line.pstn.PhoneLine`). mic.wav is then
what the agent heard from the line and out.wav what the caller heard from it, each at
16 kHz and at the session time it was heard (out.wav the line's delay after the agent's
speaker played it).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from voices.audio import PromptAudio

from .voice import VAD_RATE, VoiceBackend, VoiceModels


class FileSpeaker:
    """A speaker with no device: 10 ms blocks on the session clock, prompts one after
    another, silence between them.

    Events `on_event(kind, token, t_ms)`: "started" at a prompt's first sample,
    "completed" after its last sample and the trailing pad, "interrupted" (once) at the
    block after `interrupt(token)` if it had started. `on_played(t_ms, block)`, if set,
    hears every block as it plays (t_ms: its first sample), silence included.
    """

    def __init__(
        self,
        *,
        samplerate: int,
        on_event: Callable[[str, int, float], None],
        clock_ms: Callable[[], float],
        pad_ms: float = 150,
        on_played: Callable[[float, np.ndarray], None] | None = None,
        block_ms: float = 10.0,
    ) -> None:
        self.samplerate = samplerate
        self.on_played = on_played
        self._on_event = on_event
        self._clock_ms = clock_ms
        self._pad = round(pad_ms * samplerate / 1000.0)
        self._block = max(1, round(block_ms * samplerate / 1000.0))
        self._prompts: deque[PromptAudio] = deque()
        self._by_token: dict[int, PromptAudio] = {}
        self._cancelled: set[int] = set()
        self._task: asyncio.Task | None = None
        self._closed = False
        self.blocks = 0
        self._t0: float | None = None  # session time of block 0
        self._next = 0  # the next block to play
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self.start()

    def start(self) -> None:
        if self._task is None and not self._closed:
            if self._t0 is None:
                self._t0 = self._clock_ms()
            self._task = asyncio.ensure_future(self._run())

    # -- producers (on the loop) --

    def _prompt(self, token: int) -> PromptAudio:
        p = self._by_token.get(token)
        if p is None:
            p = self._by_token[token] = PromptAudio(token, self._pad)
            self._prompts.append(p)
        return p

    def append(self, token: int, chunk: np.ndarray) -> None:
        if token in self._cancelled:
            return
        data = np.asarray(chunk, dtype=np.float32).reshape(-1)
        if len(data):
            self._prompt(token).chunks.append(data)
        self.start()

    def finish(self, token: int) -> None:
        if token in self._cancelled:
            return
        self._prompt(token).finished = True
        self.start()

    def enqueue(self, token: int, audio: np.ndarray) -> None:
        self.append(token, audio)
        self.finish(token)

    def interrupt(self, token: int) -> bool:
        self._cancelled.add(token)
        p = self._by_token.get(token)
        if p is None:
            return False
        p.flush = p.finished = True
        return p.started

    @property
    def idle(self) -> bool:
        """Nothing queued or playing (the same question `voices.audio.Speaker` answers)."""
        return not self._prompts

    # -- the clock --

    def play_until(self, t_ms: float) -> None:
        """Play every block that starts at or before `t_ms`, at once: the caller's feeder
        calls it before it hands over audio, so what the speaker played up to then (the
        canceller's far end, the simulated room's echo) is known before the microphone
        audio that holds its echo, however late a loaded loop runs either task."""
        if self._t0 is None:
            self._t0 = self._clock_ms()
        block_ms = self._block * 1000.0 / self.samplerate
        while not self._closed and self._t0 + self._next * block_ms <= t_ms:
            due = self._t0 + self._next * block_ms
            block = self._fill(due, block_ms / self._block)
            self.blocks += 1
            self._next += 1
            if self.on_played is not None:
                self.on_played(due, block)

    async def _run(self) -> None:
        block_ms = self._block * 1000.0 / self.samplerate
        while not self._closed:
            due = self._t0 + self._next * block_ms
            delay = (due - self._clock_ms()) / 1000.0
            if delay > 0:
                await asyncio.sleep(delay)
            if self._closed:
                return
            self.play_until(max(due, self._clock_ms()))

    def _fill(self, t: float, ms_per_sample: float) -> np.ndarray:
        out = np.zeros(self._block, np.float32)
        i = 0
        while i < self._block and self._prompts:
            p = self._prompts[0]
            if p.flush:
                self._drop(p)
                if p.started:
                    self._on_event("interrupted", p.token, t + i * ms_per_sample)
                continue
            if p.chunks:
                chunk = p.chunks[0]
                n = min(self._block - i, len(chunk) - p.offset)
                if not p.started:
                    p.started = True
                    self._on_event("started", p.token, t + i * ms_per_sample)
                out[i : i + n] = chunk[p.offset : p.offset + n]
                p.offset += n
                i += n
                if p.offset >= len(chunk):
                    p.chunks.popleft()
                    p.offset = 0
                continue
            if not p.finished:
                break  # the next sentence is still being synthesized: silence until it comes
            if not p.started:
                p.started = True
                self._on_event("started", p.token, t + i * ms_per_sample)
            n = min(self._block - i, p.pad_left)
            p.pad_left -= n
            i += n
            if p.pad_left <= 0:
                self._drop(p)
                self._on_event("completed", p.token, t + i * ms_per_sample)
        return out

    def _drop(self, p: PromptAudio) -> None:
        self._prompts.popleft()
        self._by_token.pop(p.token, None)

    def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()


class FileBackend(VoiceBackend):
    """Caller WAV in at real-time pace, the agent's audio out to a clocked speaker."""

    def __init__(
        self,
        models: VoiceModels,
        caller: Path,
        *,
        record_dir: Path | None = None,
        echo_path=None,
        aec: bool = False,
        line=None,
        **kwargs,
    ) -> None:
        if line is not None and (echo_path is not None or aec):
            raise ValueError("a phone line and a simulated room echo cannot be combined")
        super().__init__(models, name="file", record_dir=record_dir, line=line, **kwargs)
        from voices.stt import load_wav_16k

        self.caller_audio = load_wav_16k(caller)
        self.echo_path = echo_path
        if echo_path is not None or aec:
            from voices.echo import EchoCanceller

            self.echo = EchoCanceller(enabled=aec)
        self._feeder: asyncio.Task | None = None
        self.fed_samples = 0  # caller samples heard so far (a test may append to caller_audio)

    async def start(self) -> None:
        await super().start()
        assert self.session is not None
        self.output = FileSpeaker(
            samplerate=self.models.voice.sample_rate,
            on_event=self.on_output_event,
            clock_ms=self.session.now_ms,
            on_played=self._played,
        )
        self._start_recording()
        # the caller's file plays from the call's start (the session feeds StartCall as
        # this returns), not from whenever a loaded loop first runs the feeder
        self._feeder = asyncio.ensure_future(self._feed_caller(self.session.now_ms()))

    def _played(self, t_ms: float, block: np.ndarray) -> None:
        heard = block if self.line is None else self.line.downlink.process(block)  # at the caller's ear
        if self.recorder is not None:
            self.recorder.out_stream(t_ms, heard)
        if self.echo_path is not None:
            self.echo_path.played(block, self.output.samplerate, t_ms)
        self.played(block, self.output.samplerate)

    async def _feed_caller(self, t0: float) -> None:
        """512-sample frames at real-time pace from session time `t0`, each handed over
        when its last sample has been "heard" (as a device's callback does; a late loop
        hands over the frames it owes at once, as a device's buffer would); a faint noise
        floor after the file."""
        frame = 512
        rng = np.random.default_rng(7)
        i = 0
        assert self.session is not None
        while not self.session.closed.is_set():
            start = t0 + i / VAD_RATE * 1000.0
            delay = (start + frame / VAD_RATE * 1000.0 - self.session.now_ms()) / 1000.0
            if delay > 0:
                await asyncio.sleep(delay)
            chunk = self.caller_audio[i : i + frame]
            if len(chunk) < frame:
                noise = (rng.standard_normal(frame - len(chunk)) * 1e-4).astype(np.float32)
                chunk = np.concatenate([chunk, noise])
            chunk = chunk.astype(np.float32)
            # the speaker first: its blocks up to this frame's end are played (far end known,
            # echo in the room) before the microphone frame that would hold their echo
            self.output.play_until(start + frame / VAD_RATE * 1000.0)
            if self.echo_path is not None:
                chunk = self.echo_path.mix(chunk, start)
            self.on_frames(chunk, start)  # on a line, through its caller->agent direction there
            i += frame
            self.fed_samples = i

    async def close(self) -> None:
        if self._feeder is not None:
            self._feeder.cancel()
        await super().close()
