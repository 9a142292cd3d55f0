"""The pure no-input core of Lull: events in, effects out, `now` passed in.

No I/O, no clock, no threads: the runtime feeds events with monotonic milliseconds
and arms one timer at `Controller.next_deadline()`.
"""

from .controller import TRANSITIONS, Controller, PromptStatus, ProtocolError, State, Timer
from .effects import (
    OUTCOMES,
    TRACE_SCHEMA,
    Answered,
    CancelPrompt,
    Effect,
    EpisodeEnded,
    RequestPrompt,
    RouteTaken,
    SessionClosed,
    Trace,
)
from .events import (
    EVENT_TYPES,
    INTENTS,
    AgentResponded,
    AskQuestion,
    EndSession,
    Event,
    Hangup,
    PlaybackCompleted,
    PlaybackInterrupted,
    PlaybackStarted,
    PromptFailed,
    PromptSent,
    SetRouteAvailability,
    TimerFired,
    ToolFinished,
    ToolStarted,
    TransportFailed,
    TransportRecovered,
    TurnEnded,
    TurnInterpreted,
    TurnStarted,
    event_from_dict,
)
from .policy import LadderPolicy, ResetRule, Route, Stage
from .waits import Claim, TurnRef, WaitCoordinator

__all__ = [name for name in dir() if not name.startswith("_")]
