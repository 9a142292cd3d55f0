"""One caller turn's latency, as the caller feels it (design V9): the end of their speech
as heard -> the agent's first audible sample, with the stages in between.

The stages, in order, each a gap between two moments of the same turn:

- `vad_lag`: the end of speech as heard (the last audible 5 ms of the caller's audio)
  -> the end of the last frame the VAD called speech;
- `hold`: that -> the end of turn was decided (the stage's end-of-speech hold, or
  less when the turn already holds a complete value: `end_of_turn` says which);
- `eos_to_transcript`: the decision -> whisper's words were back on the loop
  (near zero when the pause's onset was decoded speculatively and reused);
- `transcript_to_decision`: the core handled the words;
- `decision_to_first_sample`: synthesis and the output's queue, to the first sample;
- `leading_silence`: the first sample -> the first audible one.

`perceived_gap` spans them all. On a telephone line (`voices.line`), the caller hears the
agent the line's round trip later than that (their words reach the agent `delay_ms`
late, the answer reaches them `delay_ms` late): `line_ms` is that round trip and
`caller_wait_on_line_ms` the gap plus it. A turn the agent does not answer (a backchannel, a
partial code, noise) has no latency: nothing is noted for it, rather than the time to
the next reminder. All moments are session ms, a frame stamped by its own samples
(its first sample at its start, the decision at the end of the frame that made it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TurnLatency:
    """One caller turn's path through the agent, in session ms."""

    turn: str
    end_of_speech: float  # the end of turn was decided (VAD + hold, or a complete value)
    audio_s: float = 0.0
    speech_end: float | None = None  # the caller's speech ended, as heard
    vad_speech_end: float | None = None  # the end of the VAD's last speech frame
    transcript: float | None = None  # whisper's words were back on the loop
    decision: float | None = None  # the core handled the utterance
    first_audio: float | None = None  # the answer's first sample reached the output
    leading_silence_ms: float = 0.0  # the answer's first sample -> its first audible one
    stt_s: float = 0.0  # whisper's own decode time
    end_of_turn: str = "hold"  # why the turn ended when it did
    speculative: bool = False  # the words came from the decode at the pause's onset
    line_ms: float = 0.0  # a telephone line's round trip (0: no line)

    @property
    def first_audible(self) -> float | None:
        return None if self.first_audio is None else self.first_audio + self.leading_silence_ms

    def as_dict(self) -> dict:
        def gap(a, b):
            return None if a is None or b is None else round(b - a, 1)

        heard = self.speech_end if self.speech_end is not None else self.vad_speech_end
        perceived = gap(heard, self.first_audible)
        line = {} if not self.line_ms else {
            "line_ms": round(self.line_ms, 1),
            "caller_wait_on_line_ms": None if perceived is None else round(perceived + self.line_ms, 1),
        }
        return {
            "turn": self.turn,
            "audio_s": round(self.audio_s, 3),
            "perceived_gap_ms": perceived,
            "vad_lag_ms": gap(heard, self.vad_speech_end),
            "hold_ms": gap(self.vad_speech_end, self.end_of_speech),
            "eos_to_transcript_ms": gap(self.end_of_speech, self.transcript),
            "transcript_to_decision_ms": gap(self.transcript, self.decision),
            "decision_to_first_audio_ms": gap(self.decision, self.first_audio),
            "leading_silence_ms": round(self.leading_silence_ms, 1),
            "eos_to_first_audio_ms": gap(self.end_of_speech, self.first_audio),
            "stt_decode_ms": round(self.stt_s * 1000, 1),
            "end_of_turn": self.end_of_turn,
            "speculative": self.speculative,
            **line,
        }
