"""Lull's on-device models as LiveKit plugins: whisper (faster-whisper, the bundled
tiny.en) as an STT and piper as a TTS, loaded once by Lull (`voices.backends.voice.
VoiceModels`) and shared with the rest of the rehearsal. Nothing is fetched: no server,
no hub, no network.

Whisper decodes whole utterances, so `LullWhisperSTT` is a non-streaming STT: the
session wraps it in LiveKit's `StreamAdapter` with its VAD (Silero, from the
`livekit-plugins-silero` wheel, its model inside it), which cuts the caller's speech
into utterances. Piper speaks a sentence at a time; `LullPiperTTS` hands LiveKit each
sentence's audio as it is made.
"""

from __future__ import annotations

import asyncio

import numpy as np
from livekit import rtc
from livekit.agents import APIConnectOptions, APIError, stt, tts
from livekit.agents.utils import AudioBuffer

from voices.stt import TurnSoFar, framed_like_lull

STT_RATE = 16_000


def _mono_16k(buffer: AudioBuffer) -> np.ndarray:
    """LiveKit's frames as float32 mono at 16 kHz."""
    frame = rtc.combine_audio_frames(buffer) if isinstance(buffer, list) else buffer
    if frame.sample_rate != STT_RATE or frame.num_channels != 1:
        resampler = rtc.AudioResampler(frame.sample_rate, STT_RATE, num_channels=frame.num_channels)
        frames = resampler.push(frame) + resampler.flush()
        frame = rtc.combine_audio_frames(frames) if frames else rtc.AudioFrame.create(STT_RATE, 1, 0)
    samples = np.frombuffer(frame.data, dtype=np.int16).astype(np.float32) / 32768.0
    if frame.num_channels > 1:
        samples = samples.reshape(-1, frame.num_channels).mean(axis=1)
    return samples


class LullWhisperSTT(stt.STT):
    """Each utterance the session's VAD cut, decoded by Lull's `WhisperRecognizer`.

    With `whole_turn=True` each utterance is decoded with the caller turn's earlier
    utterances before it, and its final transcript is the turn's words so far (a caller
    pausing between digits is read as one code, not digit by digit alone: see
    voices.stt.TurnSoFar). Lull's `LullLadder` reads such transcripts as replacing the
    turn's earlier ones and calls `turn_ended()` when it ends the caller's turn."""

    def __init__(self, recognizer, options=None, *, whole_turn: bool = False) -> None:  # noqa: ANN001
        """`options()`: whisper's options for the words awaited now (a flow's backend gives
        `voices.backends.voice.decode_options`: the short window for a code or a yes/no).
        `whole_turn`: decode the turn so far at each utterance (for LullLadder)."""
        super().__init__(capabilities=stt.STTCapabilities(streaming=False, interim_results=False))
        self._recognizer = recognizer
        self._options = options or dict
        self.decodes: list[dict] = []  # per utterance: audio and decode seconds, the words
        self._turn = TurnSoFar(STT_RATE) if whole_turn else None
        self._continuing: dict[str, bool] = {}  # the latest transcripts: did each follow earlier utterances?

    @property
    def whole_turn(self) -> bool:
        return self._turn is not None

    def continues_turn(self, transcript: str) -> bool:
        """Was `transcript` the turn's words so far, with its earlier utterances (so it
        replaces what they said), rather than a turn's first utterance alone?"""
        return self._continuing.get(transcript, False)

    def turn_ended(self) -> None:
        """The caller's turn is over: the next utterance starts the next turn."""
        if self._turn is not None:
            self._turn.clear()

    @property
    def model(self) -> str:
        return self._recognizer.model_name

    @property
    def provider(self) -> str:
        return "lull (faster-whisper, on device)"

    async def _recognize_impl(self, buffer: AudioBuffer, *, language=None,  # noqa: ANN001
                              conn_options: APIConnectOptions) -> stt.SpeechEvent:
        samples = self._turn.add(_mono_16k(buffer)) if self._turn is not None else framed_like_lull(_mono_16k(buffer), STT_RATE)
        try:
            heard = await asyncio.to_thread(self._recognizer.transcribe, samples, **self._options())
        except Exception as exc:  # a decode that fails is the recogniser's failure, not the call's
            raise APIError(f"whisper: {exc}"[:200], retryable=False) from exc
        self.decodes.append({"audio_s": round(samples.size / STT_RATE, 3), "decode_s": round(heard.decode_s, 3),
                             "text": heard.text, **({"segments": len(self._turn)} if self._turn is not None else {})})
        if self._turn is not None:
            self._continuing[heard.text] = len(self._turn) > 1
            while len(self._continuing) > 16:
                del self._continuing[next(iter(self._continuing))]
        return stt.SpeechEvent(type=stt.SpeechEventType.FINAL_TRANSCRIPT,
                               alternatives=[stt.SpeechData(language="en", text=heard.text)])


class LullPiperTTS(tts.TTS):
    """Each text the session is asked to say, spoken by Lull's `PiperVoice`."""

    def __init__(self, voice) -> None:
        super().__init__(capabilities=tts.TTSCapabilities(streaming=False), sample_rate=voice.sample_rate, num_channels=1)
        self._voice = voice

    @property
    def model(self) -> str:
        return "piper"

    @property
    def provider(self) -> str:
        return "lull (piper, on device)"

    def synthesize(self, text: str, *, conn_options: APIConnectOptions = APIConnectOptions()) -> tts.ChunkedStream:  # noqa: B008
        return _PiperStream(tts=self, input_text=text, conn_options=conn_options)


class _PiperStream(tts.ChunkedStream):
    async def _run(self, output_emitter) -> None:  # noqa: ANN001
        owner: LullPiperTTS = self._tts  # type: ignore[assignment]
        voice = owner._voice
        output_emitter.initialize(request_id=f"piper-{id(self)}", sample_rate=voice.sample_rate, num_channels=1,
                                  mime_type="audio/pcm")
        chunks = iter(voice.synthesize(self._input_text))
        while True:
            chunk = await asyncio.to_thread(next, chunks, None)  # a sentence's synthesis, off the loop
            if chunk is None:
                break
            output_emitter.push((np.clip(chunk, -1.0, 1.0) * 32767.0).astype(np.int16).tobytes())
        output_emitter.flush()


__all__ = ["LullPiperTTS", "LullWhisperSTT"]
