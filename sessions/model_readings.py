"""The agent's own model as a second reader of each caller turn (issue 49).

Beside an LLM in Pipecat or LiveKit, the model decides about each caller turn (Pipecat's
turn-completion markers, LiveKit's "the caller needs time" / "the caller is back"
tools) while Lull's own reader reads the same words. The adapters journal one
observation per model reading, which replay leaves out:

    {"effect": "Observation", "kind": "model_reading", "turn": "user-3",
     "via": "pipecat_marker" | "livekit_tool",
     "model": "wait_request" | "ready" | "answer" | "cut_off",
     "lull": "wait_request" | "ready" | "repeat_request" | "backchannel" | "answer" | null,
     "lull_score": 0.83 | null, "agree": true | false | null, "stale": false,
     "words": "the caller's words, digits masked as the journal masks them"}

Only `model`, `lull`, `agree`, `stale`, `via` and `words` are read here. A turn's number
cannot be a `seq` field: the journal writes its own `seq` on every record and refuses
one in a payload. `agree`, when absent, is worked out as the adapters work it out.

Two readers of a corpus live here, each a per-journal part that merges (sessions.corpus):
- `ModelReadings`: the counts `lull sessions report` and `coverage` show (what the model
  decided, agreements, disagreements by pair, turns not comparable, stale decisions);
- `Phrasings`: the model-labelled words, turned by `phrasing_file` into the phrasing
  file `lull bench intents FLOW --phrasings FILE` measures a flow's matcher with.

Labels come from a fixed vocabulary: a value outside it is counted as "other", never
shown as written. The words are kept as the journal holds them (masked), never unmasked.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ladder.flow.understanding.shared_intents import LADDER_INTENTS

from .corpus import map_sessions
from .journal import JournalScan, iter_records
from .replay import OBSERVATION, session_record_problem

MODEL_READING = "model_reading"
MODEL_DECISIONS = ("wait_request", "ready", "answer", "cut_off")
LULL_READINGS = ("wait_request", "ready", "repeat_request", "backchannel", "answer")
VIA = ("pipecat_marker", "livekit_tool", "livekit_reply")
OTHER = "other"  # a value outside the vocabulary: counted, never echoed
_UNSET = object()

# What each way of deciding can say. Pipecat's markers say only complete, cut off or
# needs time: a caller back from a wait, asking again or saying "mm-hm" is a complete
# turn to them, so the model marking it complete does not contradict Lull's "ready". A
# LiveKit model has a tool for the caller being back, none for asking again or a
# backchannel. Beyond its vocabulary a model's "answer" is not compared with Lull's
# reading, nor exported as the words' label.
SAYABLE = {
    "pipecat_marker": frozenset({"answer", "wait_request"}),
    "livekit_tool": frozenset({"answer", "wait_request", "ready"}),
    "livekit_reply": frozenset({"answer", "wait_request", "ready"}),
}

# why a reading is not comparable (agree null), by what the record says
NOT_COMPARABLE = {
    "cut_off": "the model said the caller was cut off (Lull has no such reading)",
    "no_lull_reading": "Lull had no words to read",
    "unsayable": "Lull's reading is beyond what the model can say",
    "other": "not comparable for another reason",
}


def comparable(model: str, lull: str | None, via: str) -> bool:
    """Can the two readings be compared: Lull read the words, the model did not say the
    caller was cut off, and where the model took the turn as complete ("answer"), Lull's
    reading is one the model's way of deciding could have said instead."""
    if model == "cut_off" or lull is None:
        return False
    return model != "answer" or lull in SAYABLE.get(via, frozenset(LULL_READINGS))

# what each model decision teaches the ladder's matcher: a complete turn is none of the
# ladder's meanings, so for its intents it is off-topic ("none", voices.understanding.phrasing_bench's
# key: this layer cannot import it); a turn cut off teaches nothing
EXPORT_AS = {"wait_request": "wait_request", "ready": "ready", "answer": "none"}
assert all(name in LADDER_INTENTS for name in EXPORT_AS.values() if name != "none")  # every flow learns them


@dataclass(frozen=True)
class Reading:
    """One model reading, its fields checked."""

    model: str
    lull: str | None
    agree: bool | None
    stale: bool
    via: str
    words: str

    @property
    def why_not_comparable(self) -> str:
        if self.model == "cut_off":
            return "cut_off"
        if self.lull is None:
            return "no_lull_reading"
        return "unsayable" if not comparable(self.model, self.lull, self.via) else "other"


def is_model_reading(record: dict) -> bool:
    return record.get("effect") == OBSERVATION and record.get("kind") == MODEL_READING


def read_reading(record: dict) -> Reading | None:
    """A model-reading observation as a Reading, or None when a field cannot be read
    (an unknown model decision, a field of the wrong type)."""
    model, lull = record.get("model"), record.get("lull")
    agree, stale, words = record.get("agree", _UNSET), record.get("stale", False), record.get("words")
    if model not in MODEL_DECISIONS:
        return None
    if lull is not None and not isinstance(lull, str):
        return None
    # identity, not equality: 1 == True, and a 1 is not what the adapters write
    if agree is not _UNSET and not any(agree is v for v in (True, False, None)) or not (stale is True or stale is False):
        return None
    if words is not None and not isinstance(words, str):
        return None
    if lull is not None and lull not in LULL_READINGS:
        lull = OTHER
    via = record.get("via")
    via = via if via in VIA else OTHER
    if agree is _UNSET or not comparable(model, lull, via):
        # not written, or written before the model's vocabulary was taken into account:
        # worked out as the adapters work it out
        agree = model == lull if comparable(model, lull, via) else None
    return Reading(model, lull, agree, stale, via, words or "")


@dataclass
class ModelReadings:
    """The model's readings over some journals, counted (a part: `add` merges)."""

    sessions: int = 0  # journals with at least one model reading
    turns: int = 0  # model readings counted
    decided: Counter = field(default_factory=Counter)  # model decision -> turns
    agreed: int = 0
    disagreed: int = 0
    pairs: Counter = field(default_factory=Counter)  # (model, lull or None) -> disagreements
    not_comparable: Counter = field(default_factory=Counter)  # NOT_COMPARABLE key -> turns
    stale: int = 0
    via: Counter = field(default_factory=Counter)
    unusable: int = 0  # model-reading observations whose fields could not be read

    def feed(self, record: dict) -> None:
        found = read_reading(record)
        if found is None:
            self.unusable += 1
            return
        self.turns += 1
        self.decided[found.model] += 1
        self.via[found.via] += 1
        self.stale += found.stale
        if found.agree is True:
            self.agreed += 1
        elif found.agree is False:
            self.disagreed += 1
            self.pairs[(found.model, found.lull)] += 1
        else:
            self.not_comparable[found.why_not_comparable] += 1

    def end_session(self) -> None:
        """Called once a journal is read: it counts among those with readings if it had any."""
        self.sessions = 1 if self.turns or self.unusable else 0

    def add(self, other: ModelReadings) -> None:
        for name in ("sessions", "turns", "agreed", "disagreed", "stale", "unusable"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("decided", "pairs", "not_comparable", "via"):
            getattr(self, name).update(getattr(other, name))

    @property
    def comparable(self) -> int:
        return self.agreed + self.disagreed

    def sorted_pairs(self) -> list[tuple[str, str | None, int]]:
        """Disagreements as (model, Lull, turns), the most frequent first; ties by name,
        so any split of the corpus gives one order."""
        return [(m, lull, n) for (m, lull), n in sorted(self.pairs.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1] or ""))]

    def rows(self, sessions: int) -> list[tuple[str, int, int | None, str]]:
        """(metric, count, denominator, what the denominator is), as Metrics.rows."""
        if not self.turns and not self.unusable:
            return [("no model readings journaled", 0, None, "")]
        read = "turns the model read"
        out: list[tuple[str, int, int | None, str]] = [
            (read, self.turns, None, ""),
            ("sessions with model readings", self.sessions, sessions, "sessions"),
        ]
        out += [(f"model decided {m}", self.decided[m], self.turns, read) for m in MODEL_DECISIONS if self.decided[m]]
        out.append(("model and Lull agreed", self.agreed, self.comparable, "comparable turns"))
        out.append(("model and Lull disagreed", self.disagreed, self.comparable, "comparable turns"))
        out += [(f"model {m}, Lull {lull or 'no reading'}", n, self.disagreed, "disagreements")
                for m, lull, n in self.sorted_pairs()]
        out += [(f"not comparable: {NOT_COMPARABLE[why]}", self.not_comparable[why], self.turns, read)
                for why in NOT_COMPARABLE if self.not_comparable[why]]
        out.append(("stale: decided after the caller's next turn began", self.stale, self.turns, read))
        if self.unusable:
            out.append(("model readings with fields that cannot be read", self.unusable,
                        self.turns + self.unusable, "model readings journaled"))
        return out

    def to_dict(self) -> dict:
        return {
            "turns": self.turns,
            "sessions": self.sessions,
            "decided": {m: self.decided[m] for m in MODEL_DECISIONS},
            "agreed": self.agreed,
            "disagreed": self.disagreed,
            "comparable": self.comparable,
            "disagreements": [{"model": m, "lull": lull, "turns": n} for m, lull, n in self.sorted_pairs()],
            "not_comparable": {why: self.not_comparable[why] for why in NOT_COMPARABLE},
            "stale": self.stale,
            "via": dict(sorted(self.via.items())),
            "unusable": self.unusable,
        }

    def line(self) -> str:
        """One line, for a table cell: what the model decided, agreement, the pairs."""
        if not self.turns and not self.unusable:
            return "none journaled"
        decided = ", ".join(f"{m} {self.decided[m]}" for m in MODEL_DECISIONS if self.decided[m])
        parts = [f"{self.turns} turn(s): {decided}" if decided else f"{self.turns} turn(s)",
                 f"agreed {self.agreed} of {self.comparable} comparable"]
        parts += [f"model {m}, Lull {lull or 'no reading'}: {n}" for m, lull, n in self.sorted_pairs()]
        not_comparable = sum(self.not_comparable.values())
        if not_comparable:
            parts.append(f"not comparable {not_comparable}")
        parts.append(f"stale {self.stale}")
        if self.unusable:
            parts.append(f"unreadable fields {self.unusable}")
        return "; ".join(parts)


# -- the phrasing file ----------------------------------------------------------------------


def phrase_key(words: str) -> str:
    """What makes two phrasings the same: their words, lower case, punctuation and
    spacing aside (the bench's own reading of a phrasing, voices.understanding.phrasing_bench)."""
    return " ".join(re.findall(r"[a-z0-9']+", words.lower()))


@dataclass
class Phrasings:
    """The model-labelled words of some journals (a part: `add` merges)."""

    journals: int = 0
    turns: int = 0  # model readings read
    unusable: int = 0
    left_out: Counter = field(default_factory=Counter)  # "cut_off", "no_words" -> turns
    # phrase key -> (export intent, stale) -> turns: stale ones are kept, the export decides
    heard: dict[str, Counter] = field(default_factory=dict)
    spelling: dict[str, str] = field(default_factory=dict)  # phrase key -> how it is written out
    unreadable: list[str] = field(default_factory=list)

    def note_unreadable(self, text: str) -> None:
        self.unreadable.append(text)

    def feed(self, record: dict) -> None:
        found = read_reading(record)
        if found is None:
            self.unusable += 1
            return
        self.turns += 1
        intent = EXPORT_AS.get(found.model)
        key = phrase_key(found.words)
        if intent is None:
            self.left_out[found.model] += 1
            return
        if found.lull is not None and not comparable(found.model, found.lull, found.via):
            # a complete turn Lull read as the caller back or asking again: the model's
            # marker does not say it is none of the ladder's meanings
            self.left_out["unsayable"] += 1
            return
        if not key:
            self.left_out["no_words"] += 1
            return
        self.heard.setdefault(key, Counter())[(intent, found.stale)] += 1
        self._spell(key, " ".join(found.words.split()))

    def _spell(self, key: str, words: str) -> None:
        # the smallest spelling: the same whichever journal was read first
        if key not in self.spelling or words < self.spelling[key]:
            self.spelling[key] = words

    def add(self, other: Phrasings) -> None:
        for name in ("journals", "turns", "unusable"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.left_out.update(other.left_out)
        self.unreadable += other.unreadable
        for key, counts in other.heard.items():
            self.heard.setdefault(key, Counter()).update(counts)
            self._spell(key, other.spelling[key])


@dataclass
class PhrasingExport:
    """A phrasing file and what went into it."""

    file: dict[str, list[str]]  # intent -> phrases, in EXPORT_AS's order, the most heard first
    turns: Counter  # intent -> turns behind its phrases
    left_out: Counter  # why -> turns: cut_off, unsayable, no_words, stale, two_ways, outvoted
    two_ways: int  # phrases the model read more than one way, under the agreement asked for

    @property
    def phrases(self) -> int:
        return sum(map(len, self.file.values()))


def phrasing_file(part: Phrasings, include_stale: bool = False, min_agreement: float = 1.0) -> PhrasingExport:
    """The phrasing file: each phrase once, under the intent the model gave it.

    Words the model read more than one way go under the intent most of their turns had
    when its share is at least `min_agreement` (1.0: only words read one way); a tie is
    never settled by a guess: such words are left out.
    """
    chosen: dict[str, list[tuple[int, str]]] = {}
    turns: Counter = Counter()
    left_out = Counter(part.left_out)
    two_ways = 0
    for key, counts in part.heard.items():
        by_intent: Counter = Counter()
        for (intent, stale), n in counts.items():
            if stale and not include_stale:
                left_out["stale"] += n
            else:
                by_intent[intent] += n
        if not by_intent:
            continue
        ranked = by_intent.most_common()
        total = sum(by_intent.values())
        tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        if tied or ranked[0][1] < min_agreement * total - 1e-9:
            left_out["two_ways"] += total
            two_ways += 1
            continue
        intent, n = ranked[0]
        chosen.setdefault(intent, []).append((n, part.spelling[key]))
        turns[intent] += n
        if len(ranked) > 1:
            left_out["outvoted"] += total - n  # the minority's turns, not in the file
    file = {intent: [words for _, words in sorted(chosen[intent], key=lambda t: (-t[0], t[1]))]
            for intent in dict.fromkeys(EXPORT_AS.values()) if chosen.get(intent)}
    return PhrasingExport(file, turns, left_out, two_ways)


# -- reading journals --------------------------------------------------------------------------


def _unreadable(path: Any, exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if str(path) in text else f"{path}: {text}"


def journal_phrasings(path: Path) -> Phrasings:
    """One journal's model-labelled turns."""
    part = Phrasings()
    try:
        for record in iter_records(path, JournalScan(), check=session_record_problem):
            if record["type"] == "decision" and is_model_reading(record):
                part.feed(record)
    except (ValueError, OSError) as exc:
        return Phrasings(unreadable=[_unreadable(path, exc)])
    part.journals = 1
    return part


def corpus_phrasings(roots: list[Path], workers: int | None = None, progress: Callable[[int], None] | None = None,
                     scheduler: Any = None) -> Phrasings:
    """Every journal under `roots` (session folders, archives, or folders of them)."""
    return map_sessions(roots, journal_phrasings, Phrasings(), workers, progress, scheduler)


__all__ = [
    "EXPORT_AS", "MODEL_DECISIONS", "MODEL_READING", "ModelReadings", "PhrasingExport", "Phrasings", "Reading",
    "corpus_phrasings", "is_model_reading", "journal_phrasings", "phrase_key", "phrasing_file", "read_reading",
]
