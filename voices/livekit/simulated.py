"""A caller and a loudspeaker for an AgentSession on virtual time, no audio device, as
LiveKit's own plugin and I/O interfaces: what `lull incidents run --via livekit` drives.

- `ScriptedVAD` / `ScriptedSTT`: a VAD and an STT plugin whose streams report what they
  are told, when they are told (`start()`, `end()`, `final(text)`): the session's own
  audio recognition turns them into its user state and transcripts.
- `SilentTTS`: a TTS plugin whose audio is a frame of silence.
- `ClockedOutput`: an audio output that plays on the event loop's clock: a segment is
  heard from its start delay on, for as long as the incident's playback says the prompt
  lasts (measured, or so many ms a word); `clear_buffer` cuts it where it is. It reports as LiveKit's outputs do
  (`on_playback_started`, `on_playback_finished`).
- `SilentInput`: an audio input with nothing to say (the VAD and STT are scripted).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import numpy as np
from livekit.agents import APIConnectOptions, stt, tts, vad
from livekit.agents.voice import io

SAMPLE_RATE = 16000


class ScriptedVAD(vad.VAD):
    """A VAD plugin reporting the caller's speech starting and ending on cue."""

    def __init__(self) -> None:
        super().__init__(capabilities=vad.VADCapabilities(update_interval=0.032))
        self.streams: list[_ScriptedVADStream] = []

    def stream(self) -> _ScriptedVADStream:
        stream = _ScriptedVADStream(self)
        self.streams.append(stream)
        return stream

    def start(self) -> None:
        self.streams[-1].cue(vad.VADEventType.START_OF_SPEECH)

    def end(self) -> None:
        self.streams[-1].cue(vad.VADEventType.END_OF_SPEECH)


class _ScriptedVADStream(vad.VADStream):
    def __init__(self, owner: ScriptedVAD) -> None:
        self._cues: asyncio.Queue = asyncio.Queue()
        super().__init__(owner)

    async def _main_task(self) -> None:
        while True:
            kind = await self._cues.get()
            self._event_ch.send_nowait(vad.VADEvent(
                type=kind, samples_index=0, timestamp=time.time(), speech_duration=0.0,
                silence_duration=0.0, speaking=kind is vad.VADEventType.START_OF_SPEECH,
            ))

    def cue(self, kind: vad.VADEventType) -> None:
        self._cues.put_nowait(kind)


class ScriptedSTT(stt.STT):
    """A streaming STT plugin reporting a final transcript on cue."""

    def __init__(self) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=True, interim_results=False))
        self.streams: list[_ScriptedSTTStream] = []

    async def _recognize_impl(self, buffer, *, language=None, conn_options=None):  # noqa: ANN001
        raise NotImplementedError("the scripted STT only streams")

    def stream(self, *, language=None, conn_options: APIConnectOptions = APIConnectOptions()) -> _ScriptedSTTStream:  # noqa: ANN001, B008
        stream = _ScriptedSTTStream(stt=self, conn_options=conn_options)
        self.streams.append(stream)
        return stream

    def final(self, text: str) -> None:
        self.streams[-1].cue(text)


class _ScriptedSTTStream(stt.RecognizeStream):
    def __init__(self, **kwargs) -> None:
        self._cues: asyncio.Queue = asyncio.Queue()
        super().__init__(**kwargs)

    async def _run(self) -> None:
        while True:
            text = await self._cues.get()
            self._event_ch.send_nowait(stt.SpeechEvent(
                type=stt.SpeechEventType.FINAL_TRANSCRIPT, alternatives=[stt.SpeechData(language="en", text=text)],
            ))

    def cue(self, text: str) -> None:
        self._cues.put_nowait(text)


class SilentTTS(tts.TTS):
    """A TTS plugin whose audio is a frame of silence a sentence: how long a prompt
    lasts is the output's to say (`ClockedOutput`), since LiveKit says a non-streaming
    TTS's text sentence by sentence and frames what it hands on."""

    def __init__(self) -> None:
        super().__init__(capabilities=tts.TTSCapabilities(streaming=False), sample_rate=SAMPLE_RATE, num_channels=1)

    def synthesize(self, text: str, *, conn_options: APIConnectOptions = APIConnectOptions()) -> tts.ChunkedStream:  # noqa: B008
        return _Silence(tts=self, input_text=text, conn_options=conn_options)


class _Silence(tts.ChunkedStream):
    async def _run(self, output_emitter) -> None:  # noqa: ANN001
        output_emitter.initialize(request_id=f"silence-{id(self)}", sample_rate=SAMPLE_RATE, num_channels=1,
                                  mime_type="audio/pcm")
        output_emitter.push(np.zeros(SAMPLE_RATE // 100, np.int16).tobytes())
        output_emitter.flush()


class ClockedOutput(io.AudioOutput):
    """An audio output that plays on the loop's clock (one loudspeaker). Each segment
    is heard from its start delay on, for as long as `timing()` says (start delay ms,
    duration ms; asked as the segment's first frame comes); `schedule(at, callback)`
    places its reports (the incident runner ranks them after scripted steps)."""

    def __init__(self, timing: Callable[[], tuple[float, float]],
                 schedule: Callable[[float, Callable[[], None]], asyncio.TimerHandle]) -> None:
        super().__init__(label="ClockedOutput", capabilities=io.AudioOutputCapabilities(pause=False), sample_rate=SAMPLE_RATE)
        self._timing = timing
        self._schedule = schedule
        self._loop = asyncio.get_event_loop()
        self._start: float | None = None  # loop time the open segment is heard from
        self._seconds = 0.0  # how long it lasts
        self._pending: list[asyncio.TimerHandle] = []
        self._heard = False  # its start was reported

    async def capture_frame(self, frame) -> None:  # noqa: ANN001
        await super().capture_frame(frame)
        if self._start is None:
            delay_ms, duration_ms = self._timing()
            self._start = round(self._loop.time() + delay_ms / 1000.0, 6)
            self._seconds, self._heard = duration_ms / 1000.0, False
            self._pending.append(self._schedule(self._start, self._started))

    def _started(self) -> None:
        self._heard = True
        self.on_playback_started(created_at=time.time())

    def flush(self) -> None:
        super().flush()
        if self._start is not None:
            self._pending.append(self._schedule(round(self._start + self._seconds, 6), self._finished))

    def _finished(self) -> None:
        seconds = self._seconds
        self._close_segment()
        self.on_playback_finished(playback_position=seconds, interrupted=False)

    def clear_buffer(self) -> None:
        if self._start is None:
            return
        played = max(0.0, self._loop.time() - self._start) if self._heard else 0.0
        self._close_segment()
        self.on_playback_finished(playback_position=played, interrupted=True)

    def _close_segment(self) -> None:
        for handle in self._pending:
            handle.cancel()
        self._pending = []
        self._start = None


class SilentInput(io.AudioInput):
    """An audio input that yields no frames until the session ends."""

    def __init__(self) -> None:
        super().__init__(label="SilentInput")
        self._closed = asyncio.get_event_loop().create_future()

    async def __anext__(self):  # noqa: ANN204
        await self._closed
        raise StopAsyncIteration


__all__ = ["ClockedOutput", "ScriptedSTT", "ScriptedVAD", "SilentInput", "SilentTTS"]
