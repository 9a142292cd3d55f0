"""States, prompt statuses, the transition table and the records the controller keeps.

The table is data in the manner of h11: for each state, the event kinds it accepts and
the controller method that handles each. What a state does not list is recorded as a
rejection, never acted on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from .effects import Outcome


class ProtocolError(Exception):
    """An input no state could accept: a bug in the caller of the core."""


class State(str, Enum):
    IDLE = "idle"  # no pending question
    ASKING = "asking"  # the question is being played; no window until its boundary
    LISTENING = "listening"  # a listening window is armed
    HEARING = "hearing"  # the caller is speaking; timers invalidated (L7)
    PROMPTING = "prompting"  # a ladder prompt is out; the next window waits for it
    HELD = "held"  # explicit, bounded hold (L6)
    RECOVERING = "recovering"  # channel recovery (L9)
    TOOL_WAIT = "tool_wait"  # a tool owns the delay (L10)
    CLOSING = "closing"  # final message queued (L11)
    CLOSED = "closed"  # absorbing


class PromptStatus(str, Enum):
    REQUESTED = "requested"
    STARTED = "started"
    COMPLETED = "completed"
    CANCELLED_BEFORE_PLAYBACK = "cancelled_before_playback"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


FINAL_PROMPT_STATUSES = {
    PromptStatus.COMPLETED,
    PromptStatus.CANCELLED_BEFORE_PLAYBACK,
    PromptStatus.INTERRUPTED,
    PromptStatus.FAILED,
}

# --- the transition table --------------------------------------------------------
# state -> event kinds it accepts -> handler. Media, timer and lifecycle callbacks are
# accepted everywhere but CLOSED because they race with everything; the handlers
# check identities (generation, token, turn) and record stale ones.

_ANYTIME = {
    "timer_fired": "_on_timer",
    "prompt_sent": "_on_prompt_sent",
    "playback_started": "_on_playback_started",
    "playback_completed": "_on_playback_completed",
    "playback_interrupted": "_on_playback_interrupted",
    "prompt_failed": "_on_prompt_failed",
    "hangup": "_on_hangup",
    "set_route_availability": "_on_route_availability",
    "tool_finished": "_on_tool_finished",
    "transport_recovered": "_on_transport_recovered",
    "agent_responded": "_on_agent_responded",
}
_CONVERSING = {
    **_ANYTIME,
    "ask_question": "_on_ask",
    "announce": "_on_announce",
    "turn_started": "_on_turn_started",
    "turn_ended": "_on_turn_ended",
    "turn_interpreted": "_on_interpreted",
    "transport_failed": "_on_transport_failed",
    "tool_started": "_on_tool_started",
    "end_session": "_on_end_session",
}
TRANSITIONS: dict[State, dict[str, str]] = {
    State.IDLE: _CONVERSING,
    State.ASKING: _CONVERSING,
    State.LISTENING: _CONVERSING,
    State.HEARING: _CONVERSING,
    State.PROMPTING: _CONVERSING,
    State.HELD: _CONVERSING,
    # while recovering, the caller cannot be heard reliably: turns are recorded only
    State.RECOVERING: {
        **_ANYTIME,
        # output works even when input does not: statements play (a verbatim disclosure
        # is never skipped) and a question is kept for the repair to ask
        "announce": "_on_announce",
        "ask_question": "_on_ask",
        "transport_failed": "_on_transport_failed",
        "turn_started": "_on_turn_while_unavailable",
        "turn_ended": "_on_turn_ended",
        "turn_interpreted": "_on_turn_while_unavailable",
        "tool_started": "_on_tool_started",
        "end_session": "_on_end_session",
    },
    # a tool owns the delay: turns are remembered for the coordinator, not the ladder
    State.TOOL_WAIT: {
        **_ANYTIME,
        "announce": "_on_announce",
        "ask_question": "_on_ask",
        "tool_started": "_on_tool_started",
        "transport_failed": "_on_transport_failed",
        "turn_started": "_on_turn_while_unavailable",
        "turn_ended": "_on_turn_ended",
        "turn_interpreted": "_on_turn_while_unavailable",
        "end_session": "_on_end_session",
    },
    State.CLOSING: {
        **_ANYTIME,
        "turn_started": "_on_turn_started_closing",
        "turn_ended": "_on_turn_ended",
        "turn_interpreted": "_on_turn_while_unavailable",
        "transport_failed": "_on_transport_failed_closing",
    },
    State.CLOSED: {},  # absorbing: everything is recorded and ignored
}


class Timer(NamedTuple):
    """An armed timer. A named tuple, not a frozen dataclass: the core arms one for most
    events, and a tuple is built at a fifth of the cost; immutable and compared by
    value all the same."""

    kind: str
    generation: int
    due: float
    armed_at: float
    origin: str = ""  # for windows: observed / estimated / resumed / ...
    turn: str | None = None  # for the watchdog


@dataclass
class PromptRecord:
    token: int
    kind: str
    stage: str | None
    question: str | None
    episode: int | None
    status: PromptStatus = PromptStatus.REQUESTED
    requested_at: float = 0.0
    estimate_ms: float = 0.0
    duration_ms: float | None = None
    on_complete: str | None = None  # window / hold / still_waiting / close / None
    completion_estimated: bool = False  # the boundary was taken from the estimate
    started_at: float | None = None
    # L8: a reminder that noise already cancelled once is requested again and plays
    # through further noise (only an interpreted caller turn cuts it)
    noise_proof: bool = False
    text: str = ""
    routes: tuple[str, ...] = ()
    interruptible: bool = True


@dataclass
class Episode:
    """One pending question's silence episode (L1)."""

    id: int
    question: str
    text: str
    phase: str
    repeatable: bool
    interruptible: bool
    started_at: float
    stage_index: int = 0
    restarts: int = 0
    hold_used_ms: float = 0.0
    hold_started_at: float | None = None
    hold_until: float | None = None  # the running hold's due time
    checked: bool = False  # a ladder reminder started playing
    held: bool = False  # an explicit hold happened
    recovered: bool = False  # the channel failed at some point
    ladder_prompts_started: int = 0
    reprompts: int = 0  # no-match reprompts asked in this episode
    # part of the value the caller gave before going quiet ("" when its digits were not
    # passed in): the next reminder says so, once
    partial: str | None = None
    # part of the value was heard in this episode (kept after the reminder that said so):
    # later reminders and the closes speak of the part received, never of nothing
    part_heard: bool = False
    # the question came while the caller was speaking and has not been played: it is
    # asked once their turn proves not to answer it (or not to ask for time)
    unasked: bool = False
    outcome: str | None = None
    prompt_sequence: list[str] = field(default_factory=list)


@dataclass
class Closing:
    outcome: Outcome
    reason: str
    cancellable: bool
    token: int | None
