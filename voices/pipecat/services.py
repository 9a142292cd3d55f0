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
from pipecat.frames.frames import ErrorFrame, Frame, TranscriptionFrame, TTSAudioRawFrame, UserStoppedSpeakingFrame
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.settings import STTSettings, TTSSettings
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.services.tts_service import TTSService
from pipecat.utils.time import time_now_iso8601

from voices.stt import TurnSoFar, framed_like_lull

from .frames import TurnTranscriptionFrame, WordsDecodingFrame

STT_RATE = 16_000


class LullWhisperSTT(SegmentedSTTService):
    """Each speech segment Pipecat's VAD cut, decoded by Lull's `WhisperRecognizer`.

    With `whole_turn=True` each segment is decoded with the user turn's earlier segments
    before it, and its words come as a `TurnTranscriptionFrame`, the turn's so far (a
    caller pausing between digits is read as one code, not digit by digit alone: see
    voices.stt.TurnSoFar); the turn's audio is let go when Pipecat's user turn stops."""

    def __init__(self, recognizer, options=None, *, whole_turn: bool = False, **kwargs) -> None:  # noqa: ANN001
        """`options()`: whisper's options for the words awaited now (a flow's backend gives
        `voices.backends.voice.decode_options`: the short window for a code or a yes/no).
        `whole_turn`: decode the turn so far at each segment (for processors that read
        `TurnTranscriptionFrame`: Lull's own)."""
        # ttfs: how long after the caller stops Pipecat waits for the words; tiny.en decodes
        # a short answer in 0.2-0.6 s on two cores, and a busy machine doubles that
        kwargs.setdefault("ttfs_p99_latency", 1.0)
        super().__init__(sample_rate=STT_RATE, settings=STTSettings(model=recognizer.model_name, language="en"), **kwargs)
        self._recognizer = recognizer
        self._options = options or dict
        self.decodes: list[dict] = []  # per segment: audio and decode seconds, the words
        self._turn = TurnSoFar(STT_RATE) if whole_turn else None

    def can_generate_metrics(self) -> bool:
        return False

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, UserStoppedSpeakingFrame) and self._turn is not None:
            self._turn.clear()  # broadcast both ways by the user turn processor: the turn is over

    @property
    def wants_wav_segments(self) -> bool:
        return False  # whisper reads the raw 16-bit PCM (a WAV header would be heard as samples)

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        segment = np.frombuffer(audio, dtype=np.int16).astype(np.float32) / 32768.0
        if self._turn is not None:
            # Pipecat padded the segment with silence; the turn's segments join as heard
            pad = int(round(self._trailing_silence_secs * STT_RATE))
            samples = self._turn.add(segment[:segment.size - pad] if 0 < pad < segment.size else segment)
        else:
            samples = framed_like_lull(segment, STT_RATE)
        yield WordsDecodingFrame()  # the turn's end waits for these words (LullTurnStop)
        try:
            heard = await asyncio.to_thread(self._recognizer.transcribe, samples, **self._options())
        except Exception as exc:  # a decode that fails is the recogniser's failure, not the call's
            yield WordsDecodingFrame(done=True)
            yield ErrorFrame(error=f"whisper: {exc}"[:200])
            return
        self.decodes.append({"audio_s": round(samples.size / STT_RATE, 3), "decode_s": round(heard.decode_s, 3), "text": heard.text,
                             **({"segments": len(self._turn)} if self._turn is not None else {})})
        if heard.text:
            # whole_turn, after the turn's first segment: the turn's words so far, which
            # replace its earlier words (a first segment's words are the turn's anyway,
            # and a segment decoded once the turn was over adds to that turn's words)
            kind = TurnTranscriptionFrame if self._turn is not None and len(self._turn) > 1 else TranscriptionFrame
            yield kind(heard.text, "caller", time_now_iso8601())
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
