"""Lull's slot-aware end of turn (V9) for an agent whose VAD is a framework's.

Lull's own backends decide a caller's turn has ended from the words said so far, read
against the question pending (`voices.backends.voice`, step 3b): a complete value (a
code of the allowed length, a clear yes or no, a number) ends the turn once the pause
has lasted the stage's `complete_value_end_ms`; part of a value (two digits of four)
holds the turn open for the stage's `partial_value_hold_ms`, so a caller who pauses
mid-code gives one answer; anything else waits the stage's end-of-speech hold.

A framework hears in segments: its VAD reports the caller stopping (some time after
their last word) and its STT the words of each segment, later still. `TurnEnd` is the
same rule over those two reports, with no clock of its own: each report takes the time
it came, and `deadline` says when the turn ends if nothing else comes. Each adapter runs
one timer to it (`voices.pipecat.turns.LullTurnStop`, `voices.livekit.turns`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from voices.background_voices import VALUE_REPLY_WORDS

# when no active stage sets its own (`timing` in the flow; across active stages the
# longer wins); the same defaults as Lull's own voice backend
COMPLETE_VALUE_END_MS = 250.0
PARTIAL_VALUE_HOLD_MS = 2500.0
END_OF_SPEECH_MS = 700.0
# words not yet come when the hold is over: wait this long after the VAD's report for
# them (a segment's decode on two busy cores; a segment with no words ends the turn then)
WORDS_WAIT_MS = 1000.0
# the STT says it is decoding the segment: its words are waited for this long at most
# (a decode beside two busy processes took over 1.5 s; past this the recogniser is
# stuck, and the turn ends on what was heard so the core's recovery can act). Under
# Pipecat's own 5 s user-turn stop timeout, which would otherwise end the turn first.
DECODE_WAIT_MS = 4500.0


def holds_value(rt, text: str, *, at_bound: bool = False) -> bool:
    """Do the words hold a value, or part of one, for the question pending in flow
    runtime `rt` (a code, a yes or no, a number)? Free text: nothing says so.
    `at_bound`: the words of a turn still open past the background-voices bound, where
    a value counts only in few words (voices.background_voices.VALUE_REPLY_WORDS)."""
    pending = pending_slot(rt)
    if pending is None or not text:
        return False
    if at_bound and pending[0].type != "digits" and len(text.split()) > VALUE_REPLY_WORDS:
        return False
    from ladder.flow.understanding.text import answer_progress

    slot, partial = pending[0], pending[1]
    return answer_progress(slot.type, text, min_length=slot.min_length, max_length=slot.max_length,
                           partial=partial) is not None


def pending_slot(rt):
    """(slot spec, slot's partial digits, complete_value_end_ms, partial_value_hold_ms)
    for the slot the pending question of a flow runtime waits for, or None."""
    if rt is None or rt.asking is None or rt.ladder.pending_episode is None:
        return None
    from ladder.flow.compile import stage_timing

    stage = rt.flow.stage(rt.asking[1])
    slot = next((s for s in stage.collect if rt.state.get(s) is None), None)
    if slot is None:
        return None
    timings = [stage_timing(rt.flow.stage(s)) for s in rt.active_stages()]

    def longest(name: str, default: float) -> float:
        return max((getattr(t, name, None) for t in timings if t is not None and getattr(t, name, None)), default=default)

    return (rt.flow.spec.slots[slot], rt.partial.get(slot, ""),
            longest("complete_value_end_ms", COMPLETE_VALUE_END_MS), longest("partial_value_hold_ms", PARTIAL_VALUE_HOLD_MS))


@dataclass(frozen=True)
class Verdict:
    """What the words so far say about the turn: `reason` is "complete_value",
    "partial_value" or "hold" (nothing about the pending slot, or none pending);
    `hold_ms`: how long after the caller's last word the turn ends if they say no more."""

    reason: str
    hold_ms: float


class SlotAwareJudge:
    """Reads the words so far against a flow runtime's pending question.

    `runtime()`: the flow runtime now (None beside an LLM: every turn waits the hold).
    `matcher`: the flow's classifier (`match(text) -> (intent, score)`), so "it's four
    eight" reads as an answer phrase; None or still training: digits alone decide.
    `hold_ms`: the active stages' end-of-speech hold (`set_end_of_speech` keeps it)."""

    def __init__(self, runtime: Callable[[], object] = lambda: None, matcher=None,
                 hold_ms: float = END_OF_SPEECH_MS) -> None:
        self.runtime = runtime
        self.matcher = matcher
        self.default_hold_ms = hold_ms
        self.hold_ms = hold_ms

    def set_end_of_speech(self, ms: float | None) -> None:
        self.hold_ms = ms if ms is not None else self.default_hold_ms

    def verdict(self, words: str) -> Verdict:
        pending = pending_slot(self.runtime())
        if pending is None or not words.strip():
            return Verdict("hold", self.hold_ms)
        from ladder.flow.understanding.text import answer_progress

        slot, partial, end_ms, partial_ms = pending
        intent, learned = None, None
        matcher = self.matcher
        if matcher is not None and getattr(matcher, "ready", True):  # still training: the words decide alone
            from voices.understanding.interpret import read_words

            try:
                reading = read_words(matcher, words)
                intent, learned = reading.intent, reading.yes_no
            except Exception:  # noqa: BLE001 - a failed build is reported where the turn is read
                intent, learned = None, None
        progress = answer_progress(slot.type, words, min_length=slot.min_length, max_length=slot.max_length,
                                   partial=partial, answer_phrase=intent == "answer", learned=learned, intent=intent)
        if progress == "complete":
            return Verdict("complete_value", end_ms)
        if progress == "partial":
            return Verdict("partial_value", max(self.hold_ms, partial_ms))
        return Verdict("hold", self.hold_ms)


class TurnEnd:
    """One caller turn's end, from a framework's VAD and STT reports (times in ms, any
    one clock). Reports in any order: the words of a segment may come before or after
    the VAD says the caller stopped; speech resuming clears the pending end.

        end = TurnEnd(judge.verdict)
        end.speech_stopped(now, silence_ms)   # VAD: stopped, after silence_ms of quiet
        end.words(now, "four eight")          # STT: a segment's words
        end.deadline                          # when the turn ends (None: not yet known)
    """

    def __init__(self, verdict: Callable[[str], Verdict], *, words_wait_ms: float = WORDS_WAIT_MS) -> None:
        self._verdict = verdict
        self.words_wait_ms = words_wait_ms
        self.text = ""
        self.speaking = False
        self.speech_end: float | None = None  # the caller's last word, as the VAD placed it
        self.stopped_at: float | None = None  # when the VAD said so
        self.decision: Verdict | None = None
        self.deadline: float | None = None
        self._fresh_words = False  # words since the VAD's last stop
        self._decoding_since: float | None = None  # the STT said it is decoding a segment

    def speech_started(self, now: float) -> None:
        self.speaking = True
        self.speech_end = self.stopped_at = self.deadline = None
        self.decision = None

    def speech_stopped(self, now: float, silence_ms: float = 0.0) -> float | None:
        self.speaking = False
        self.stopped_at = now
        self.speech_end = now - silence_ms
        # a segment's words come after its stop (both frameworks decode a segment once
        # the VAD has ended it): words before this stop were an earlier segment's
        self._fresh_words = False
        self._decide()
        return self.deadline

    def words(self, now: float, text: str, *, whole_turn: bool = False) -> float | None:
        """A segment's words; `whole_turn`: the turn's words so far, read again from its
        start (voices.stt.TurnSoFar), which replace what the segments said before."""
        text = text.strip()
        if text:
            self.text = text if whole_turn else f"{self.text} {text}".strip()
            self._fresh_words = True
        self._decide()
        return self.deadline

    def decoding(self, now: float) -> float | None:
        """The STT has begun decoding the segment the VAD ended: its words will come, so
        they are waited for (up to DECODE_WAIT_MS) rather than `words_wait_ms` alone. On a
        loaded machine a decode outlasts any fixed wait, and words that come after the
        turn ended would be read as a turn of their own."""
        self._decoding_since = now
        self._decide()
        return self.deadline

    def decoded(self, now: float) -> float | None:
        """The decode is over (its words, if any, came first): nothing more to wait for."""
        self._decoding_since = None
        if not self._fresh_words and not self.speaking and self.speech_end is not None:
            self._fresh_words = True  # the segment had no words: decide on what was said before
        self._decide()
        return self.deadline

    def _decide(self) -> None:
        if self.speaking or self.speech_end is None:
            return
        if not self._fresh_words:
            # this segment's words not yet come: the hold, and time for them to come
            hold = self._verdict(self.text).hold_ms if self.text else None
            waits = [self.stopped_at + self.words_wait_ms]
            if self._decoding_since is not None:
                waits.append(self._decoding_since + DECODE_WAIT_MS)
            if hold is not None:
                waits.append(self.speech_end + hold)
            self.decision = None
            self.deadline = max(waits)
            return
        self.decision = self._verdict(self.text)
        self.deadline = self.speech_end + self.decision.hold_ms


__all__ = [
    "COMPLETE_VALUE_END_MS", "DECODE_WAIT_MS", "END_OF_SPEECH_MS", "PARTIAL_VALUE_HOLD_MS", "SlotAwareJudge", "TurnEnd", "Verdict",
    "holds_value",
    "pending_slot",
]
