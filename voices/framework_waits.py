"""Each answered caller turn's wait on a framework backend (Pipecat, LiveKit), measured
from the audio the agent had, and journaled as Lull's own backends journal it: a
`turn_latency` observation (`voices.backends.turn_latency.TurnLatency`).

A framework reports when the caller started and stopped taking their turn, not where
their speech ended, so the wait is read from the audio: from the end of the caller's
speech as the agent heard it (the last audible 5 ms between the turn's start, less a
pre-roll, and its end: `voices.levels.audible_end`) to the first audible sample of the
prompt that answered the turn, as the agent's speaker played it (from its playback
start on: `voices.backends.recorded_wait`). A prompt answers a turn when the core asked
for it while taking in the turn's words; a turn the agent did not answer, or a typed
one, has no latency. On a telephone line the record adds `line_ms` (the round trip) and
`caller_wait_on_line_ms`, as on every backend (`TurnLatency`).

The wait is measured once the answer has finished playing (or was cut), when the
audio it needs is all there, or at the end of the call.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

import numpy as np

from voices.backends.recorded_wait import gaps_from_audio
from voices.backends.turn_latency import TurnLatency
from voices.levels import audible_end

KEEP_MS = 60_000.0  # of the agent's heard audio: a turn is never longer than the room's bound
PRE_ROLL_MS = 500.0  # a framework's VAD reports a turn's start after its first sound
# why a turn ended, from the end-of-turn observation the adapter journals for it
END_OF_TURN = {"complete_value": "complete_value", "partial_value": "partial_value_hold"}


class FrameworkTurnWaits:
    """`heard(loop_time, pcm16)`: the audio the agent heard (16 kHz, what the VAD got);
    `played()`: what the agent's speaker played so far, [(loop time, pcm16)] at
    `played_rate`; `answering(token)`: the core asked for a prompt (FrameworkBackend.speak).
    `line_ms`: a telephone line's round trip (0: none)."""

    def __init__(self, session, *, played: Callable[[], list[tuple[float, bytes]]], played_rate: int,
                 line_ms: float = 0.0, heard_rate: int = 16_000, typed_prefix: str = "typed-") -> None:
        self.session = session
        self.latencies: list[TurnLatency] = []
        self._played, self._played_rate = played, played_rate
        self._heard_rate = heard_rate
        self._line_ms = line_ms
        self._typed = typed_prefix
        self._heard: deque[tuple[float, np.ndarray]] = deque()  # (session ms of the first sample, samples)
        self._turns: dict[str, dict] = {}  # turn -> {"started", "ended", "why", "utterance"}
        self._just_heard: str | None = None  # the turn whose words the core is taking in
        self._answers: dict[int, str] = {}  # prompt token -> the turn it answers
        self._started: dict[int, float] = {}  # answer token -> session ms its playback started
        session.listeners.append(self._listen)

    def _session_ms(self, loop_time: float) -> float:
        return self.session.now_ms() + (loop_time - asyncio.get_running_loop().time()) * 1000.0

    # -- what the edge hands over -------------------------------------------------------

    def heard(self, loop_time: float, pcm16: bytes) -> None:
        at = self._session_ms(loop_time)
        self._heard.append((at, np.frombuffer(pcm16, np.int16).astype(np.float32) / 32768.0))
        while self._heard and self._heard[0][0] < at - KEEP_MS:
            self._heard.popleft()

    def answering(self, token: int) -> None:
        if self._just_heard is not None:
            self._answers[token] = self._just_heard
            self._just_heard = None  # one answer a turn: the first prompt asked for

    # -- the session's records ------------------------------------------------------------

    def _listen(self, now: float, kind: str, record: dict) -> None:
        if record.get("effect") == "Observation" and record.get("kind") == "end_of_turn":
            turn = self._turns.get(str(record.get("turn")))
            if turn is not None:
                turn["why"] = END_OF_TURN.get(record.get("reason"), "hold")
            return
        if kind != "input":
            return
        self._just_heard = None
        what, event = record.get("kind"), record.get("event") or {}
        turn_id = str(event.get("turn"))
        if what == "turn_started" and not turn_id.startswith(self._typed):
            self._turns[turn_id] = {"started": now, "ended": None, "why": "hold", "utterance": None}
            while len(self._turns) > 64:
                self._turns.pop(next(iter(self._turns)))
        elif what == "turn_ended" and turn_id in self._turns:
            self._turns[turn_id]["ended"] = now
        elif what == "caller_utterance" and turn_id in self._turns:
            self._turns[turn_id]["utterance"] = now
            self._just_heard = turn_id
        elif what == "playback_started" and event.get("token") in self._answers:
            self._started[event["token"]] = now
        elif what in ("playback_completed", "playback_interrupted") and event.get("token") in self._answers:
            self._measure(event["token"])

    def close(self) -> None:
        """The end of the call: answers that started playing and did not finish."""
        for token in list(self._started):
            self._measure(token)

    # -- the measure ----------------------------------------------------------------------

    def _measure(self, token: int) -> None:
        turn_id = self._answers.pop(token)
        started = self._started.pop(token, None)
        turn = self._turns.get(turn_id)
        if started is None or turn is None or turn["ended"] is None:
            return
        speech_end = self._speech_end(turn["started"] - PRE_ROLL_MS, turn["ended"])
        if speech_end is None:
            return
        loop_now = asyncio.get_running_loop().time()
        played = [(self._session_ms(t), np.frombuffer(pcm, np.int16).astype(np.float32) / 32768.0, self._played_rate)
                  for t, pcm in self._played() if t >= loop_now - KEEP_MS / 1000.0]
        search_from = max(speech_end, started - 50.0)  # the answer's audio, not a prompt it cut
        gap = gaps_from_audio([search_from], played)[0]
        if gap is None:
            return  # cut before a sound of it was heard
        latency = TurnLatency(turn_id, turn["ended"], speech_end=speech_end, decision=turn["utterance"],
                              first_audio=search_from + gap, end_of_turn=turn["why"], line_ms=self._line_ms)
        latency.audio_s = round((turn["ended"] - turn["started"]) / 1000.0, 3)
        self.latencies.append(latency)
        self.session.note("turn_latency", latency.as_dict())

    def _speech_end(self, from_ms: float, to_ms: float) -> float | None:
        pieces = [(at, x) for at, x in self._heard if at + len(x) * 1000.0 / self._heard_rate > from_ms and at < to_ms]
        if not pieces:
            return None
        base = pieces[0][0]
        audio = np.zeros(int((to_ms - base) * self._heard_rate / 1000.0) + 1, np.float32)
        for at, x in pieces:
            i = int(round((at - base) * self._heard_rate / 1000.0))
            audio[i : i + len(x)] = x[: max(0, len(audio) - i)]
        skip = max(0, int((from_ms - base) * self._heard_rate / 1000.0))
        end = audible_end(audio[skip:], self._heard_rate)
        return None if end is None else base + (skip + end) * 1000.0 / self._heard_rate


__all__ = ["FrameworkTurnWaits"]
