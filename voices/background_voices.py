"""Background voices are not the caller: a television or people talking in the room.

A television murmuring under a caller who says nothing reaches the microphone as speech:
the VAD opens a caller turn and holds it open for as long as the programme runs (no
reminder comes: the caller is "speaking"), and whisper writes its words, or loops on
them ("I'm a young man, I'm a young man, ..."), which an intent reader may take for a
request. What tells the room from the caller, within one call:

- **a loop**: whisper repeating a phrase is a murmur it cannot read, not words said;
- **the turn's length**: a turn still open after `turn_bound_ms` whose words so far
  hold no value for the question and nothing the reader recognises is not an answer
  being given (a caller asked for a code does not talk for ten seconds without one),
  and waiting for it to end would stall the ladder for as long as the room talks;
- **the level**: the caller's own turns (those read as a reply) set the caller's level;
  a turn far quieter than it (`below_caller_db`) holding no reply is the room;
- **the same again**: before the caller has replied at all there is no caller's level;
  a second long run of words with no reply (`ROOM_WORDS` or more), at the level of the
  first (within `SAME_SOURCE_DB`) and with no reply between them, is one source talking
  on regardless (a programme between its pauses), not a caller answering the agent (the
  first was read as unclear, a "sorry?", as any caller's would be);
- once a turn is judged the room's, its level is the room's: a later stretch of speech
  becomes a caller turn only on frames clearly louder than the room (`above_room_db`),
  as the echo gate asks of speech heard over the agent's own voice.

A turn judged so reaches the core as a turn with no usable words (reason
`background_voices:<why>`), which the flow reads as noise (L8): the window resumes, a
reminder it cut is requested again, a question it kept from playing is asked. What was
judged, and on what evidence, is journaled (`background_voices`).

Pure: levels in dBFS and words in, verdicts out; the backends measure and act.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from statistics import median

import numpy as np

# a turn open this long with no reply in its words so far is checked, then every bound
TURN_BOUND_MS = 10_000.0
# the room is quieter than the caller by at least this much (a television across the
# room against a caller at the handset: 10-20 dB; a caller's own turns vary by 6 dB or so)
BELOW_CALLER_DB = 12.0
# once the room's level is known, speech becomes a caller turn only on frames this much
# louder than it (the caller over the television)
ABOVE_ROOM_DB = 8.0
ROOM_EVIDENCE_FRAMES = 3  # frames (about 32 ms each) louder than the room, as the echo gate asks
# a caller turn over the room keeps this much before its first frame louder than the room
# (a word's onset is under the room for a frame or two; more, and whisper reads the
# room's words as the turn's start)
ROOM_LOOKBACK_MS = 250.0
CALLER_TURNS_KEPT = 5  # the caller's level: the median of their latest replies
# at the bound, a value in the words so far is a reply only when said in this many words
# or fewer: ten seconds of a programme hold twenty-five words or so and often a number
# ("won by two goals to one", "one night"); taken for a reply, a television on from the
# call's start held the turn open for as long as it talked, the question it kept from
# playing was never asked, and its number filled the slot. A caller answering says the
# value in a sentence; a code read slowly is all digits (its own reading weighs that).
VALUE_REPLY_WORDS = 20
ROOM_WORDS = 8  # a run of words this long with no reply in it, twice, is one source talking on
SAME_SOURCE_DB = 4.0  # two turns this close in level may be one source

LOOP = "loop"
LONG_TURN = "long_turn_no_reply"
QUIETER = "quieter_than_caller"
AGAIN = "no_reply_again"


def speech_level_dbfs(audio: np.ndarray, rate: int = 16_000) -> float | None:
    """The level of the speech in `audio`: the RMS, in dBFS, of its 30 ms frames within
    20 dB of its loudest (the voiced part, not the pauses between words); None for
    silence."""
    x = np.asarray(audio, dtype=np.float64).reshape(-1)
    win = max(1, int(rate * 0.03))
    n = len(x) // win
    if n == 0:
        return None
    return voiced_level_dbfs(np.mean(x[: n * win].reshape(n, win) ** 2, axis=1))


def voiced_level_dbfs(power: np.ndarray) -> float | None:
    """The RMS level, in dBFS, of the frames (given by their mean power) within 20 dB of
    the loudest; None for silence."""
    power = np.asarray(power, dtype=np.float64)
    if not power.size or float(power.max()) <= 1e-12:
        return None
    voiced = power[power >= float(power.max()) * 10 ** (-20.0 / 10.0)]
    return float(10.0 * np.log10(float(np.mean(voiced))))


# the room gate (for the frameworks, whose VAD and STT hear the microphone's frames):
# once the room is known, the caller's frames and silence for the rest
GATE_HANGOVER_MS = 600.0  # after the caller's last louder frame: the quiet sounds between and after words
# before it, as well: a word's quiet onset ("th" of "that's") is under the room, and
# whisper read "that's right" as "not right" without it; frames are held back this long
# once the room is known (and only then), so the gate can look ahead
GATE_LOOKAHEAD_MS = 100.0


class RoomGate:
    """16-bit frames in, the same frames out, in order: as they are until the room's level
    is known; from then on held back `GATE_LOOKAHEAD_MS`, and passed where the caller
    is within the look-ahead before or the hangover after, silence (of the same length)
    for the rest. The caller is `ROOM_EVIDENCE_FRAMES` frames in a row clearly louder
    than the room (a single frame is not: the programme's own peaks are)."""

    def __init__(self, room: BackgroundVoices) -> None:
        self.room = room
        self._open_ms = 0.0  # the gate stays open this much longer
        self._louder = 0  # frames in a row louder than the room
        self._held: deque[tuple[bytes, float]] = deque()
        self._held_ms = 0.0
        self.gated_frames = 0  # frames passed as silence (the room alone)

    def push(self, pcm16: bytes, ms: float) -> list[bytes]:
        """One frame in (`ms` long); the frames due out now."""
        if self.room.room_dbfs is None and not self._held:
            return [pcm16]
        self._louder = self._louder + 1 if self.room.louder_than_room(frame_dbfs(pcm16)) else 0
        if self._louder >= ROOM_EVIDENCE_FRAMES:  # the caller: the frames held are their word's onset
            self._open_ms = GATE_HANGOVER_MS + self._held_ms + ms
        self._held.append((pcm16, ms))
        self._held_ms += ms
        return self._release(GATE_LOOKAHEAD_MS)

    def flush(self) -> list[bytes]:
        """The frames still held back (the look-ahead), gated on the evidence so far: the
        end of a whole turn's audio."""
        return self._release(None)

    def _release(self, keep_ms: float | None) -> list[bytes]:
        """The held frames beyond `keep_ms` of look-ahead (None: all), passed or silenced."""
        out = []
        while self._held and (keep_ms is None or self._held_ms > keep_ms):
            held, held_ms = self._held.popleft()
            self._held_ms -= held_ms
            if self._open_ms > 0.0:
                self._open_ms -= held_ms
                out.append(held)
            else:
                self.gated_frames += 1
                out.append(bytes(len(held)))
        return out


GATE_FRAME_MS = 20.0  # the frames a whole turn is gated in (as the frameworks' audio arrives)


def gated_to_caller(audio: np.ndarray, room: BackgroundVoices, rate: int = 16_000) -> np.ndarray:
    """A caller turn's audio (float32) with the room's stretches silenced, as `RoomGate`
    passes a framework's frames: the caller's frames with the look-ahead and hangover
    around them kept, silence (of the same length) for the rest. As it is while the
    room's level is unknown. Over a television, whisper read the programme's words
    around a caller's one short word as the turn ("two" heard as "Do it later",
    taken for a route)."""
    if room.room_dbfs is None or not len(audio):
        return audio
    gate = RoomGate(room)
    step = int(rate * GATE_FRAME_MS / 1000.0)
    pcm = (np.clip(np.asarray(audio, np.float32), -1.0, 1.0) * 32767.0).astype(np.int16)
    frames = [pcm[i : i + step].tobytes() for i in range(0, len(pcm), step)]
    out: list[bytes] = []
    for frame in frames:
        out += gate.push(frame, 1000.0 * (len(frame) // 2) / rate)
    out += gate.flush()
    # frames come out in order, each the frame itself (passed) or silence of its length;
    # the caller's keep their own samples, not the 16-bit round trip
    kept = np.repeat([o is f for o, f in zip(out, frames, strict=True)], [len(f) // 2 for f in frames])
    return np.where(kept, audio, 0.0).astype(np.float32)


def frame_dbfs(pcm16: bytes) -> float:
    """The RMS level of one block of 16-bit PCM, in dBFS (-120 for digital silence)."""
    x = np.frombuffer(pcm16, np.int16).astype(np.float64) / 32768.0
    power = float(np.mean(x * x)) if x.size else 0.0
    return 10.0 * float(np.log10(power)) if power > 1e-12 else -120.0


@dataclass
class RoomVerdict:
    """Why a caller turn was judged the room's, with the evidence, for the journal."""

    reason: str
    level_dbfs: float | None
    caller_dbfs: float | None
    words: int

    def as_dict(self) -> dict:
        return {
            "reason": self.reason,
            "level_dbfs": None if self.level_dbfs is None else round(self.level_dbfs, 1),
            "caller_dbfs": None if self.caller_dbfs is None else round(self.caller_dbfs, 1),
            "words": self.words,
        }


@dataclass
class BackgroundVoices:
    """One call's evidence of what is the caller and what is the room."""

    turn_bound_ms: float = TURN_BOUND_MS
    below_caller_db: float = BELOW_CALLER_DB
    above_room_db: float = ABOVE_ROOM_DB
    room_dbfs: float | None = None  # the loudest turn judged the room's
    _caller: deque = field(default_factory=lambda: deque(maxlen=CALLER_TURNS_KEPT))
    _unreplied: float | None = None  # the level of the last long run of words with no reply

    @property
    def caller_dbfs(self) -> float | None:
        return median(self._caller) if self._caller else None

    def judge(self, words: str, raw: str, level_dbfs: float | None, *, reply: bool, at_bound: bool = False) -> RoomVerdict | None:
        """Is this turn the room's? `words`: what was heard (noise markers dropped);
        `raw`: whisper's text as it came (a loop shows there); `reply`: the words hold a
        value for the pending question or something the intent reader recognises;
        `at_bound`: the turn is still open after `turn_bound_ms`."""
        from voices.stt import loops_or_repeats

        caller = self.caller_dbfs
        verdict = None
        if not reply:
            if raw.strip() and loops_or_repeats(raw):
                verdict = LOOP
            elif at_bound:
                verdict = LONG_TURN
            elif caller is not None and level_dbfs is not None and level_dbfs < caller - self.below_caller_db:
                verdict = QUIETER
            elif (caller is None and self._unreplied is not None and level_dbfs is not None
                  and len(words.split()) >= ROOM_WORDS and abs(level_dbfs - self._unreplied) <= SAME_SOURCE_DB):
                verdict = AGAIN
        if verdict is None:
            if not reply and not at_bound and level_dbfs is not None and len(words.split()) >= ROOM_WORDS:
                self._unreplied = level_dbfs
            return None
        return RoomVerdict(verdict, level_dbfs, caller, len(words.split()))

    def learn_caller(self, level_dbfs: float | None) -> None:
        """A turn read as a reply: the caller's own level."""
        self._unreplied = None
        if level_dbfs is not None:
            self._caller.append(level_dbfs)

    def learn_room(self, level_dbfs: float | None) -> None:
        """A turn judged the room's: the room is at least this loud."""
        if level_dbfs is not None:
            self.room_dbfs = level_dbfs if self.room_dbfs is None else max(self.room_dbfs, level_dbfs)

    def louder_than_room(self, frame_dbfs: float) -> bool | None:
        """Is a frame clearly the caller over the room? None: no room level known yet."""
        if self.room_dbfs is None:
            return None
        return frame_dbfs >= self.room_dbfs + self.above_room_db


__all__ = ["ROOM_EVIDENCE_FRAMES", "ROOM_LOOKBACK_MS", "TURN_BOUND_MS", "VALUE_REPLY_WORDS", "gated_to_caller", "BackgroundVoices", "RoomGate", "RoomVerdict", "frame_dbfs",
           "speech_level_dbfs", "voiced_level_dbfs"]
