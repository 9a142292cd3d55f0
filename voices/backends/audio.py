"""The audio backend: a real microphone and speaker through sounddevice (V1, V6, V8).

What the speaker writes (silence included) is handed off, in order with the microphone's
blocks, to the echo canceller as its far end; the microphone goes through the canceller
before the VAD (`voices.backends.voice` follows one utterance from here to the core).
Media health watches the raw microphone; `voices.devices.InputMoveWatch` asks the audio
server whether the capture stream was moved to another source (an unplugged microphone).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from .voice import VAD_RATE, VoiceBackend, VoiceModels


class AudioBackend(VoiceBackend):
    """A real microphone and speaker through sounddevice, with echo cancellation (on by
    default; `aec=False` only measures) and media health."""

    def __init__(
        self,
        models: VoiceModels,
        *,
        input_device=None,
        output_device=None,
        record_dir: Path | None = None,
        aec: bool = True,
        watch_devices: bool = True,
        **kwargs,
    ) -> None:
        from voices.health import InputHealth

        super().__init__(models, name="audio", health=InputHealth(), record_dir=record_dir, **kwargs)
        self.input_device = input_device
        self.output_device = output_device
        self.aec = aec
        self.watch_devices = watch_devices
        self.mic = None
        self.watch = None
        self._health_task: asyncio.Task | None = None

    async def start(self) -> None:
        from voices.audio import MicStream, Speaker
        from voices.echo import EchoCanceller

        await super().start()
        loop = self.loop

        def frames(data: np.ndarray, t_ms: float) -> None:
            # the stream stamps the frame's last sample; the segmenter wants its first
            self.on_frames(data, self.session_ms(t_ms) - len(data) / VAD_RATE * 1000.0)

        def output_event(kind: str, token: int, t_ms: float) -> None:
            self.on_output_event(kind, token, self.session_ms(t_ms))

        def input_error(reason: str) -> None:
            self.health.stream_error(reason)
            self.check_health()

        def played(block: np.ndarray, t_ms: float) -> None:
            if self.recorder is not None:
                self.recorder.out_stream(self.session_ms(t_ms), block)
            self.played(block, self.output.device_samplerate)

        # no await from here to the mic's start: blocks are posted to this loop, so none
        # is handled before the recorder and the canceller exist
        self.output = Speaker(
            self.output_device, samplerate=self.models.voice.sample_rate, on_event=output_event, loop=loop,
            on_played=played, record=False,
        )
        try:
            self._start_recording()
            self.mic = MicStream(self.input_device, on_frames=frames, loop=loop, on_error=input_error)
            # the module finds the delay itself; the streams' latencies are its first guess
            delay = self.output.output_latency_ms + self.mic.input_latency_ms
            self.echo = EchoCanceller(enabled=self.aec, stream_delay_ms=delay)
        except BaseException:
            if self.mic is not None:
                self.mic.close()
            self.output.close()
            raise
        self.mic.start()
        self.health.reset(self.session.now_ms())
        self._health_task = asyncio.ensure_future(self._watch_health())
        if self.watch_devices:
            self._start_watch()

    def _start_watch(self) -> None:
        from voices.devices import MOVED, InputMoveWatch

        def changed(kind: str, detail: str) -> None:  # reader thread: hand off
            self.loop.call_soon_threadsafe(self._input_moved, kind == MOVED, detail)

        self.watch = InputMoveWatch(changed)
        if not self.watch.start() and self.session is not None:
            self.session.note("input_watch", {"active": False, "why": self.watch.error})

    def _input_moved(self, moved: bool, detail: str) -> None:
        """The audio server moved the capture stream: a transport event, never speech."""
        if self.session is None or self.session.closed.is_set():
            return
        self.session.note("input_device", {"moved": moved, "detail": detail})
        if moved:
            self.health.hold(f"device_moved: {detail}"[:120])
        else:
            self.health.release()
        self.check_health()

    def _output_rate(self) -> int:
        return self.output.device_samplerate  # what the stream wrote, resampled or not

    async def _watch_health(self) -> None:
        while self.session is not None and not self.session.closed.is_set():
            await asyncio.sleep(0.25)
            self.check_health()

    async def close(self) -> None:
        if self._health_task is not None:
            self._health_task.cancel()
        if self.watch is not None:
            self.watch.close()
        if self.mic is not None:
            self.mic.close()
        await super().close()
