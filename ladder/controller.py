"""The serialized no-input controller: the silence ladder (L1-L14) and waits (W1-W7).

Sans-I/O in the manner of h11 and aioquic: `handle(event, now)` takes one event and
the caller's monotonic time in ms and returns effects (including `Trace` records);
`next_deadline()` says when the controller wants `handle_timer(now)`. Nothing here
sleeps, reads a clock or touches audio, so tests jump straight to each deadline.

Which events a state accepts is the `TRANSITIONS` table (ladder.states), data as in
h11: state -> event kind -> handler. An event the table does not accept is not an error
in a live call (callbacks race); it is recorded as a `rejected` trace with the reason,
and changes nothing. Events that cannot be valid in any state (time going backwards,
not an event at all) raise `ProtocolError`.

This class holds the state, the public API, the clock and the trace; the handlers live
with their seam, one module each, a short read:
  windows     listening windows and their generations, the ladder's stages, the deadline
  prompting   each prompt's lifecycle and the output's playback reports
  holds       explicit waits: the hold, its budget, the acknowledgement, the watchdog
  recovery    a failed input, output or recogniser (channel recovery)
  tool_waits  no-input timers suspended while a tool runs, the filler
  turns       caller turns, the reset table, answers and route requests
  episodes    the pending question, announcements, routes, closing and closed
"""

from __future__ import annotations

import functools

from .effects import Answered, Effect, Trace
from .episodes import Episodes
from .events import EVENT_TYPES, TIMER_KINDS, Event, TimerFired, identities
from .holds import Holds
from .policy import LadderPolicy, sentences
from .prompting import Prompting
from .recovery import Recovery
from .states import (
    TRANSITIONS,
    Closing,
    Episode,
    PromptRecord,
    PromptStatus,
    ProtocolError,
    State,
    Timer,
)
from .tool_waits import ToolWaits
from .turns import Turns
from .waits import TurnRef, WaitCoordinator
from .windows import _FIRE, Windows

_OWN = object()  # a trace identity not given: the controller's own (its episode, its stage)


class Controller(Windows, Prompting, Holds, Recovery, ToolWaits, Turns, Episodes):
    """One caller session's no-input controller."""

    def __init__(self, policy: LadderPolicy | None = None) -> None:
        self.policy = policy or _default_policy()
        self.state = State.IDLE
        self.now: float = 0.0  # the latest `now` seen; never read from a clock
        self._clock_started = False
        self.waits = WaitCoordinator(self.policy.max_wait_records)
        self.timers: dict[str, Timer] = {}
        self.prompts: dict[int, PromptRecord] = {}
        # the prompts not yet in a final status, oldest first: what may still be heard
        # (windows._audible_prompt reads these, not every prompt of the call)
        self._open_prompts: dict[int, PromptRecord] = {}
        self.episode: Episode | None = None
        self.episodes: list[Episode] = []
        self.answers: dict[str, Answered] = {}
        self.tools: dict[str, str] = {}  # running call -> tool name
        self.unresolved_tools: dict[str, str] = {}  # call -> name, outcome unknown
        self.outcome: str | None = None
        self.close_reason: str | None = None
        self._generation = 0
        self._token = 0
        self._episode_seq = 0
        self._boundary: int | None = None  # token whose end arms the next window
        self._statements: dict[int, bool] = {}  # statements in flight -> interruptible
        self._fired: dict[tuple[str, int], float] = {}  # accepted timers (duplicates)
        self._invalidated: dict[int, str] = {}  # generation -> why it was invalidated
        self._latest_turn: TurnRef | None = None
        self._turn_open = False  # a caller turn started and not yet interpreted
        self._no_response_expected = _RecentSet()
        self._responded = _RecentSet()
        self._suspended: Timer | None = None  # the window/hold a turn interrupted
        self._cut_by_speech: PromptRecord | None = None  # a reminder a turn's start cut
        self._resume_after_tool: bool = False
        self._filler_played = False
        self._closing: Closing | None = None
        self._route_switches: dict[str, bool] = {}  # route -> availability set during the call
        self._recovering_path: str | None = None
        # the ladder the last question ran under, kept when it ended: what the console's
        # ladder panel shows between questions, not the next stage's policy
        self._asked_policy: LadderPolicy | None = None
        self._effects: list[Effect] = []

    # -- public API -----------------------------------------------------------------

    @property
    def policy(self) -> LadderPolicy:
        return self._policy

    @policy.setter
    def policy(self, policy: LadderPolicy) -> None:
        self._policy = policy
        self._stage_names = tuple(stage.name for stage in policy.stages)  # read by every trace

    def _compose(self, stage, slot: str | None = None) -> tuple[str, tuple[str, ...], tuple[str, ...], bool]:
        """The policy's `compose` of `stage` (with `slot` for `{slot}` if given), and
        whether it came out with fewer sentences than the stage's wording.

        Memoized across controllers (every session of a replayed corpus shares its
        policy): a composition depends only on the stage, the policy's routes and the
        slot's words, all immutable. An entry holds the objects it was made from, so
        their ids in its key cannot be reused while it exists.
        """
        policy = self._policy
        routes = policy.routes
        spoken = policy.slot if slot is None else slot
        key = (id(stage), id(routes), spoken)
        hit = _COMPOSED.get(key)
        if hit is None or hit[0] is not stage or hit[1] is not routes:
            text, offered, left_out = policy.compose(stage, spoken)
            short = bool(stage.prompt) and len(sentences(text)) < len(sentences(stage.prompt))
            if len(_COMPOSED) >= 4096:
                _COMPOSED.clear()
            hit = _COMPOSED[key] = (stage, routes, (text, offered, left_out, short))
        return hit[2]

    @property
    def shown_policy(self) -> LadderPolicy:
        """The ladder a designer is shown: the pending question's (the one in force);
        with no question pending, the one the last question ran under, as it ran (a
        tool stage or the end of the call puts the flow's plain ladder in force, which
        that question never said); before any question, the one in force."""
        if self.pending_episode is None and self._asked_policy is not None:
            return self._asked_policy
        return self._policy

    @property
    def generation(self) -> int:
        return self._generation

    def handle(self, event: Event, now: float) -> list[Effect]:
        """Feed one event at monotonic time `now` (ms). Returns effects in order."""
        # the hottest path of the core: the handler found by the event's class, the
        # clock checked inline; the general checks run only when these fast ones fail
        handler = _HANDLERS_BY_TYPE[self.state].get(event.__class__)
        if handler is None and not isinstance(event, Event):
            raise ProtocolError(f"expected a ladder event, got {type(event).__name__}")
        cls = now.__class__
        if (cls is not float and cls is not int) or (now < self.now and self._clock_started):
            self._advance_clock(now)  # raises: not a number, or time going backwards
        self._clock_started = True
        self.now = now
        self._effects = []
        if handler is None:
            handler = _HANDLERS[self.state].get(event.kind)  # a subclass of an event type
        if handler is None:
            self._reject(event)
        else:
            handler(self, event)
        return self._effects

    def next_deadline(self) -> float | None:
        """When the controller next needs `handle_timer`, or None."""
        due = None
        for timer in self.timers.values():
            if due is None or timer.due < due:
                due = timer.due
        return due

    def handle_timer(self, now: float) -> list[Effect]:
        """Fire every timer due at `now`, earliest first (the aioquic style)."""
        self._advance_clock(now)
        effects: list[Effect] = []
        for _ in range(64):  # each firing disarms its timer; the bound guards bugs
            timer = self.next_due_timer(now)
            if timer is None:
                break
            effects += self.handle(timer, now)
        return effects

    def next_due_timer(self, now: float) -> TimerFired | None:
        """The earliest timer due at `now`, as the event that fires it, or None.

        A driver that journals every input feeds this event itself (so a recording
        holds each firing), instead of reading the controller's timer store.
        """
        first = None
        for timer in self.timers.values():
            if timer.due <= now and (first is None or (timer.due, timer.generation) < (first.due, first.generation)):
                first = timer
        if first is None:
            return None
        return TimerFired(first.kind, first.generation)  # type: ignore[arg-type]

    def timer(self, kind: str) -> Timer | None:
        return self.timers.get(kind)

    def answer_for(self, question: str) -> Answered | None:
        """The caller's answer to `question`; silence never produces one (L13)."""
        return self.answers.get(question)

    def may_commit(self, question: str) -> bool:
        """A commit guard: only an answer the caller gave may authorize anything."""
        answered = self.answers.get(question)
        return answered is not None and answered.intent == "answer"

    @property
    def pending_episode(self) -> Episode | None:
        """The episode whose question is still unanswered, if any."""
        ep = self.episode
        return ep if ep is not None and ep.outcome is None else None

    @property
    def current_stage(self) -> str | None:
        if self.episode is None:
            return None
        return self._stage_names[self.episode.stage_index]

    def snapshot(self) -> dict:
        """The full state, JSON-ready, for step-through and the console panels."""
        ep = self.episode
        return {
            "state": self.state.value,
            "now": self.now,
            "generation": self._generation,
            "outcome": self.outcome,
            "close_reason": self.close_reason,
            "episode": None
            if ep is None
            else {
                "id": ep.id,
                "question": ep.question,
                "phase": ep.phase,
                "stage": self.policy.stages[ep.stage_index].name,
                "stage_index": ep.stage_index,
                "started_at": ep.started_at,
                "hold_used_ms": ep.hold_used_ms,
                "hold_started_at": ep.hold_started_at,  # a hold running now: its time is not in hold_used_ms yet
                "hold_until": ep.hold_until,
                "held": ep.held,
                "checked": ep.checked,
                "restarts": ep.restarts,
                "outcome": ep.outcome,
                "prompt_sequence": list(ep.prompt_sequence),
            },
            "timers": {
                k: {
                    "generation": t.generation,
                    "due": t.due,
                    "armed_at": t.armed_at,
                    "origin": t.origin,
                    "turn": t.turn,
                }
                for k, t in sorted(self.timers.items())
            },
            "prompts": [
                {
                    "token": p.token,
                    "kind": p.kind,
                    "stage": p.stage,
                    "status": p.status.value,
                    "completion_estimated": p.completion_estimated,
                }
                for p in self.prompts.values()
            ],
            "boundary_token": self._boundary,
            "waits": self.waits.snapshot(),
            "tools": dict(self.tools),
            "unresolved_tools": dict(self.unresolved_tools),
            "routes": {r.id: r.available for r in self.policy.routes},
        }

    # -- clock, trace, rejection ----------------------------------------------------

    def _advance_clock(self, now: float) -> None:
        if isinstance(now, bool) or not isinstance(now, (int, float)):
            raise ProtocolError(f"now must be a number of milliseconds, got {now!r}")
        if self._clock_started and now < self.now:
            raise ProtocolError(f"time went backwards: now={now} after {self.now}")
        self._clock_started = True
        self.now = now

    def _trace(
        self, kind: str, reason: str, question=_OWN, episode=_OWN, generation=None, token=None, turn=None,
        stage=_OWN, **detail,
    ) -> None:
        ep = self.episode
        if ep is None:
            own_question = own_episode = own_stage = None
        else:
            own_question, own_episode = ep.question, ep.id
            own_stage = self._stage_names[ep.stage_index]
        # effects.make_trace, inlined: a Trace's dict built at once, no frozen __init__
        trace = _new_trace(Trace)
        fields = trace.__dict__
        fields["kind"] = kind
        fields["reason"] = reason
        fields["at"] = self.now
        fields["state"] = self.state._value_
        fields["question"] = own_question if question is _OWN else question
        fields["episode"] = own_episode if episode is _OWN else episode
        fields["generation"] = generation
        fields["token"] = token
        fields["turn"] = turn
        fields["stage"] = own_stage if stage is _OWN else stage
        fields["detail"] = detail
        self._effects.append(trace)

    def _note(self, kind: str, reason: str, generation, token, detail: dict, turn: str | None = None) -> None:
        """`_trace` for the hottest records (timers, states, prompts): the controller's own
        identities, the detail given as a dict; positional, so cheaper to call."""
        ep = self.episode
        trace = _new_trace(Trace)
        fields = trace.__dict__
        fields["kind"] = kind
        fields["reason"] = reason
        fields["at"] = self.now
        fields["state"] = self.state._value_
        if ep is None:
            fields["question"] = fields["episode"] = None
        else:
            fields["question"] = ep.question
            fields["episode"] = ep.id
        fields["generation"] = generation
        fields["token"] = token
        fields["turn"] = turn
        fields["stage"] = None if ep is None else self._stage_names[ep.stage_index]
        fields["detail"] = detail
        self._effects.append(trace)

    def _emit(self, effect: Effect) -> None:
        self._effects.append(effect)

    def _reject(self, event: Event, reason: str | None = None) -> None:
        ids = identities(event)
        if self.state is State.CLOSED:
            kind = "late_speech_after_close" if event.kind == "turn_started" else "ignored"
            self._trace(kind, reason or "session_closed", event=event.kind, **ids)
            return
        self._trace(
            "rejected",
            reason or f"{event.kind}_invalid_in_{self.state.value}",
            event=event.kind,
            **ids,
        )

    def _stale(self, reason: str, event: Event) -> None:
        self._trace("stale_rejected", reason, event=event.kind, **identities(event))

    # -- state and prompts ------------------------------------------------------------

    def _set_state(self, state: State, reason: str) -> None:
        previous = self.state
        if state is not previous:
            self.state = state
            self._note("state", reason, None, None, {"previous": previous._value_})


    # -- watchdog (W2) ----------------------------------------------------------------


    # -- caller turns ------------------------------------------------------------------


_new_trace = object.__new__


@functools.cache
def _default_policy() -> LadderPolicy:
    """The default policy, validated once: a policy is frozen, so every controller that
    was given none can share it (a corpus replays thousands of sessions)."""
    return LadderPolicy()

_COMPOSED: dict[tuple, tuple] = {}  # Controller._compose's memo

# TRANSITIONS names each state's handlers; looked up once, not per event
_HANDLERS = {state: {kind: getattr(Controller, name) for kind, name in table.items()} for state, table in TRANSITIONS.items()}
# the same table keyed by event class: handle() finds a handler without asking the event its kind
_FIRE.update({kind: getattr(Controller, f"_fire_{kind}") for kind in TIMER_KINDS})
_HANDLERS_BY_TYPE = {state: {EVENT_TYPES[kind]: h for kind, h in table.items()} for state, table in _HANDLERS.items()}


class _RecentSet(dict):
    """A set that forgets its oldest members: turn bookkeeping stays bounded (W6).

    A dict of members to None, so `in` is the dict's own (the core asks it every turn)."""

    def __init__(self, limit: int = 256) -> None:
        super().__init__()
        self._limit = limit

    def add(self, item) -> None:
        self[item] = None
        if len(self) > self._limit:
            del self[next(iter(self))]

    def discard(self, item) -> None:
        self.pop(item, None)


__all__ = ["Controller", "ProtocolError", "State", "PromptStatus", "TRANSITIONS", "Timer"]
