"""The agent's own model reads the caller (W8): its decision for a caller turn, and
Lull's own reading of the same words beside it.

Beside an LLM, the pipeline's model reads each caller turn as well as Lull does: in
Pipecat its turn-completion markers (complete, cut off mid-thought, needs more time), in
LiveKit the function tools Lull offers it (the caller needs time, the caller is back).
Where the model decided, its decision is what the core is fed, for the turn it was
about; Lull's reader still reads the words, and both readings go in the journal as one
`model_reading` observation, so a corpus counts agreements and turns the model labelled
into phrasings (`lull sessions phrasings`).

This module is the part both adapters share: what each model decision means to the
core, the observation written for it, and the words the model is given while the
caller is held (seed 001: while waiting, the model recognises the caller being ready
again, even without an answer to the pending question).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ladder.events import Event, TurnEnded, TurnInterpreted
from ladder.flow.understanding.text import digit_answer_evidence
from sessions.model_readings import comparable

# what the model decided, in Lull's words
ModelMeaning = Literal["answer", "cut_off", "wait_request", "ready"]

# Pipecat's turn-completion mixin names its markers' meanings "complete", "short" and
# "long" (LLMMarkerResponseFrame.kind); the marker text itself is configurable
MARKER_KINDS: dict[str, ModelMeaning] = {"complete": "answer", "short": "cut_off", "long": "wait_request"}

# Lull's own reader beside an LLM knows these meanings; any other words answer the question
LADDER_MEANINGS = ("wait_request", "ready", "repeat_request", "backchannel")

# the core's intent for each model decision: the model replying is an answer (Lull says
# nothing over the reply); cut off mid-thought is part of an answer (keep listening, the
# window rearms, no reprompt at once); needs time is the long-wait decision of seed 001
_INTENT = {"answer": "answer", "cut_off": "partial_answer", "wait_request": "wait_request", "ready": "ready"}

HOLD_NOTE = (
    "The caller asked for time, and the call is holding for them: say nothing and do not "
    "prompt them while they are away; the hold and any check-ins are handled for you. "
    "When they speak again, recognise that they are ready to go on even if they do not "
    "answer the pending question yet (\"okay, I'm back\", \"right, got it\"), and carry on "
    "from that question."
)


@dataclass(frozen=True)
class ModelDecision:
    """The model's reading of one caller turn (W1: it carries the turn it is for)."""

    turn: str
    seq: int
    meaning: ModelMeaning
    via: str  # "pipecat_marker" or "livekit_tool"
    marker: str | None = None  # the marker text, where there is one


def lull_meaning(intent: str | None, words: str = "") -> str:
    """Lull's reader's intent, as the ladder beside an LLM takes it. Words that are mostly
    digits ("it's four eight two one") answer whatever the reader made of them, as a
    flow's value comes before its intents (ladder.flow.runtime): the reader learns how
    callers ask and come back, and "right, it's here" sits near "it's 4 8 2 1"."""
    if words and digit_answer_evidence(words):
        return "answer"
    return intent if intent in LADDER_MEANINGS else "answer"


def core_events(decision: ModelDecision, words: str, turn_ended: bool) -> list[Event]:
    """What the core is fed for the model's decision: its interpretation of the turn and,
    when the framework will not close the turn itself, the turn's end after it (the model
    read a turn the caller had stopped speaking; for a wait, decision first, W2)."""
    intent = _INTENT[decision.meaning]
    value = (words or None) if intent == "answer" else None
    events: list[Event] = [TurnInterpreted(decision.turn, decision.seq, intent, value)]  # type: ignore[arg-type]
    if not turn_ended:
        events.append(TurnEnded(decision.turn, decision.seq))
    return events


def observation(decision: ModelDecision, lull_reading: tuple[str | None, float] | None,
                words: str, stale: bool) -> dict:
    """The journal's `model_reading` record: both readings of the turn, and whether they
    agree (None where they cannot be compared: a turn cut off, no words to read, or a
    reading the model's way of deciding cannot say: sessions.model_readings.SAYABLE).
    `lull_reading`: Lull's reader's (intent or None, score), None with no words."""
    lull = None if lull_reading is None else lull_meaning(lull_reading[0], words)
    lull_score = None if lull_reading is None else lull_reading[1]
    compared = comparable(decision.meaning, lull, decision.via)
    return {
        "turn": decision.turn, "turn_seq": decision.seq, "via": decision.via,
        **({"marker": decision.marker} if decision.marker is not None else {}),
        "model": decision.meaning, "lull": lull,
        "lull_score": None if lull_score is None else round(float(lull_score), 3),
        "agree": (decision.meaning == lull) if compared else None,
        "stale": stale, "words": words,
    }


__all__ = ["HOLD_NOTE", "LADDER_MEANINGS", "MARKER_KINDS", "ModelDecision", "core_events", "lull_meaning", "observation"]
