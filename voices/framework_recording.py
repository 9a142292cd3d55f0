"""mic.wav and out.wav of a call whose voice loop is a framework's (Pipecat, LiveKit),
on the journal's clock like any other session's (design S1), masked where a value is
redacted (voices.backends.secret_audio).

The framework's transports hand over what the microphone heard and what the speaker
played, each with the event loop time of its first sample; here it is placed on the
session clock and written by `voices.recording.CallRecorder` while the call runs (a
killed call keeps its audio). What carries a secret is read from the live session's own
records: a prompt's playback started and ended, a caller turn's start and end, the words
heard, a slot filled.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from voices.backends.secret_audio import SecretAudio
from voices.recording import CallRecorder

# a framework's VAD reports a turn's start after its first sound: the span masked for a
# secret answer begins this much earlier (as the voice backend's turn audio does)
PRE_ROLL_MS = 500.0
_ENDED = ("playback_completed", "playback_interrupted", "prompt_failed")


class FrameworkRecordings:
    def __init__(self, session, folder: Path, *, mic_rate: int, out_rate: int, keep_secret_audio: bool = False,
                 out_delay_ms: float = 0.0) -> None:
        """`out_delay_ms`: out.wav is what the caller heard down a telephone line, a
        prompt this much after the speaker played it (its mask lasts as much longer)."""
        self.session = session
        self.mic_rate, self.out_rate = mic_rate, out_rate
        # the speaker is silent between prompts: out.wav runs on to the session's now
        self.recorder = CallRecorder(folder, mic_rate=mic_rate, out_rate=out_rate, out_clock_ms=session.now_ms)
        self.secrets = SecretAudio(keep=keep_secret_audio)
        self.secrets.out_delay_ms = out_delay_ms
        self.secrets.attach(session)
        self.secrets.recorder = self.recorder
        self._turns: dict[str, float] = {}  # turn -> session ms it started
        session.listeners.append(self._listen)

    def session_ms(self, loop_time: float) -> float:
        """An event loop time on the session clock."""
        return self.session.now_ms() + (loop_time - asyncio.get_running_loop().time()) * 1000.0

    def mic(self, loop_time: float, pcm16: bytes) -> None:
        """Microphone audio (mono int16 at `mic_rate`) whose first sample came at `loop_time`."""
        self.recorder.mic(self.session_ms(loop_time), np.frombuffer(pcm16, np.int16).astype(np.float32) / 32768.0)

    def out(self, loop_time: float, pcm16: bytes) -> None:
        """Speaker audio (mono int16 at `out_rate`) heard from `loop_time` on."""
        self.recorder.out_piece(self.session_ms(loop_time), np.frombuffer(pcm16, np.int16).astype(np.float32) / 32768.0)

    def prompt(self, token: int, text: str) -> None:
        """A prompt about to be said: does it carry a secret?"""
        self.secrets.prompt(token, text)

    def _listen(self, now: float, kind: str, record: dict) -> None:
        if kind != "input":
            return
        event, what = record.get("event") or {}, record.get("kind")
        if what == "playback_started":
            self.secrets.prompt_started(event.get("token"), now)
        elif what in _ENDED:
            self.secrets.prompt_ended(event.get("token"), now)
        elif what == "turn_started":
            self._turns[event.get("turn")] = now
            if len(self._turns) > 256:
                self._turns.pop(next(iter(self._turns)))
        elif what == "turn_ended":
            started = self._turns.get(event.get("turn"), now)
            self.secrets.turn(event.get("turn"), started - PRE_ROLL_MS, now)
        elif what == "caller_utterance" and event.get("text"):
            self.secrets.heard(event.get("turn"), event["text"])

    def close(self) -> None:
        self.secrets.close()
        self.recorder.close()


__all__ = ["FrameworkRecordings"]
