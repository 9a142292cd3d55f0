"""Outputs of the controller: what the runtime must do, and the trace of why.

Effects are frozen dataclasses. The runtime executes them (speak, cancel audio, end
the call); `Trace` records go to the journal. Nothing here performs I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from .frozen import fast_init

TRACE_SCHEMA = 1

PromptKind = Literal[
    "question",  # the pending question itself
    "restate",  # the question again, briefly (repeat request, ready, channel repaired)
    "reminder",  # a ladder stage prompt (gentle check, alternative route)
    "acknowledgement",  # "Sure, take your time." once per pause (W3)
    "still_waiting",  # "I'm still here": during a hold, at the still-waiting cadence
    "filler",  # tool still running (L10)
    "reprompt",  # words not understood (no-match), or the missing-response watchdog (W2)
    "route_unavailable",  # the caller asked for a route that does not exist now
    "channel_recovery",  # honest notice that the line has a problem (L9)
    "close",  # the final message (L11)
    "statement",  # says something that asks nothing (greeting, disclosure)
]

Outcome = Literal[
    "answered",
    "resumed_after_check",
    "explicit_wait",
    "input_path_failed",
    "closed_incomplete",
    "caller_disconnected",
    "deadline_reached",
    "handed_off",
    "route_taken",
    "completed",
]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Effect:
    def to_dict(self) -> dict:
        data: dict[str, Any] = {"effect": type(self).__name__}
        for name in _field_names(type(self)):
            value = getattr(self, name)
            data[name] = list(value) if isinstance(value, tuple) else value
        return data


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


@dataclass(frozen=True)
class RequestPrompt(Effect):
    """Speak `text`. The output adapter reports playback events with `token`."""

    token: int
    kind: PromptKind
    text: str
    stage: str | None
    question: str | None
    interruptible: bool = True
    routes: tuple[str, ...] = ()  # fallback routes this prompt offers
    estimate_ms: float = 0.0  # duration estimate until the adapter says otherwise


@dataclass(frozen=True)
class CancelPrompt(Effect):
    """Stop the prompt and flush its queued audio at once."""

    token: int
    reason: str


@dataclass(frozen=True)
class Answered(Effect):
    """The caller (never silence) supplied the pending answer (L13)."""

    question: str
    turn: str
    value: str | None
    intent: str


@dataclass(frozen=True)
class RouteTaken(Effect):
    route: str
    question: str | None


@dataclass(frozen=True)
class EpisodeEnded(Effect):
    question: str
    episode: int
    outcome: Outcome
    reason: str
    pending_tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class SessionClosed(Effect):
    outcome: Outcome
    reason: str
    pending_tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallTool(Effect):
    """Run a tool (the flow admitted it); report back with a ToolResult event."""

    call: str
    tool: str
    args: dict
    stage: str | None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class ToolDenied(Effect):
    tool: str
    reason: str
    stage: str | None


@dataclass(frozen=True)
class SlotFilled(Effect):
    """A slot took a value from the caller's words (never from silence)."""

    slot: str
    value: str | int | bool
    turn: str
    correction: bool = False


@dataclass(frozen=True)
class TimingChanged(Effect):
    """The merged voice timing of the active stages (VAD end-of-speech hold and more)."""

    timing: dict


@dataclass(frozen=True)
class FlowEnded(Effect):
    reason: str  # terminal stage reached, or terminated by an overlay


@dataclass(frozen=True)
class Trace(Effect):
    """One transition, with the identities needed to diagnose a race (JSON-ready)."""

    kind: str
    reason: str
    at: float
    state: str
    question: str | None = None
    episode: int | None = None
    generation: int | None = None
    token: int | None = None
    turn: str | None = None
    stage: str | None = None
    detail: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        # every field is a scalar or the detail dict, in field order: the instance's own
        # dict is the record (the generic walk over fields was a third of a replay)
        return {"schema": TRACE_SCHEMA, **self.__dict__}


for _cls in (RequestPrompt, CancelPrompt, Answered, RouteTaken, EpisodeEnded, SessionClosed, CallTool, ToolDenied,
             SlotFilled, TimingChanged, FlowEnded, Trace):
    fast_init(_cls)  # the core makes several an event: construction at a fraction of the cost

_new_object = object.__new__
_set_attribute = object.__setattr__


def make_trace(kind, reason, at, state, question, episode, generation, token, turn, stage, detail) -> Trace:
    """A Trace without the frozen dataclass's field-by-field __init__: the core makes
    several per event, and building its dict at once is a fraction of the cost. The
    result is an ordinary Trace (equal, hashable, frozen), fields in their order."""
    trace = _new_object(Trace)
    _set_attribute(trace, "__dict__", {
        "kind": kind, "reason": reason, "at": at, "state": state, "question": question, "episode": episode,
        "generation": generation, "token": token, "turn": turn, "stage": stage, "detail": detail,
    })
    return trace
