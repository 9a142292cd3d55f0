"""Lull's on-device models as Pipecat services: whisper (faster-whisper, the bundled
tiny.en) as a segmented STT service and piper as a TTS service, loaded once by Lull
(`voices.backends.voice.VoiceModels`) and shared with the rest of the rehearsal.

Pipecat ships its own `WhisperSTTService` and `PiperTTSService`; these wrap the models
Lull already loaded instead, so a rehearsal through Pipecat hears and speaks exactly
as one through Lull's own voice backend (the same decode options, the same voice,
deterministic when asked), and the comparison of the two is about the pipeline alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import numpy as np
from pipecat.frames.frames import ErrorFrame, Frame, TranscriptionFrame, TTSAudioRawFrame
from pipecat.services.settings import STTSettings, TTSSettings
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.services.tts_service import TTSService
from pipecat.utils.time import time_now_iso8601

from voices.stt import framed_like_lull

from .frames import WordsDecodingFrame

STT_RATE = 16_000


class LullWhisperSTT(SegmentedSTTService):
    """Each speech segment Pipecat's VAD cut, decoded by Lull's `WhisperRecognizer`."""

    def __init__(self, recognizer, options=None, **kwargs) -> None:  # noqa: ANN001
        """`options()`: whisper's options for the words awaited now (a flow's backend gives
        `voices.backends.voice.decode_options`: the short window for a code or a yes/no)."""
        # ttfs: how long after the caller stops Pipecat waits for the words; tiny.en decodes
        # a short answer in 0.2-0.6 s on two cores, and a busy machine doubles that
        kwargs.setdefault("ttfs_p99_latency", 1.0)
        super().__init__(sample_rate=STT_RATE, settings=STTSettings(model=recognizer.model_name, language="en"), **kwargs)
        self._recognizer = recognizer
        self._options = options or dict
        self.decodes: list[dict] = []  # per segment: audio and decode seconds, the words

    def can_generate_metrics(self) -> bool:
        return False

    @property
    def wants_wav_segments(self) -> bool:
        return False  # whisper reads the raw 16-bit PCM (a WAV header would be heard as samples)

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        samples = framed_like_lull(np.frombuffer(audio, dtype=np.int16).astype(np.float32) / 32768.0, STT_RATE)
        yield WordsDecodingFrame()  # the turn's end waits for these words (LullTurnStop)
        try:
            heard = await asyncio.to_thread(self._recognizer.transcribe, samples, **self._options())
        except Exception as exc:  # a decode that fails is the recogniser's failure, not the call's
            yield WordsDecodingFrame(done=True)
            yield ErrorFrame(error=f"whisper: {exc}"[:200])
            return
        self.decodes.append({"audio_s": round(samples.size / STT_RATE, 3), "decode_s": round(heard.decode_s, 3), "text": heard.text})
        if heard.text:
            yield TranscriptionFrame(heard.text, "caller", time_now_iso8601())
        yield WordsDecodingFrame(done=True)


class LullPiperTTS(TTSService):
    """Each text Lull asks to be said, spoken by Lull's `PiperVoice` (sentence by sentence)."""

    def __init__(self, voice, **kwargs) -> None:
        super().__init__(
            sample_rate=voice.sample_rate, push_start_frame=True, push_stop_frames=True,
            settings=TTSSettings(model="piper", voice=getattr(voice, "name", None), language="en"), **kwargs,
        )
        self._voice = voice

    def can_generate_metrics(self) -> bool:
        return False

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        chunks = iter(self._voice.synthesize(text))
        while True:
            chunk = await asyncio.to_thread(next, chunks, None)  # a sentence's synthesis, off the loop
            if chunk is None:
                return
            pcm = (np.clip(chunk, -1.0, 1.0) * 32767.0).astype(np.int16).tobytes()
            yield TTSAudioRawFrame(pcm, self._voice.sample_rate, 1, context_id=context_id)


__all__ = ["LullPiperTTS", "LullWhisperSTT"]
