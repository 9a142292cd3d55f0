"""One caller turn's latency, as the caller feels it (design V9): end of their speech ->
transcript -> the core's decision -> the first agent sample out."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TurnLatency:
    """One caller turn's path through the agent, in session ms."""

    turn: str
    end_of_speech: float  # the VAD decided the turn ended
    audio_s: float = 0.0
    transcript: float | None = None  # whisper returned
    decision: float | None = None  # the core handled the utterance
    first_audio: float | None = None  # the next prompt's first sample reached the output
    stt_s: float = 0.0  # whisper's own decode time

    def as_dict(self) -> dict:
        def gap(a, b):
            return None if a is None or b is None else round(b - a, 1)

        return {
            "turn": self.turn,
            "audio_s": round(self.audio_s, 3),
            "eos_to_transcript_ms": gap(self.end_of_speech, self.transcript),
            "transcript_to_decision_ms": gap(self.transcript, self.decision),
            "decision_to_first_audio_ms": gap(self.decision, self.first_audio),
            "eos_to_first_audio_ms": gap(self.end_of_speech, self.first_audio),
            "stt_decode_ms": round(self.stt_s * 1000, 1),
        }
