"""Property-based tests of the pure ladder core (design rules L1-L14, W1-W7).

A hypothesis state machine drives one `ladder.Controller` on a virtual clock: time is
milliseconds the test advances itself; nothing sleeps. Rules interleave questions,
caller turns (start / end / decision, in either order, also for older turns), time
(punctual wakes at each deadline, late wakes, jumps to the next deadline), timer
callbacks (due, early, stale, duplicate, unknown), playback reports for the current
and for old or unknown prompt tokens (by hand, and from a simulated output endpoint
like `sessions.incidents.VirtualRun`), transport failures and repairs, tools, route
availability and the end of the call. Once a call is closed, one step feeds it a batch
of late inputs (speech, playback, timers, questions...) and then starts a new call.

Invariants (checked after every step; those about what one `handle()` or
`handle_timer()` returned are checked as each input is fed):

  1. at most one stage advance per timer generation (L3);
  2. a prompt cancelled before playback never starts, and a start reported for it is
     rejected as stale (L5, L7);
  3. closed is absorbing: it stays closed, later inputs yield only traces, one
     SessionClosed per session (L11);
  4. the episode deadline always ends the episode and closes; a pending episode always
     has a deadline armed (unless closing/closed); no pending episode outlives
     episode_ms (L12);
  5. ladder prompts (reminder, close) played per episode <= prompted stages (L4);
  6. silence never answers: Answered only while handling a caller decision with intent
     answer/decline; may_commit only after an "answer" (L13);
  7. holds are bounded: hold_used_ms <= hold_budget_ms, each hold <= hold_ms (L6);
  8. every Trace record is JSON-ready and carries the identity fields (S1);
  9. after handle_timer(now), next_deadline() is in the future.

Examples per policy: LULL_HYPOTHESIS_EXAMPLES (default 200); steps per example:
LULL_HYPOTHESIS_STEPS (default 60). A failing invariant's message carries the exact
input log (virtual time, event) of the failing call. The counterexamples the machine
found are replayed deterministically at the end of this file.
"""

from __future__ import annotations

import heapq
import json
import os
from dataclasses import dataclass

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from ladder import (
    INTENTS,
    AgentResponded,
    Announce,
    Answered,
    AskQuestion,
    CancelPrompt,
    Controller,
    EndSession,
    Event,
    Hangup,
    LadderPolicy,
    PlaybackCompleted,
    PlaybackInterrupted,
    PlaybackStarted,
    PromptFailed,
    PromptSent,
    PromptStatus,
    RequestPrompt,
    SessionClosed,
    SetRouteAvailability,
    Stage,
    State,
    TimerFired,
    ToolFinished,
    ToolStarted,
    Trace,
    TransportFailed,
    TransportRecovered,
    TurnEnded,
    TurnInterpreted,
    TurnStarted,
)
from ladder.events import TIMER_KINDS

EXAMPLES = int(os.environ.get("LULL_HYPOTHESIS_EXAMPLES", "200"))
STEPS = int(os.environ.get("LULL_HYPOTHESIS_STEPS", "60"))

SETTINGS = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    print_blob=True,
)

TRACE_KEYS = (
    "schema",
    "kind",
    "reason",
    "question",
    "episode",
    "generation",
    "token",
    "turn",
    "stage",
)
LADDER_PROMPT_KINDS = ("reminder", "close")
PLAYED = {PromptStatus.STARTED, PromptStatus.COMPLETED, PromptStatus.INTERRUPTED}
CLOSING_OR_CLOSED = (State.CLOSING, State.CLOSED)
ROUTE_IDS = ("repeat", "go_on_without", "transfer", "no_such_route")
PROMPT_KINDS = (
    "question",
    "restate",
    "reminder",
    "acknowledgement",
    "filler",
    "reprompt",
    "channel_recovery",
    "close",
    "statement",
)

# virtual time steps: mostly short, often a stage wait, sometimes past the episode bound
DT = st.one_of(
    st.integers(min_value=0, max_value=1_500),
    st.integers(min_value=0, max_value=1_500),
    st.integers(min_value=1_500, max_value=20_000),
    st.integers(min_value=1_500, max_value=20_000),
    st.integers(min_value=20_000, max_value=130_000),
)


@dataclass(frozen=True)
class Endpoint:
    """The simulated output endpoint (the Playback model of sessions.incidents)."""

    auto: bool = False  # False: only the playback rules report anything
    start_delay_ms: int = 100
    ms_per_word: int = 300
    report_sent: bool = False
    lose_start: tuple[str, ...] = ()
    lose_completion: tuple[str, ...] = ()
    fail: tuple[str, ...] = ()


AFTER_CLOSE = (
    "time",
    "speech",
    "turn_started",
    "ask",
    "playback_started",
    "playback_completed",
    "stale_timer",
    "duplicate_timer",
    "transport_failed",
    "transport_recovered",
    "tool_finished",
    "announce",
    "hangup",
    "end_session",
)

ENDPOINTS = st.one_of(
    st.just(Endpoint()),
    st.builds(
        Endpoint,
        auto=st.just(True),
        start_delay_ms=st.integers(min_value=0, max_value=600),
        ms_per_word=st.integers(min_value=50, max_value=500),
        report_sent=st.booleans(),
        lose_start=st.lists(st.sampled_from(PROMPT_KINDS), max_size=2, unique=True).map(
            tuple
        ),
        lose_completion=st.lists(
            st.sampled_from(PROMPT_KINDS), max_size=2, unique=True
        ).map(tuple),
        fail=st.lists(st.sampled_from(PROMPT_KINDS), max_size=1, unique=True).map(
            tuple
        ),
    ),
)


def decision(ref: tuple[str, int], intent: str, route: str) -> TurnInterpreted:
    value = {"answer": "4821", "partial_answer": "48", "decline": "no"}.get(intent)
    return TurnInterpreted(
        ref[0], ref[1], intent, value=value, route=route if intent == "route" else None
    )


def small_policy() -> LadderPolicy:
    """Short waits, three stages, a small hold budget: deadlines and holds come fast."""
    return LadderPolicy(
        stages=(
            Stage(name="quiet", wait_ms=1_000),
            Stage(
                name="check",
                wait_ms=1_500,
                prompt="Still there? I can repeat the question.",
                routes=("repeat", "go_on_without"),
            ),
            Stage(
                name="close",
                wait_ms=500,
                prompt="Nothing was changed. Goodbye.",
                closes=True,
            ),
        ),
        episode_ms=9_000,
        hold_ms=1_500,  # a full hold leaves 500 ms of budget: partial and exhausted holds
        hold_budget_ms=2_000,
        still_waiting_ms=None,  # one hold of hold_ms at a time (the cadence has its own policy below)
        recovery_ms=2_500,
        filler_after_ms=400,
        watchdog_ms=1_200,
        completion_grace_ms=300,
        ms_per_word=120,
    )


def open_call(self) -> bool:
    return self.c.state is not State.CLOSED


class LadderMachine(RuleBasedStateMachine):
    """One controller, one virtual clock, a simulated output endpoint, and a model of
    what the trace has said about timers and prompts."""

    POLICY: LadderPolicy = LadderPolicy()

    def __init__(self) -> None:
        super().__init__()
        self.policy = self.POLICY
        self.calls_made = 0
        self.reset_call(Endpoint())

    def reset_call(self, endpoint: Endpoint) -> None:
        """A fresh session: a new controller and an empty model (the clock restarts at 0)."""
        self.calls_made += 1
        self.c = Controller(self.policy)
        self.now = 0
        self.endpoint = endpoint
        self.log: list[str] = [f"-- call {self.calls_made}: endpoint {endpoint}"]
        # the simulated output endpoint's queued reports: (at, seq, what, token, duration)
        self.reports: list[tuple] = []
        self.report_seq = 0
        self.flushed: set[int] = set()  # tokens the controller cancelled (CancelPrompt)
        self.started_tokens: set[int] = set()  # tokens with a prompt_started trace
        # what the trace told us about timers: kind -> armed generation
        self.armed: dict[str, int] = {}
        # generations invalidated or superseded by a rearm
        self.stale: set[tuple[str, int]] = set()
        self.fired: set[tuple[str, int]] = set()
        # stage_advanced generation -> virtual time
        self.advanced_generations: dict[int, float] = {}
        # prompts
        self.tokens: list[int] = []
        self.cancelled_before_playback: set[int] = set()
        # questions and answers
        self.asked: list[str] = []
        # question -> intent of the caller's Answered
        self.answered_by: dict[str, str] = {}
        # caller turns: (turn id, seq); seq strictly increases
        self.turns: list[tuple[str, int]] = []
        self.open_turns: list[tuple[str, int]] = []
        self.next_seq = 1
        # tools
        self.next_call = 1
        self.calls: list[str] = []
        # closure
        self.session_closed = 0
        self.ever_closed = False

    # -- assertions -------------------------------------------------------------------

    def fail(self, message: str) -> None:
        lines = "\n".join(f"    {line}" for line in self.log)
        raise AssertionError(
            f"{message}\n  state={self.c.state.value} now={self.now}\n"
            f"  input log of this call (virtual ms):\n{lines}"
        )

    def check(self, condition: bool, message: str) -> None:
        if not condition:
            self.fail(message)

    # -- feeding the controller -----------------------------------------------------

    def feed(self, event: Event) -> list:
        was_closed = self.c.state is State.CLOSED
        cancelled_before = (
            isinstance(event, PlaybackStarted)
            and event.token in self.cancelled_before_playback
        )
        self.log.append(f"t={self.now}: handle({event!r})")
        effects = self.c.handle(event, self.now)
        self.absorb(effects, source=event, was_closed=was_closed)
        if cancelled_before:
            # invariant 2 (second half); once CLOSED every input is recorded as "ignored"
            self.check(
                any(
                    isinstance(e, Trace)
                    and e.token == event.token
                    and (
                        e.kind == "stale_rejected"
                        or (was_closed and e.kind == "ignored")
                    )
                    for e in effects
                ),
                f"invariant 2: PlaybackStarted for token {event.token}, cancelled before "
                f"playback, produced no stale_rejected trace: {[e.to_dict() for e in effects]}",
            )
        if isinstance(event, TimerFired):
            self.after_timer_delivery(effects)
        return effects

    def wake(self) -> list:
        """handle_timer(now): what a runtime does when its single timer goes off."""
        was_closed = self.c.state is State.CLOSED
        effects = self.c.handle_timer(self.now)
        fired = [
            f"{e.detail.get('timer')}#{e.generation}"
            for e in effects
            if isinstance(e, Trace) and e.kind == "timer_fired"
        ]
        self.log.append(f"t={self.now}: handle_timer() fired {fired}")
        self.absorb(effects, source=None, was_closed=was_closed)
        self.after_timer_delivery(effects)
        # invariant 9: handle_timer fires everything due
        deadline = self.c.next_deadline()
        self.check(
            deadline is None or deadline > self.now,
            f"invariant 9: after handle_timer({self.now}) next_deadline() is {deadline}, "
            f"not in the future; timers: {self.c.snapshot()['timers']}",
        )
        return effects

    def deliver_report(self) -> None:
        """The endpoint's next queued report (the VirtualRun rules for flushed audio)."""
        at, _, what, token, duration = heapq.heappop(self.reports)
        self.now = max(self.now, at)
        if token in self.flushed:
            # flushed audio: reported once as interrupted if it had begun, else nothing
            if what == "completed" and token in self.started_tokens:
                self.feed(PlaybackInterrupted(token))
            return
        if what == "sent":
            self.feed(PromptSent(token, float(duration)))
        elif what == "started":
            self.feed(PlaybackStarted(token))
        elif what == "completed":
            self.feed(PlaybackCompleted(token))
        else:
            self.feed(PromptFailed(token, "endpoint_rejected"))

    def advance_to(
        self, target: float, *, punctual: bool = True, before: bool = False
    ) -> None:
        """Move the clock to `target`, delivering endpoint reports as they fall due.

        punctual: the runtime wakes at every deadline on the way (reports first at equal
        times, as in VirtualRun); otherwise its timer is late and only the caller's next
        handle_timer() fires what is overdue. before: stop short of items due at target.
        """
        for _ in range(2_000):
            deadline = self.c.next_deadline() if punctual else None
            report = self.reports[0][0] if self.reports else None

            def due(at):
                return at is not None and (at < target if before else at <= target)

            if due(report) and (deadline is None or report <= deadline):
                self.deliver_report()
            elif due(deadline):
                self.now = max(self.now, deadline)
                self.wake()
            else:
                break
        else:
            self.fail(
                "the clock could not reach its target: timers or reports keep falling due"
            )
        self.now = max(self.now, target)

    def after_timer_delivery(self, effects: list) -> None:
        # invariant 4: a fired deadline ends its episode, and the session closes
        for e in effects:
            if isinstance(e, Trace) and e.kind == "episode_deadline":
                episode = next(
                    (ep for ep in self.c.episodes if ep.id == e.episode), None
                )
                self.check(
                    episode is not None,
                    f"invariant 4: deadline fired for unknown episode {e.episode}",
                )
                self.check(
                    episode.outcome == "deadline_reached",
                    f"invariant 4: the deadline fired but episode {episode.id} ended as {episode.outcome!r}",
                )
                self.check(
                    self.c.state in CLOSING_OR_CLOSED,
                    f"invariant 4: the deadline fired but the state is {self.c.state.value}",
                )

    def absorb(self, effects: list, *, source: Event | None, was_closed: bool) -> None:
        for effect in effects:
            if was_closed:
                # invariant 3: closed is absorbing
                self.check(
                    isinstance(effect, Trace),
                    f"invariant 3: input {source!r} after close produced {effect!r}",
                )
            if isinstance(effect, Trace):
                self.absorb_trace(effect)
            elif isinstance(effect, RequestPrompt):
                self.tokens.append(effect.token)
                self.endpoint_receives(effect)
            elif isinstance(effect, CancelPrompt):
                self.flushed.add(effect.token)
            elif isinstance(effect, Answered):
                # invariant 6: only a caller decision answers
                self.check(
                    isinstance(source, TurnInterpreted)
                    and source.intent in ("answer", "decline"),
                    f"invariant 6: {effect!r} emitted while handling "
                    f"{'handle_timer()' if source is None else repr(source)}",
                )
                self.check(
                    effect.intent == source.intent and effect.turn == source.turn,
                    f"invariant 6: {effect!r} does not match the decision {source!r}",
                )
                self.answered_by[effect.question] = effect.intent
            elif isinstance(effect, SessionClosed):
                self.session_closed += 1
                self.check(
                    self.session_closed == 1,
                    f"invariant 3: SessionClosed emitted {self.session_closed} times",
                )
        for token, record in self.c.prompts.items():
            if record.status is PromptStatus.CANCELLED_BEFORE_PLAYBACK:
                self.cancelled_before_playback.add(token)
        if self.c.state is State.CLOSED:
            self.ever_closed = True

    def absorb_trace(self, t: Trace) -> None:
        # invariant 8: JSON-ready with the identity fields
        data = t.to_dict()
        missing = [k for k in TRACE_KEYS if k not in data]
        self.check(not missing, f"invariant 8: trace {t.kind} lacks {missing}: {data}")
        try:
            json.dumps(data)
        except (TypeError, ValueError) as exc:
            self.fail(
                f"invariant 8: trace {t.kind} is not JSON-serializable ({exc}): {data!r}"
            )
        timer = t.detail.get("timer")
        if t.kind.endswith("_armed"):
            self.check(
                timer == t.kind[: -len("_armed")] and isinstance(t.generation, int),
                f"trace model: arming record without timer/generation: {data}",
            )
            old = self.armed.get(timer)
            if old is not None:
                self.stale.add((timer, old))  # superseded by the rearm
            self.armed[timer] = t.generation
        elif t.kind == "timer_fired":
            self.fired.add((timer, t.generation))
            self.armed.pop(timer, None)
        elif t.kind == "timer_invalidated":
            self.stale.add((timer, t.generation))
            if self.armed.get(timer) == t.generation:
                del self.armed[timer]
        elif t.kind == "prompt_started":
            self.started_tokens.add(t.token)
        elif t.kind == "stage_advanced":
            # invariant 1: one advance per generation
            self.check(
                t.generation is not None,
                f"invariant 1: stage_advanced without generation: {data}",
            )
            self.check(
                t.generation not in self.advanced_generations,
                f"invariant 1: generation {t.generation} advanced the stage twice "
                f"(at {self.advanced_generations.get(t.generation)} and {t.at})",
            )
            self.advanced_generations[t.generation] = t.at

    def endpoint_receives(self, prompt: RequestPrompt) -> None:
        ep = self.endpoint
        if not ep.auto:
            return  # manual endpoint: only the playback rules report anything
        duration = max(1, len(prompt.text.split())) * ep.ms_per_word
        if prompt.kind in ep.fail:
            self.queue_report(self.now, "failed", prompt.token)
            return
        if ep.report_sent:
            self.queue_report(self.now, "sent", prompt.token, duration)
        start = self.now + ep.start_delay_ms
        if prompt.kind not in ep.lose_start:
            self.queue_report(start, "started", prompt.token)
        if prompt.kind not in ep.lose_completion:
            self.queue_report(start + duration, "completed", prompt.token)

    def queue_report(
        self, at: float, what: str, token: int, duration: float = 0
    ) -> None:
        self.report_seq += 1
        heapq.heappush(self.reports, (at, self.report_seq, what, token, duration))

    # -- sessions -------------------------------------------------------------------------

    @initialize(endpoint=ENDPOINTS)
    def first_question(self, endpoint: Endpoint) -> None:
        self.reset_call(endpoint)
        self.ask_question(repeatable=True, interruptible=True)

    @precondition(lambda self: self.c.state is State.CLOSED)
    @rule(
        late=st.lists(st.sampled_from(AFTER_CLOSE), min_size=1, max_size=6),
        dt=st.integers(min_value=0, max_value=20_000),
        endpoint=ENDPOINTS,
    )
    def late_inputs_after_close_then_new_call(
        self, late: list[str], dt: int, endpoint: Endpoint
    ) -> None:
        """Closed is final (L11): late inputs change nothing; then a fresh session starts."""
        newest = max(self.tokens, default=1)
        for what in late:
            if what == "time":
                self.advance_to(self.now + dt, punctual=False)
                self.wake()
            elif what == "speech":
                self.caller_says("answer", True, 300, "repeat")
            elif what == "turn_started":
                self.feed(TurnStarted(*self.new_turn()))
            elif what == "ask":
                self.feed(AskQuestion("q_late", "Are you still there?"))
            elif what == "playback_started":
                self.feed(PlaybackStarted(newest))
            elif what == "playback_completed":
                self.feed(PlaybackCompleted(newest))
            elif what == "stale_timer" and self.stale:
                self.feed(TimerFired(*max(self.stale, key=lambda k: k[1])))
            elif what == "duplicate_timer" and self.fired:
                self.feed(TimerFired(*max(self.fired, key=lambda k: k[1])))
            elif what == "transport_failed":
                self.feed(TransportFailed("input", "lost"))
            elif what == "transport_recovered":
                self.feed(TransportRecovered("input"))
            elif what == "tool_finished":
                self.feed(ToolFinished(self.calls[-1] if self.calls else "c1", "ok"))
            elif what == "announce":
                self.feed(Announce("Goodbye."))
            elif what == "hangup":
                self.feed(Hangup())
            elif what == "end_session":
                self.feed(EndSession("Bye."))
            self.run_all_invariants()
        self.reset_call(endpoint)
        self.ask_question(repeatable=True, interruptible=True)

    # -- the pending question ---------------------------------------------------------

    @precondition(open_call)
    @rule(repeatable=st.booleans(), interruptible=st.booleans())
    def ask_question(self, repeatable: bool, interruptible: bool) -> None:
        question = f"q{len(self.asked) + 1}"
        self.asked.append(question)
        self.feed(
            AskQuestion(
                question,
                "What is your reference code?",
                repeatable=repeatable,
                interruptible=interruptible,
            )
        )

    @precondition(open_call)
    @rule(data=st.data())
    def agent_responds(self, data) -> None:
        turn = (
            data.draw(st.sampled_from(self.turns), label="turn")
            if self.turns
            else ("t0", 0)
        )
        self.feed(AgentResponded(turn[0]))

    @precondition(open_call)
    @rule(interruptible=st.booleans())
    def agent_announces(self, interruptible: bool) -> None:
        """A statement that asks nothing (greeting, disclosure); speech may cut it."""
        self.feed(
            Announce(
                "This call may be recorded.",
                label="greeting",
                interruptible=interruptible,
            )
        )

    @precondition(open_call)
    @rule(how=st.sampled_from(["hangup", "end_session_with_text", "end_session_quiet"]))
    def call_ends(self, how: str) -> None:
        if how == "hangup":
            self.feed(Hangup())
        elif how == "end_session_with_text":
            self.feed(EndSession("Thanks, goodbye."))
        else:
            self.feed(EndSession())

    # -- caller turns -----------------------------------------------------------------

    def new_turn(self) -> tuple[str, int]:
        ref = (f"t{self.next_seq}", self.next_seq)
        self.next_seq += 1
        self.turns.append(ref)
        return ref

    @precondition(open_call)
    @rule()
    def caller_starts_turn(self) -> None:
        ref = self.new_turn()
        self.open_turns.append(ref)
        self.feed(TurnStarted(*ref))

    @precondition(lambda self: open_call(self) and len(self.turns) >= 2)
    @rule(data=st.data())
    def older_turn_starts_late(self, data) -> None:
        ref = data.draw(st.sampled_from(self.turns[:-1]), label="older turn")
        self.feed(TurnStarted(*ref))

    @precondition(open_call)
    @rule(data=st.data())
    def caller_turn_ends(self, data) -> None:
        if self.open_turns and data.draw(st.booleans(), label="an open turn"):
            ref = data.draw(st.sampled_from(self.open_turns), label="open turn")
            self.open_turns.remove(ref)
        elif self.turns:
            ref = data.draw(st.sampled_from(self.turns), label="any turn")
        else:
            ref = self.new_turn()
        self.feed(TurnEnded(*ref))

    @precondition(open_call)
    @rule(
        intent=st.sampled_from(INTENTS),
        which=st.sampled_from(["latest", "new_without_start", "older"]),
        route=st.sampled_from(ROUTE_IDS),
    )
    def caller_decision(self, intent: str, which: str, route: str) -> None:
        if which == "latest" and self.turns:
            ref = self.turns[-1]
        elif which == "older" and len(self.turns) >= 2:
            ref = self.turns[-2]
        else:
            ref = self.new_turn()  # a text backend: a decision with no speech start
        self.feed(decision(ref, intent, route))

    @precondition(open_call)
    @rule(
        intent=st.sampled_from(INTENTS),
        decision_first=st.booleans(),
        speech_ms=st.integers(min_value=0, max_value=2_500),
        route=st.sampled_from(ROUTE_IDS),
    )
    def caller_says(
        self, intent: str, decision_first: bool, speech_ms: int, route: str
    ) -> None:
        """A whole turn: start, speech, then the decision and the end in either order (W2)."""
        ref = self.new_turn()
        self.feed(TurnStarted(*ref))
        self.advance_to(self.now + speech_ms)
        if decision_first:
            self.feed(decision(ref, intent, route))
            self.feed(TurnEnded(*ref))
        else:
            self.feed(TurnEnded(*ref))
            self.feed(decision(ref, intent, route))

    @precondition(open_call)
    @rule(
        decision_first=st.booleans(),
        speech_ms=st.integers(min_value=0, max_value=1_500),
    )
    def caller_asks_for_time(self, decision_first: bool, speech_ms: int) -> None:
        """ "Give me a moment" (L6, W3): frequent enough that holds meet their budget."""
        self.caller_says("wait_request", decision_first, speech_ms, "repeat")

    # -- time -----------------------------------------------------------------------------

    @precondition(open_call)
    @rule(dt=DT)
    def advance_then_wake(self, dt: int) -> None:
        """Advance by dt, then one handle_timer(now): a late timer fires everything due."""
        self.advance_to(self.now + dt, punctual=False)
        self.wake()

    @precondition(open_call)
    @rule(dt=DT)
    def advance_waking_at_each_deadline(self, dt: int) -> None:
        self.advance_to(self.now + dt)
        self.wake()

    @precondition(open_call)
    @precondition(lambda self: self.c.next_deadline() is not None)
    @rule()
    def jump_to_next_deadline(self) -> None:
        self.advance_to(self.c.next_deadline(), before=True)
        self.wake()

    # -- timer callbacks delivered explicitly (L3) ------------------------------------------

    @precondition(open_call)
    @precondition(lambda self: bool(self.c.timers))
    @rule(data=st.data())
    def deliver_armed_timer_when_due(self, data) -> None:
        kind = data.draw(st.sampled_from(sorted(self.c.timers)), label="armed timer")
        timer = self.c.timers[kind]
        # a punctual runtime handles everything earlier first; that may invalidate it
        self.advance_to(timer.due, before=True)
        self.feed(TimerFired(kind, timer.generation))

    @precondition(open_call)
    @precondition(lambda self: bool(self.c.timers))
    @rule(data=st.data())
    def deliver_armed_timer_early(self, data) -> None:
        kind = data.draw(st.sampled_from(sorted(self.c.timers)), label="armed timer")
        timer = self.c.timers[kind]
        effects = self.feed(TimerFired(kind, timer.generation))
        if self.now < timer.due:
            self.check(
                all(isinstance(e, Trace) for e in effects)
                and any(e.kind == "stale_rejected" for e in effects),
                f"L3: an early callback for {kind}#{timer.generation} (due {timer.due}) acted: "
                f"{[e.to_dict() for e in effects]}",
            )

    @precondition(open_call)
    @precondition(lambda self: bool(self.stale))
    @rule(data=st.data())
    def deliver_stale_generation(self, data) -> None:
        kind, generation = data.draw(
            st.sampled_from(sorted(self.stale)), label="stale timer"
        )
        effects = self.feed(TimerFired(kind, generation))
        self.check(
            all(isinstance(e, Trace) for e in effects)
            and any(e.kind in ("stale_rejected", "ignored") for e in effects),
            f"L3: stale callback {kind}#{generation} was not rejected: {[e.to_dict() for e in effects]}",
        )

    @precondition(open_call)
    @precondition(lambda self: bool(self.fired))
    @rule(data=st.data())
    def deliver_duplicate_generation(self, data) -> None:
        kind, generation = data.draw(
            st.sampled_from(sorted(self.fired)), label="fired timer"
        )
        effects = self.feed(TimerFired(kind, generation))
        self.check(
            all(isinstance(e, Trace) for e in effects)
            and any(e.kind in ("stale_rejected", "ignored") for e in effects),
            f"L3: duplicate callback {kind}#{generation} was not rejected: {[e.to_dict() for e in effects]}",
        )

    @precondition(open_call)
    @rule(
        kind=st.sampled_from(TIMER_KINDS),
        generation=st.integers(min_value=10_000, max_value=10_010),
    )
    def deliver_unknown_generation(self, kind: str, generation: int) -> None:
        effects = self.feed(TimerFired(kind, generation))
        self.check(
            all(isinstance(e, Trace) for e in effects),
            f"L3: callback for a never-armed generation acted: {[e.to_dict() for e in effects]}",
        )

    # -- playback reports for current, old and unknown tokens -----------------------------

    def pick_token(self, data) -> int:
        which = data.draw(
            st.sampled_from(["current", "older", "unknown"]), label="token choice"
        )
        if which == "current" and self.tokens:
            return self.tokens[-1]
        if which == "older" and self.tokens:
            return data.draw(st.sampled_from(self.tokens), label="older token")
        return max(self.tokens, default=0) + 500

    @precondition(open_call)
    @rule(data=st.data(), duration=st.integers(min_value=0, max_value=12_000))
    def prompt_sent(self, data, duration: int) -> None:
        self.feed(PromptSent(self.pick_token(data), float(duration)))

    @precondition(open_call)
    @rule(data=st.data())
    def playback_started(self, data) -> None:
        self.feed(PlaybackStarted(self.pick_token(data)))

    @precondition(open_call)
    @rule(data=st.data())
    def playback_completed(self, data) -> None:
        self.feed(PlaybackCompleted(self.pick_token(data)))

    @precondition(open_call)
    @rule(data=st.data())
    def playback_interrupted(self, data) -> None:
        self.feed(PlaybackInterrupted(self.pick_token(data)))

    @precondition(open_call)
    @rule(data=st.data())
    def prompt_failed(self, data) -> None:
        self.feed(PromptFailed(self.pick_token(data), "endpoint_rejected"))

    @precondition(open_call)
    @precondition(lambda self: bool(self.cancelled_before_playback))
    @rule(data=st.data())
    def late_start_of_cancelled_prompt(self, data) -> None:
        token = data.draw(
            st.sampled_from(sorted(self.cancelled_before_playback)),
            label="cancelled token",
        )
        self.feed(PlaybackStarted(token))

    @precondition(lambda self: open_call(self) and bool(self.tokens))
    @rule(
        start_delay=st.integers(min_value=0, max_value=800),
        duration=st.integers(min_value=200, max_value=9_000),
        report_sent=st.booleans(),
    )
    def endpoint_plays_latest_prompt(
        self, start_delay: int, duration: int, report_sent: bool
    ) -> None:
        """The latest prompt played through by hand (whatever the endpoint model does)."""
        token = self.tokens[-1]
        if report_sent:
            self.feed(PromptSent(token, float(duration)))
        self.advance_to(self.now + start_delay)
        self.feed(PlaybackStarted(token))
        self.advance_to(self.now + duration)
        self.feed(PlaybackCompleted(token))

    # -- media paths, tools, routes ------------------------------------------------------

    @precondition(open_call)
    @rule(path=st.sampled_from(["input", "output", "recognizer"]))
    def transport_failed(self, path: str) -> None:
        self.feed(TransportFailed(path, "lost"))

    @precondition(open_call)
    @rule(path=st.sampled_from(["input", "output", "recognizer"]))
    def transport_recovered(self, path: str) -> None:
        self.feed(TransportRecovered(path))

    @precondition(open_call)
    @rule()
    def tool_started(self) -> None:
        call = f"c{self.next_call}"
        self.next_call += 1
        self.calls.append(call)
        self.feed(ToolStarted(call, "lookup"))

    @precondition(open_call)
    @rule(data=st.data(), outcome=st.sampled_from(["ok", "failed", "unknown"]))
    def tool_finished(self, data, outcome: str) -> None:
        call = data.draw(st.sampled_from(self.calls + ["c_unknown"]), label="call")
        self.feed(ToolFinished(call, outcome))

    @precondition(open_call)
    @rule(route=st.sampled_from(ROUTE_IDS), available=st.booleans())
    def set_route_availability(self, route: str, available: bool) -> None:
        self.feed(SetRouteAvailability(route, available))

    def teardown(self) -> None:
        event(f"calls per run: {self.calls_made}")
        event(f"final state: {self.c.state.value}")
        most = 0
        for ep in self.c.episodes:
            most = max(
                most,
                sum(
                    1
                    for p in self.c.prompts.values()
                    if p.episode == ep.id
                    and p.kind in LADDER_PROMPT_KINDS
                    and p.status in PLAYED
                ),
            )
        event(f"most ladder prompts played in one episode: {most}")

    # -- invariants checked after every step ------------------------------------------------

    @invariant()
    def closed_is_absorbing(self) -> None:
        if self.ever_closed:
            self.check(
                self.c.state is State.CLOSED,
                f"invariant 3: left CLOSED for {self.c.state.value}",
            )
            self.check(
                not self.c.timers,
                f"invariant 3: timers armed after close: {sorted(self.c.timers)}",
            )

    @invariant()
    def cancelled_prompts_never_start(self) -> None:
        for token in self.cancelled_before_playback:
            record = self.c.prompts.get(token)
            self.check(
                record is not None
                and record.status is PromptStatus.CANCELLED_BEFORE_PLAYBACK,
                f"invariant 2: prompt {token} was cancelled before playback, now "
                f"{None if record is None else record.status.value}",
            )

    @invariant()
    def deadline_bounds_every_pending_episode(self) -> None:
        ep = self.c.pending_episode
        if ep is None:
            return
        if self.c.state not in CLOSING_OR_CLOSED:
            self.check(
                "deadline" in self.c.timers,
                f"invariant 4: episode {ep.id} is pending in {self.c.state.value} with no deadline armed",
            )
        resets = any(r.deadline == "reset" for r in self.policy.reset.values())
        bound = self.policy.episode_ms * (1 + (ep.restarts if resets else 0))
        self.check(
            self.now - ep.started_at <= bound,
            f"invariant 4: episode {ep.id} still pending after {self.now - ep.started_at} ms (bound {bound})",
        )

    @invariant()
    def ladder_prompts_per_episode(self) -> None:
        played: dict[int | None, list[str]] = {}
        for record in self.c.prompts.values():
            if record.kind in LADDER_PROMPT_KINDS and record.status in PLAYED:
                played.setdefault(record.episode, []).append(
                    f"{record.kind}#{record.token}({record.stage}, {record.status.value})"
                )
        for episode, prompts in played.items():
            self.check(
                len(prompts) <= self.policy.prompted_stages,
                f"invariant 5: episode {episode} played {len(prompts)} ladder prompts "
                f"(> {self.policy.prompted_stages} prompted stages): {prompts}",
            )

    @invariant()
    def silence_never_commits(self) -> None:
        for question in [*self.asked, "never_asked"]:
            expected = self.answered_by.get(question) == "answer"
            self.check(
                self.c.may_commit(question) == expected,
                f"invariant 6: may_commit({question!r}) is {self.c.may_commit(question)}, "
                f"caller answers seen: {self.answered_by.get(question)!r}",
            )
        for question, answered in self.c.answers.items():
            self.check(
                self.answered_by.get(question) == answered.intent,
                f"invariant 6: controller holds answer {answered!r} that no caller decision produced",
            )

    @invariant()
    def holds_are_bounded(self) -> None:
        for ep in self.c.episodes:
            self.check(
                ep.hold_used_ms <= self.policy.hold_budget_ms,
                f"invariant 7: episode {ep.id} hold_used_ms={ep.hold_used_ms} exceeds "
                f"hold_budget_ms={self.policy.hold_budget_ms}",
            )
        hold = self.c.timers.get("hold")
        # one hold lasts hold_ms; with a still-waiting cadence it keeps the caller
        # company to the budget, so the budget bounds it (checked above, when it ends)
        longest = self.policy.hold_ms if self.policy.still_waiting_ms is None else self.policy.hold_budget_ms
        if hold is not None:
            self.check(
                hold.due - hold.armed_at <= longest,
                f"invariant 7: hold #{hold.generation} armed at {hold.armed_at} for "
                f"{hold.due - hold.armed_at} ms (> {longest})",
            )
        still = self.c.timers.get("still_waiting")
        if still is not None:
            self.check(
                hold is not None and still.due < hold.due,
                f"invariant 7: still-waiting line #{still.generation} due at {still.due} outside a hold ({hold})",
            )

    @invariant()
    def trace_explains_timers(self) -> None:
        """The model built from *_armed / timer_fired / timer_invalidated matches the controller."""
        actual = {k: t.generation for k, t in self.c.timers.items()}
        self.check(
            actual == self.armed,
            f"trace model: controller timers {actual} but the trace says {self.armed}",
        )

    INVARIANTS = (
        "closed_is_absorbing",
        "cancelled_prompts_never_start",
        "deadline_bounds_every_pending_episode",
        "ladder_prompts_per_episode",
        "silence_never_commits",
        "holds_are_bounded",
        "trace_explains_timers",
    )

    def run_all_invariants(self) -> None:
        """Every @invariant, for replays outside hypothesis."""
        for name in self.INVARIANTS:
            getattr(self, name)()


class SmallPolicyLadderMachine(LadderMachine):
    POLICY = small_policy()


class CadencePolicyLadderMachine(LadderMachine):
    # the small policy with a still-waiting cadence: holds run to the budget with lines
    # every 600 ms, racing the caller's turns, the deadline and the media
    POLICY = small_policy().model_copy(update={"still_waiting_ms": 600.0})


class TestLadderPropertiesCadencePolicy(CadencePolicyLadderMachine.TestCase):
    settings = SETTINGS


class TestLadderPropertiesDefaultPolicy(LadderMachine.TestCase):
    settings = SETTINGS


class TestLadderPropertiesSmallPolicy(SmallPolicyLadderMachine.TestCase):
    settings = SETTINGS


def test_small_policy_shape() -> None:
    """The second policy is what the brief asks for: three stages, short waits, small budget."""
    policy = small_policy()
    assert len(policy.stages) == 3 and policy.stages[-1].closes
    assert policy.prompted_stages == 2
    assert policy.hold_budget_ms < LadderPolicy().hold_budget_ms
    assert not any(r.deadline == "reset" for r in policy.reset.values())
    assert not any(r.deadline == "reset" for r in LadderPolicy().reset.values())


# --- counterexamples the machine found, replayed deterministically -------------------------
#
# Both were found by the state machine above and fixed in the controller while these
# tests were written; they stay as exact replays so a regression fails every run, not
# only when the random search happens to reach it. Each is a schedule of (virtual ms,
# input) for a punctual runtime: before each input the clock moves to its time and every
# deadline on the way fires at its due time, except LATE_WAKE, where the runtime's timer
# goes off late and one handle_timer(at) fires everything overdue. Every invariant is
# checked after every input, exactly as in the machine.

LATE_WAKE = "late_wake"


def replay(
    machine: LadderMachine, schedule: list[tuple[float, object]], until: float
) -> LadderMachine:
    machine.reset_call(Endpoint())
    for at, item in schedule:
        if isinstance(item, str) and item == LATE_WAKE:
            machine.advance_to(at, punctual=False)
            machine.wake()
        else:
            machine.advance_to(at)
            machine.feed(item)
        machine.run_all_invariants()
    machine.advance_to(until)
    machine.wake()
    machine.run_all_invariants()
    return machine


class Bound120Machine(LadderMachine):
    # the default policy with the 120 s episode bound it had when this was found
    POLICY = LadderPolicy(episode_ms=120_000)


def test_regression_deadline_during_ladder_close_default_policy() -> None:
    """Invariant 5 (L11, L12): the deadline passes while the ladder's safe-close message
    is playing. Found: the controller cut that message off (interrupted) and played the
    deadline's close as a second final message: 4 ladder prompts in one episode (> 3)."""
    question = AskQuestion("q1", "What is your reference code?")
    # heard in full at 2 000: the quiet_wait window runs to 10 000
    schedule: list[tuple[float, object]] = [
        (0, question),
        (2_000, PlaybackCompleted(1)),
    ]
    # "4...", "8...": a partial answer every 7 s keeps the ladder at quiet_wait
    for n, at in enumerate(range(9_000, 73_000, 7_000), start=1):
        schedule.append((at, TurnInterpreted(f"t{n}", n, "partial_answer", value="48")))
    # silence; the endpoint reports each prompt's start (its end comes from the estimate):
    # gentle_check, alternative_route, the safe-close message (estimated end 123 880),
    # and at 120 000 a second close message, if the deadline requested one
    schedule += [
        (80_000, PlaybackStarted(2)),
        (96_820, PlaybackStarted(3)),
        (115_160, PlaybackStarted(4)),
        (120_000, PlaybackStarted(5)),
    ]
    machine = replay(Bound120Machine(), schedule, until=130_000)
    assert machine.c.episodes[0].outcome == "deadline_reached"
    assert machine.c.state is State.CLOSED


class FoundHoldMachine(LadderMachine):
    """The small policy as it was when the machine found the hold overdraft."""

    POLICY = LadderPolicy.model_validate(
        {**small_policy().model_dump(), "hold_ms": 2_000, "hold_budget_ms": 3_000}
    )


def test_regression_late_timer_overdraws_hold_budget_small_policy() -> None:
    """Invariant 7 (L6): found: a late handle_timer() charged the runtime's lateness to the
    hold, so one hold of hold_ms=2000 recorded hold_used_ms=3001 > hold_budget_ms=3000."""
    # "give me a moment", decided before the turn closes: one acknowledgement
    schedule: list[tuple[float, object]] = [
        (0, AskQuestion("q1", "What is your reference code?")),
        (0, TurnStarted("t1", 1)),
        (0, TurnInterpreted("t1", 1, "wait_request")),
        (0, TurnEnded("t1", 1)),
        (0, PlaybackStarted(2)),
        (200, PlaybackCompleted(2)),  # acknowledgement played: a 2000 ms hold, due 2200
        (3_201, LATE_WAKE),  # the runtime's timer goes off 1001 ms late
    ]
    machine = replay(FoundHoldMachine(), schedule, until=3_201)
    assert machine.c.episodes[0].hold_used_ms == 2_000
