"""Inputs to the controller: caller, media, tool, timer and lifecycle events.

Every event is a frozen dataclass. The controller receives it together with `now`
(monotonic milliseconds supplied by the caller of the core); events never carry
their own clock reading. Callbacks that can arrive late (timer fires, playback
reports) carry the generation or prompt token they belong to, so the controller
can reject them when they no longer match (L3).
"""

from __future__ import annotations

import functools

from dataclasses import MISSING, dataclass, fields
from typing import Literal

from .frozen import fast_init

# What an interpreted caller turn means to the no-input policy (V5 produces these).
Intent = Literal[
    "answer",  # a usable answer to the pending question
    "partial_answer",  # progress, not yet complete (part of a code)
    "repeat_request",  # "could you say that again?"
    "wait_request",  # "give me a moment": the long-wait decision of seed 001
    "ready",  # "ok, I'm back" without an answer; meaningful only while waiting (W7)
    "backchannel",  # "mm-hmm": attention, not an answer
    "noise",  # sound that is not speech addressed to the agent
    "unclear",  # speech with no usable content (recognizer empty, low confidence)
    "decline",  # a genuine "no" from the caller: it answers the question
    "route",  # the caller picks one of the offered fallback routes
]

INTENTS: tuple[str, ...] = Intent.__args__  # type: ignore[attr-defined]

TimerKind = Literal[
    "window",  # the listening window of the current ladder stage
    "hold",  # the bounded explicit hold
    "still_waiting",  # during a hold: the next "I'm still here" line (the cadence)
    "playback_estimate",  # no completion observed: arm from the estimate instead
    "filler",  # tool running past filler_after_ms
    "recovery",  # channel recovery gives up
    "watchdog",  # missing-response watchdog for a closed caller turn (W2)
    "deadline",  # the total episode bound (L12)
]

TIMER_KINDS: tuple[str, ...] = TimerKind.__args__  # type: ignore[attr-defined]

MediaPath = Literal["input", "output", "recognizer"]
ToolOutcome = Literal["ok", "failed", "unknown"]


@dataclass(frozen=True)
class Event:
    """Base of every controller input."""

    @property
    def kind(self) -> str:
        return EVENT_KINDS_BY_TYPE[type(self)]

    def to_dict(self) -> dict:
        data = {"kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            data[f.name] = list(value) if isinstance(value, tuple) else value
        return data


# --- the pending question -------------------------------------------------------


@dataclass(frozen=True)
class AskQuestion(Event):
    """The agent asks a question: a new silence episode with its own limits (L1)."""

    question: str  # opaque question id (never the wording: it may be sensitive)
    text: str  # what the agent says
    phase: str = "collect"  # task phase, for the trace
    repeatable: bool = True  # may the question be restated on "ready" (L7)?
    interruptible: bool = True


@dataclass(frozen=True)
class Announce(Event):
    """The agent says something that asks nothing (a greeting, a disclosure)."""

    text: str
    label: str = ""  # what it belongs to (a flow stage), for the trace
    interruptible: bool = True


@dataclass(frozen=True)
class AgentResponded(Event):
    """The flow answered the caller's last turn in some other way (satisfies W2)."""

    turn: str


@dataclass(frozen=True)
class EndSession(Event):
    """The flow ends the call: normally (the task is done), or because it cannot go on
    (a tool failed or never answered, and the stage has no way forward)."""

    text: str = ""
    close_as: str = "completed"  # the session outcome
    reason: str = "flow_complete"


# --- caller turns (W1: identity and sequence on every turn and decision) -----------


@dataclass(frozen=True)
class TurnStarted(Event):
    """Caller speech began (VAD speech start). Resumption: cancels no-input output."""

    turn: str
    seq: int


@dataclass(frozen=True)
class TurnEnded(Event):
    """The caller's turn closed (the turn-stop callback of seed 001)."""

    turn: str
    seq: int


@dataclass(frozen=True)
class TurnInterpreted(Event):
    """The decision for a caller turn. May arrive before or after TurnEnded (W2)."""

    turn: str
    seq: int
    intent: Intent
    value: str | None = None  # the slot value for answer / partial_answer
    route: str | None = None  # the route id for intent == "route"


# --- media -------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptSent(Event):
    """The output adapter queued the prompt's audio; its duration refines the estimate."""

    token: int
    duration_ms: float


@dataclass(frozen=True)
class PlaybackStarted(Event):
    token: int


@dataclass(frozen=True)
class PlaybackCompleted(Event):
    """An endpoint observation that the audio finished playing, not proof of hearing."""

    token: int
    # what output transcription heard, where the endpoint reports it (verbatim checks)
    transcript: str | None = None


@dataclass(frozen=True)
class PlaybackInterrupted(Event):
    token: int


@dataclass(frozen=True)
class PromptFailed(Event):
    """The prompt could not be produced or was rejected before it played (W5)."""

    token: int
    reason: str = "rejected"


@dataclass(frozen=True)
class TransportFailed(Event):
    """The input, output or recognizer path failed: not caller silence (L9)."""

    path: MediaPath
    reason: str


@dataclass(frozen=True)
class TransportRecovered(Event):
    path: MediaPath


@dataclass(frozen=True)
class Hangup(Event):
    """The transport reports the caller disconnected."""

    reason: str = "caller_hangup"


# --- tools -------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolStarted(Event):
    call: str
    name: str


@dataclass(frozen=True)
class ToolFinished(Event):
    call: str
    outcome: ToolOutcome


# --- routes ------------------------------------------------------------------------


@dataclass(frozen=True)
class SetRouteAvailability(Event):
    """The designer (or the deployment) changes whether a fallback route exists."""

    route: str
    available: bool


# --- timers ------------------------------------------------------------------------


@dataclass(frozen=True)
class TimerFired(Event):
    """A timer callback. `generation` names the armed timer it was scheduled for."""

    timer: TimerKind
    generation: int


# --- flow-level events (the conversation graph; the silence controller rejects them) -


@dataclass(frozen=True)
class StartCall(Event):
    """The call is connected: the flow enters its first stages."""


@dataclass(frozen=True)
class CallerUtterance(Event):
    """A recognised caller turn: its words and the intent matched to them (V5).

    The flow reads slot values from `text` itself; `intent` and `score` come from the
    interpreter (example-phrase similarity) and are kept for the journal.
    """

    turn: str
    seq: int
    text: str
    intent: str | None = None
    score: float = 0.0
    # why there are no words, when there are none: "recognizer_empty" (no usable input)
    reason: str | None = None
    # what read the words ("classifier", "shape:<name>", "route_words", "model", ...), so
    # a designer sees why: None where the edge did not say
    reader: str | None = None
    # the learned yes/no reader's reading of the words (True yes, False no; None: neither,
    # unsure, or no reader): the flow takes it at a yes/no question where the words hold
    # no yes/no word of their own ("please do", "aye")
    yes_no: bool | None = None
    # that reader's probability of its reading (0.0: no reading), for the journal and the console
    yes_no_score: float = 0.0


@dataclass(frozen=True)
class SetFact(Event):
    """The designer or a scenario sets a state value directly."""

    key: str
    value: str | int | float | bool | None


@dataclass(frozen=True)
class ToolResult(Event):
    """A tool call came back (the flow runs tools; the ladder only sees the wait)."""

    call: str
    outcome: ToolOutcome
    result: dict | None = None


@dataclass(frozen=True)
class RequestTool(Event):
    """Ask for a tool now, outside a stage's own call (the designer, a scenario)."""

    tool: str
    args: dict | None = None


@dataclass(frozen=True)
class EditWording(Event):
    """The designer changed a prompt's wording during the call (journaled, so replay sees it)."""

    path: tuple  # JSON path in the flow file, e.g. ("ladder", "stages", 1, "prompt")
    text: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", tuple(self.path))  # JSON gives a list


EVENT_TYPES: dict[str, type[Event]] = {
    "ask_question": AskQuestion,
    "announce": Announce,
    "agent_responded": AgentResponded,
    "end_session": EndSession,
    "turn_started": TurnStarted,
    "turn_ended": TurnEnded,
    "turn_interpreted": TurnInterpreted,
    "prompt_sent": PromptSent,
    "playback_started": PlaybackStarted,
    "playback_completed": PlaybackCompleted,
    "playback_interrupted": PlaybackInterrupted,
    "prompt_failed": PromptFailed,
    "transport_failed": TransportFailed,
    "transport_recovered": TransportRecovered,
    "hangup": Hangup,
    "tool_started": ToolStarted,
    "tool_finished": ToolFinished,
    "set_route_availability": SetRouteAvailability,
    "timer_fired": TimerFired,
    "start_call": StartCall,
    "caller_utterance": CallerUtterance,
    "set_fact": SetFact,
    "tool_result": ToolResult,
    "request_tool": RequestTool,
    "edit_wording": EditWording,
}
EVENT_KINDS_BY_TYPE: dict[type[Event], str] = {v: k for k, v in EVENT_TYPES.items()}
for _cls in EVENT_TYPES.values():
    fast_init(_cls)  # a driver builds one an input: construction at a fraction of the cost


def event_from_dict(data: dict) -> Event:
    """Rebuild an event from `Event.to_dict()` output (journals, incident files).

    Raises ValueError naming the kind or field that is wrong.
    """
    if not isinstance(data, dict):
        raise ValueError(f"event must be an object, got {type(data).__name__}")
    kind = data.get("kind")
    cls = EVENT_TYPES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        known = ", ".join(sorted(EVENT_TYPES))
        raise ValueError(f"unknown event kind {kind!r}; expected one of: {known}")
    names, required, literals, integers = _shape(cls)
    extra = sorted(set(data) - names - {"kind"})
    if extra:
        raise ValueError(f"{kind}: unexpected field {extra[0]!r}; expected {sorted(names)}")
    absent = [name for name in required if name not in data]
    if absent:
        raise ValueError(f"{kind}: missing field {absent[0]!r}; required: {required}")
    event = cls(**{k: v for k, v in data.items() if k != "kind"})
    for name, allowed in literals:
        if getattr(event, name) not in allowed:
            raise ValueError(
                f"{event.kind}: field {name!r} is {getattr(event, name)!r}; "
                f"expected one of {', '.join(allowed)}"
            )
    for name in integers:
        value = getattr(event, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{event.kind}: field {name!r} must be an integer")
    return event


@functools.cache
def _shape(cls: type) -> tuple[frozenset[str], list[str], list[tuple[str, tuple[str, ...]]], list[str]]:
    """An event class's field names, required fields, fields held to a set of values,
    and integer fields: worked out once per class (a replay decodes every input)."""
    names = frozenset(f.name for f in fields(cls))
    required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
    checks = {
        "intent": INTENTS,
        "timer": TIMER_KINDS,
        "path": ("input", "output", "recognizer"),
        "outcome": ("ok", "failed", "unknown"),
    }
    if cls is EditWording:
        checks.pop("path")  # its "path" is a JSON path, not a media path
    if cls is CallerUtterance:
        checks.pop("intent")  # a flow's own intent name ("route:transfer", "faq")
    literals = [(name, allowed) for name, allowed in checks.items() if name in names]
    integers = [name for name in ("seq", "token", "generation") if name in names]
    return names, required, literals, integers


def identities(event: Event) -> dict:
    """The identities an event carries (turn, token, generation, timer, call, seq, route),
    for the trace record of a rejected or stale event."""
    ids = {}
    for name in ("turn", "token", "generation", "timer", "call", "seq", "route"):
        if hasattr(event, name):
            ids[name] = getattr(event, name)
    return ids
