"""The serialized no-input controller: the silence ladder (L1-L14) and waits (W1-W7).

Sans-I/O in the manner of h11 and aioquic: `handle(event, now)` takes one event and
the caller's monotonic time in ms and returns effects (including `Trace` records);
`next_deadline()` says when the controller wants `handle_timer(now)`. Nothing here
sleeps, reads a clock or touches audio, so tests jump straight to each deadline.

Which events a state accepts is the `TRANSITIONS` table below. An event the table
does not accept is not an error in a live call (callbacks race); it is recorded as a
`rejected` trace with the reason, and changes nothing. Events that cannot be valid
in any state (time going backwards, not an event at all) raise `ProtocolError`.
"""

from __future__ import annotations

from .effects import (
    OUTCOMES,
    Answered,
    CancelPrompt,
    Effect,
    EpisodeEnded,
    Outcome,
    RequestPrompt,
    RouteTaken,
    SessionClosed,
    make_trace,
)
from .events import (
    AgentResponded,
    Announce,
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
)
from .policy import LadderPolicy, drop_placeholders, sentences
from .states import (
    FINAL_PROMPT_STATUSES,
    TRANSITIONS,
    Closing,
    Episode,
    PromptRecord,
    PromptStatus,
    ProtocolError,
    State,
    Timer,
)
from .waits import TurnRef, WaitCoordinator

_OWN = object()  # a trace identity not given: the controller's own (its episode, its stage)


class Controller:
    """One caller session's no-input controller."""

    def __init__(self, policy: LadderPolicy | None = None) -> None:
        self.policy = policy or LadderPolicy()
        self.state = State.IDLE
        self.now: float = 0.0  # the latest `now` seen; never read from a clock
        self._clock_started = False
        self.waits = WaitCoordinator(self.policy.max_wait_records)
        self.timers: dict[str, Timer] = {}
        self.prompts: dict[int, PromptRecord] = {}
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
        self._no_response_expected = _RecentSet()
        self._responded = _RecentSet()
        self._suspended: Timer | None = None  # the window/hold a turn interrupted
        self._cut_by_speech: PromptRecord | None = None  # a reminder a turn's start cut
        self._resume_after_tool: bool = False
        self._filler_played = False
        self._closing: Closing | None = None
        self._route_switches: dict[str, bool] = {}  # route -> availability set during the call
        self._recovering_path: str | None = None
        self._effects: list[Effect] = []

    # -- public API -----------------------------------------------------------------

    @property
    def policy(self) -> LadderPolicy:
        return self._policy

    @policy.setter
    def policy(self, policy: LadderPolicy) -> None:
        self._policy = policy
        self._stage_names = tuple(stage.name for stage in policy.stages)  # read by every trace
        self._composed: dict[str, tuple] = {}  # stage -> its prompt as composed under this policy

    def _compose(self, stage) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """The policy's `compose`, once per stage and policy (a policy is frozen; a route
        switched on or off makes a new one)."""
        composed = self._composed.get(stage.name)
        if composed is None or composed[0] is not stage:
            composed = self._composed[stage.name] = (stage, self._policy.compose(stage))
        return composed[1]

    @property
    def generation(self) -> int:
        return self._generation

    def handle(self, event: Event, now: float) -> list[Effect]:
        """Feed one event at monotonic time `now` (ms). Returns effects in order."""
        if not isinstance(event, Event):
            raise ProtocolError(f"expected a ladder event, got {type(event).__name__}")
        self._advance_clock(now)
        self._effects = []
        handler = _HANDLERS[self.state].get(event.kind)
        if handler is None:
            self._reject(event)
        else:
            handler(self, event)
        return self._effects

    def next_deadline(self) -> float | None:
        """When the controller next needs `handle_timer`, or None."""
        if not self.timers:
            return None
        return min(t.due for t in self.timers.values())

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
        due = [t for t in self.timers.values() if t.due <= now]
        if not due:
            return None
        timer = min(due, key=lambda t: (t.due, t.generation))
        return TimerFired(timer.kind, timer.generation)  # type: ignore[arg-type]

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
        # the hottest path of the core (several records an event): identities as
        # keywords, the record built at once (effects.make_trace)
        ep = self.episode
        if ep is None:
            own_question = own_episode = own_stage = None
        else:
            own_question, own_episode = ep.question, ep.id
            own_stage = self._stage_names[ep.stage_index]
        self._effects.append(make_trace(
            kind, reason, self.now, self.state._value_,
            own_question if question is _OWN else question,
            own_episode if episode is _OWN else episode,
            generation, token, turn,
            own_stage if stage is _OWN else stage,
            detail,
        ))

    def _emit(self, effect: Effect) -> None:
        self._effects.append(effect)

    def _reject(self, event: Event, reason: str | None = None) -> None:
        ids = _identities(event)
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
        self._trace("stale_rejected", reason, event=event.kind, **_identities(event))

    # -- timers ---------------------------------------------------------------------

    def _arm(self, kind: str, due: float, origin: str = "", turn: str | None = None) -> Timer:
        old = self.timers.get(kind)
        if old is not None:
            self._disarm(kind, "rearmed")  # the replaced timer's callback is stale: say so
        self._generation += 1
        timer = Timer(kind, self._generation, due, self.now, origin, turn)
        self.timers[kind] = timer
        detail = {"timer": kind, "due": due, "origin": origin}
        if turn is not None:
            detail["turn"] = turn
        self._trace(f"{kind}_armed", origin or "armed", generation=timer.generation, **detail)
        return timer

    def _disarm(self, kind: str, reason: str) -> Timer | None:
        timer = self.timers.pop(kind, None)
        if timer is not None:
            self._invalidated[timer.generation] = reason
            if len(self._invalidated) > 256:
                del self._invalidated[next(iter(self._invalidated))]
            self._trace(
                "timer_invalidated", reason, generation=timer.generation, timer=kind
            )
        return timer

    def _invalidate_no_input(self, reason: str) -> None:
        """Resumption, holds, tools, recovery: no queued no-input callback may act."""
        self._end_hold_accounting()
        for kind in ("window", "hold", "playback_estimate"):
            self._disarm(kind, reason)
        # a bumped generation also makes any callback queued before this point stale
        self._generation += 1

    def _on_timer(self, event: TimerFired) -> None:
        key = (event.timer, event.generation)
        armed = self.timers.get(event.timer)
        if armed is None or armed.generation != event.generation:
            if key in self._fired:
                self._stale("duplicate_delivery", event)
            elif event.generation in self._invalidated:
                self._stale(f"invalidated_by_{self._invalidated[event.generation]}", event)
            else:
                self._stale("generation_mismatch", event)
            return
        if self.now < armed.due:
            self._stale("not_due", event)
            return
        del self.timers[event.timer]
        self._fired[key] = self.now
        if len(self._fired) > 256:
            del self._fired[next(iter(self._fired))]
        self._trace("timer_fired", event.timer, generation=event.generation, timer=event.timer)
        getattr(self, f"_fire_{event.timer}")(armed)

    def _fire_window(self, timer: Timer) -> None:
        self._advance_stage(reason="no_input", generation=timer.generation)

    def _fire_hold(self, timer: Timer) -> None:
        # W6: inactivity handling keeps running during waits: the hold ends in a check-in
        self._end_hold_accounting()
        self._trace("hold_expired", "hold_ms_elapsed", generation=timer.generation)
        self._advance_stage(reason="hold_expired", generation=timer.generation)

    def _fire_playback_estimate(self, timer: Timer) -> None:
        token = self._boundary
        if token is None:
            return
        record = self.prompts[token]
        record.completion_estimated = True
        self._trace(
            "playback_completion_missing",
            "estimate_elapsed",
            token=token,
            generation=timer.generation,
        )
        self._take_boundary(token, origin="estimated")

    def _fire_filler(self, timer: Timer) -> None:
        if self.state is State.TOOL_WAIT and not self._filler_played:
            self._filler_played = True
            self._request_prompt("filler", self.policy.filler, on_complete=None)

    def _fire_recovery(self, timer: Timer) -> None:
        path = self._recovering_path or "input"
        text = None if path == "output" else self.policy.close_failed_input
        self._close("input_path_failed", f"{path}_path_failed", text, cancellable=False)

    def _fire_watchdog(self, timer: Timer) -> None:
        # W2: a closed turn got no response and no wait decision claimed it
        self._trace("watchdog_fired", "missing_response", turn=timer.turn)
        on_complete = "window" if self.pending_episode is not None else None
        self._request_prompt("reprompt", self.policy.reprompt, on_complete=on_complete)
        if on_complete:
            self._set_state(State.PROMPTING, "reprompt_requested")

    def _fire_deadline(self, timer: Timer) -> None:
        self._trace("episode_deadline", "episode_ms_elapsed", generation=timer.generation)
        if self.state is State.CLOSING and self._closing is not None:
            # the final message is already out: the deadline makes it binding, and
            # one close message is enough
            self._closing = Closing("deadline_reached", "episode_deadline", False, self._closing.token)
            self._end_episode("deadline_reached", "episode_deadline")
            return
        text = self.policy.close_pending if self.unresolved_or_running() else None
        self._close(
            "deadline_reached",
            "episode_deadline",
            text or self.policy.close_deadline,
            cancellable=False,
        )

    # -- state and prompts ------------------------------------------------------------

    def _set_state(self, state: State, reason: str) -> None:
        if state is not self.state:
            previous = self.state
            self.state = state
            self._trace("state", reason, previous=previous.value)

    def _request_prompt(
        self,
        kind: str,
        text: str,
        *,
        on_complete: str | None,
        stage: str | None = None,
        routes: tuple[str, ...] = (),
        interruptible: bool = True,
    ) -> int:
        if on_complete is not None and self._boundary is not None:
            self._cancel_prompt(self._boundary, "superseded")
        text = drop_placeholders(text)  # a placeholder nobody filled is never read aloud
        self._token += 1
        token = self._token
        estimate = max(1, len(text.split())) * self.policy.ms_per_word
        ep = self.episode
        self.prompts[token] = PromptRecord(
            token,
            kind,
            stage,
            ep.question if ep else None,
            ep.id if ep else None,
            requested_at=self.now,
            estimate_ms=estimate,
            on_complete=on_complete,
            text=text,
            routes=routes,
            interruptible=interruptible,
        )
        if len(self.prompts) > 512:
            del self.prompts[next(iter(self.prompts))]
        if ep is not None:
            ep.prompt_sequence.append(stage if kind == "reminder" and stage else kind)
        self._emit(
            RequestPrompt(
                token=token,
                kind=kind,
                text=text,
                stage=stage,
                question=ep.question if ep else None,
                interruptible=interruptible,
                routes=routes,
                estimate_ms=estimate,
            )
        )
        self._trace("prompt_requested", kind, token=token, prompt=kind, routes=list(routes))
        # the agent is speaking to the caller: any missing-response alarm is answered
        if kind not in ("filler", "channel_recovery"):
            self._satisfy_watchdog(f"{kind}_requested")
        if on_complete is not None:
            self._boundary = token
            self._arm(
                "playback_estimate",
                (self.now) + estimate + self.policy.completion_grace_ms,
                origin="estimate_from_request",
            )
        return token

    def _cancel_prompt(self, token: int, reason: str) -> None:
        record = self.prompts.get(token)
        if record is None or record.status in FINAL_PROMPT_STATUSES:
            return
        if record.status is PromptStatus.REQUESTED:
            record.status = PromptStatus.CANCELLED_BEFORE_PLAYBACK
        else:
            record.status = PromptStatus.INTERRUPTED
        self._emit(CancelPrompt(token, reason))
        self._trace(f"prompt_{record.status.value}", reason, token=token, prompt=record.kind)
        if self._boundary == token:
            self._boundary = None
            self._disarm("playback_estimate", reason)

    def _take_boundary(self, token: int, origin: str) -> None:
        """The prompt's end (observed or estimated) arms what comes after it (L2, L5)."""
        record = self.prompts[token]
        self._boundary = None
        self._disarm("playback_estimate", f"boundary_{origin}")
        action = record.on_complete
        if action == "window":
            self._arm_window(origin)
        elif action == "hold":
            self._start_hold(origin)
        elif action == "close":
            self._commit_close()

    def _arm_window(self, origin: str, due: float | None = None) -> None:
        ep = self.pending_episode
        if ep is None:
            self._set_state(State.IDLE, "no_pending_question")
            return
        speaking = self._audible_prompt() if due is None else None
        if speaking is not None:
            self._listen_after(speaking, origin)
            return
        stage = self.policy.stages[ep.stage_index]
        self._arm("window", due if due is not None else self.now + stage.wait_ms, origin)
        self._set_state(State.LISTENING, f"window_{origin}")

    def _audible_prompt(self) -> PromptRecord | None:
        """The latest prompt that is playing or queued to play, if any (L2, L5).

        A caller's listening window must not run while the agent talks: a prompt
        whose end is overdue by more than the completion grace no longer counts.
        """
        grace = self.policy.completion_grace_ms
        for record in reversed(self.prompts.values()):
            if record.completion_estimated:
                continue  # its end was already taken from the estimate
            if record.status is PromptStatus.STARTED:
                started = record.started_at if record.started_at is not None else record.requested_at
                if self.now <= started + (record.duration_ms or record.estimate_ms) + grace:
                    return record
            elif record.status is PromptStatus.REQUESTED and record.kind != "close":
                if self.now <= record.requested_at + record.estimate_ms + 2 * grace:
                    return record
        return None

    def _listen_after(self, record: PromptRecord, origin: str) -> None:
        """Arm the window from the observed end of the agent's speech, not now."""
        if self._boundary is not None and self._boundary != record.token:
            self._cancel_prompt(self._boundary, "superseded")
        record.on_complete = "window"
        self._boundary = record.token
        started = record.started_at if record.status is PromptStatus.STARTED else None
        end = (started if started is not None else self.now) + (record.duration_ms or record.estimate_ms)
        self._arm("playback_estimate", end + self.policy.completion_grace_ms, origin="estimate_from_speech")
        self._trace("window_deferred", f"{origin}_while_agent_speaks", token=record.token, prompt=record.kind)
        self._set_state(State.PROMPTING, "agent_speaking")

    def _advance_stage(self, reason: str, generation: int) -> None:
        ep = self.pending_episode
        if ep is None:
            return
        if ep.stage_index + 1 < len(self.policy.stages):
            ep.stage_index += 1
        stage = self.policy.stages[ep.stage_index]
        self._trace("stage_advanced", reason, generation=generation, stage=stage.name)
        # the wording as it may be spoken now: routes composed from those available
        text, routes, left_out = self._compose(stage) if stage.prompt else ("", (), ())
        if left_out or (stage.prompt and len(sentences(text)) < len(sentences(stage.prompt))):
            self._trace("prompt_composed", "routes_unavailable" if left_out else "placeholder_unfilled",
                        stage=stage.name, offered=list(routes), left_out=list(left_out))
        if stage.closes:
            text = self.policy.close_pending if self.unresolved_or_running() else (text or None)
            self._close("closed_incomplete", "ladder_exhausted", text, cancellable=True)
            return
        if not text:
            self._arm_window("quiet_stage")
            return
        self._request_prompt(
            "reminder",
            text,
            on_complete="window",
            stage=stage.name,
            routes=routes,
            interruptible=stage.interruptible,
        )
        self._set_state(State.PROMPTING, "reminder_requested")

    # -- holds ------------------------------------------------------------------------

    def _hold_allowance(self) -> float:
        ep = self.episode
        assert ep is not None
        return min(self.policy.hold_ms, self.policy.hold_budget_ms - ep.hold_used_ms)

    def _start_hold(self, origin: str) -> None:
        ep = self.pending_episode
        if ep is None:
            self._set_state(State.IDLE, "no_pending_question")
            return
        allowance = self._hold_allowance()
        if allowance <= 0:
            # L6: the hold is bounded; past its budget the ordinary ladder resumes
            self._trace("hold_budget_exhausted", "hold_budget_ms_used", used=ep.hold_used_ms)
            self._arm_window("hold_budget_exhausted")
            return
        self._disarm("window", "hold")
        ep.held = True
        ep.hold_started_at = self.now
        ep.hold_until = self.now + allowance
        self._arm("hold", ep.hold_until, origin)
        self._set_state(State.HELD, f"hold_{origin}")

    def _end_hold_accounting(self) -> None:
        ep = self.episode
        if ep is not None and ep.hold_started_at is not None:
            # a late timer wake-up is the runtime's delay, not time the caller held
            end = self.now if ep.hold_until is None else min(self.now, ep.hold_until)
            ep.hold_used_ms += end - ep.hold_started_at
            ep.hold_started_at = ep.hold_until = None

    # -- watchdog (W2) ----------------------------------------------------------------

    def _satisfy_watchdog(self, reason: str) -> None:
        watchdog = self.timers.get("watchdog")
        if watchdog is not None:
            self._disarm("watchdog", reason)
        if self._latest_turn is not None:
            self._responded.add(self._latest_turn)

    # -- the pending question ---------------------------------------------------------

    def _on_ask(self, event: AskQuestion) -> None:
        if self.pending_episode is not None:
            self._end_episode("closed_incomplete", "superseded_by_new_question")
        if self._boundary is not None:
            self._cancel_prompt(self._boundary, "new_question")
        self._invalidate_no_input("new_question")
        self._disarm("deadline", "new_question")
        if self.waits.resume():
            self._trace("pause_ended", "new_question")
        self._episode_seq += 1
        self.episode = Episode(
            id=self._episode_seq,
            question=event.question,
            text=event.text,
            phase=event.phase,
            repeatable=event.repeatable,
            interruptible=event.interruptible,
            started_at=self.now,
        )
        self.episodes.append(self.episode)
        self._trace("episode_started", "question_asked", phase=event.phase)
        self._arm("deadline", self.now + self.policy.episode_ms, "episode_start")
        if self.state is State.RECOVERING:
            # the caller cannot be heard yet: the repair asks it (L9), never silently lost
            self._trace("question_deferred", "recovering", question=event.question)
            return
        if self.state is State.TOOL_WAIT:
            # asked now, listened for once the tool is done (L10)
            self._request_prompt(
                "question", event.text, on_complete=None, stage=self.current_stage, interruptible=event.interruptible
            )
            return
        self._request_prompt(
            "question",
            event.text,
            on_complete="window",
            stage=self.current_stage,
            interruptible=event.interruptible,
        )
        self._set_state(State.ASKING, "question_requested")

    def _end_episode(self, outcome: Outcome, reason: str) -> None:
        ep = self.episode
        if ep is None or ep.outcome is not None:
            return
        self._end_hold_accounting()
        ep.outcome = outcome
        self._disarm("deadline", "episode_ended")
        pending = tuple(sorted(self.unresolved_or_running()))
        self._emit(EpisodeEnded(ep.question, ep.id, outcome, reason, pending))
        self._trace(
            "episode_ended",
            reason,
            outcome=outcome,
            prompt_sequence=list(ep.prompt_sequence),
            pending_tools=list(pending),
            hold_used_ms=ep.hold_used_ms,
        )

    def use_policy(self, policy: LadderPolicy) -> None:
        """Take another policy from the next question on (per-stage ladder overrides).

        Routes switched on or off during the call (SetRouteAvailability) stay so: a new
        question's policy does not bring a switched-off route back.
        """
        for route, available in self._route_switches.items():
            if policy.route(route) is not None:
                policy = policy.with_route_availability(route, available)
        self.policy = policy
        self.waits.max_records = policy.max_wait_records

    def _on_announce(self, event: Announce) -> None:
        listening = self.timers.get("window") is not None and self.pending_episode is not None
        token = self._request_prompt(
            "statement",
            event.text,
            on_complete=None,
            stage=event.label or None,
            interruptible=event.interruptible,
        )
        self._statements[token] = event.interruptible
        if listening:
            # the caller's window does not run while the agent talks: it starts again
            # from the end of this statement (L2, L5)
            self._disarm("window", "agent_speaking")
            self._listen_after(self.prompts[token], "statement")

    def _on_agent_responded(self, event: AgentResponded) -> None:
        self._satisfy_watchdog("agent_responded")

    def _on_end_session(self, event: EndSession) -> None:
        if self.pending_episode is not None:
            self._end_episode("closed_incomplete", "session_ended_by_flow")
        text = event.text or None
        if event.close_as != "completed" and self.unresolved_or_running():
            text = self.policy.close_pending  # L10: an unknown outcome is said to be pending
        outcome = event.close_as if event.close_as in OUTCOMES else "closed_incomplete"
        self._close(outcome, event.reason, text, cancellable=False)  # type: ignore[arg-type]

    # -- caller turns ------------------------------------------------------------------

    def _accept_turn(self, event: TurnStarted | TurnInterpreted) -> TurnRef | None:
        """W1: a turn older than the latest one is stale; otherwise it is the latest."""
        if self._latest_turn is not None and event.seq < self._latest_turn.seq:
            self._stale("superseded_turn", event)
            return None
        self._latest_turn = TurnRef(event.turn, event.seq)
        return self._latest_turn

    def _on_turn_started(self, event: TurnStarted) -> None:
        if self._accept_turn(event) is None:
            return
        self._trace("turn_started", "caller_speech", turn=event.turn, seq=event.seq)
        self._barge_in_statements()
        if self.state is not State.IDLE:
            self._resume_from_speech("caller_resumed")

    def _barge_in_statements(self) -> None:
        """Caller speech cuts interruptible statements; an uninterruptible one holds the floor."""
        for token, interruptible in list(self._statements.items()):
            record = self.prompts.get(token)
            if record is None or record.status in FINAL_PROMPT_STATUSES:
                del self._statements[token]
            elif interruptible:
                self._cancel_prompt(token, "caller_resumed")
                del self._statements[token]
            else:
                self._trace("speech_over_uninterruptible", "floor_held", token=token)

    def _resume_from_speech(self, reason: str) -> None:
        """L7: resumption cancels pending no-input output and invalidates its timers."""
        # remembered so a backchannel can resume the same window instead of resetting it
        self._suspended = self.timers.get("hold") or self.timers.get("window")
        self._cut_by_speech = None
        if self._boundary is not None:
            record = self.prompts[self._boundary]
            if record.noise_proof and reason == "caller_resumed":
                # L8: noise already cut this reminder once; it plays on until the turn
                # is understood as speech addressed to the agent
                self._trace("prompt_kept", "noise_proof_reminder", token=record.token)
                for kind in ("window", "hold"):
                    self._disarm(kind, reason)
                self._set_state(State.HEARING, reason)
                return
            if record.status is PromptStatus.STARTED and not self._interruptible(record):
                self._trace("speech_over_uninterruptible", "floor_held", token=record.token)
            else:
                if record.kind == "reminder" and record.status is PromptStatus.REQUESTED:
                    # cut before a word of it played: noise must not silence it (L8);
                    # one the caller already heard part of is not played again
                    self._cut_by_speech = record
                self._cancel_prompt(self._boundary, reason)
        self._invalidate_no_input(reason)
        self._set_state(State.HEARING, reason)

    def _restore_cut_reminder(self, intent: str) -> bool:
        """L8: noise (or a backchannel) may not silence the ladder.

        A reminder that a turn's start cut is requested again when the turn proves to
        be noise or a backchannel; the new one is noise-proof, so noise arriving every
        few hundred milliseconds cannot cancel every reminder before it plays.
        """
        cut, self._cut_by_speech = self._cut_by_speech, None
        if intent not in ("noise", "backchannel") or cut is None or self.pending_episode is None:
            return False
        if cut.episode != self.episode.id:
            return False
        self._suspended = None
        text, routes = cut.text, cut.routes
        stage = next((s for s in self.policy.stages if s.name == cut.stage and s.prompt), None)
        if stage is not None:  # composed again: a route may have been switched off since
            text, routes, _ = self._compose(stage)
        if not text:
            return False
        token = self._request_prompt(
            "reminder", text, on_complete="window", stage=cut.stage, routes=routes, interruptible=cut.interruptible
        )
        self.prompts[token].noise_proof = True
        self._trace("reminder_restored", f"cut_by_{intent}", token=token, replaces=cut.token)
        self._set_state(State.PROMPTING, f"reminder_restored_after_{intent}")
        return True

    def _interruptible(self, record: PromptRecord) -> bool:
        if record.kind in ("question", "restate") and self.episode is not None:
            return self.episode.interruptible
        if record.kind == "reminder" and record.stage:
            return next(s for s in self.policy.stages if s.name == record.stage).interruptible
        return True

    def _on_turn_started_closing(self, event: TurnStarted) -> None:
        closing = self._closing
        assert closing is not None
        record = self.prompts.get(closing.token) if closing.token is not None else None
        can_cancel = (
            closing.cancellable
            and record is not None
            and record.status is PromptStatus.REQUESTED
        )
        self._latest_turn = TurnRef(event.turn, event.seq)
        if not can_cancel:
            # L11: once the final message plays (or the close is not negotiable),
            # speech is recorded but does not reopen the session
            self._trace("late_speech_during_close", closing.reason, turn=event.turn)
            return
        self._trace("closing_cancelled", "caller_resumed_before_close", turn=event.turn)
        self._closing = None
        self._cancel_prompt(closing.token, "caller_resumed")
        self._suspended = None
        self._set_state(State.HEARING, "caller_resumed")

    def _on_turn_ended(self, event: TurnEnded) -> None:
        ref = TurnRef(event.turn, event.seq)
        claim = self.waits.consume_claim(event.turn, event.seq)
        if claim is not None:
            self._trace(
                "watchdog_skipped",
                "wait_decision_first",
                turn=event.turn,
                seq=event.seq,
                may_acknowledge=claim.should_acknowledge,
            )
            if claim.should_acknowledge and self.state not in (State.CLOSING, State.CLOSED):
                self._acknowledge()
            return
        if ref in self._responded or ref in self._no_response_expected:
            self._trace("turn_ended", "already_answered", turn=event.turn, seq=event.seq)
            return
        if self.state in (State.CLOSING, State.RECOVERING, State.TOOL_WAIT):
            self._trace("turn_ended", f"no_watchdog_in_{self.state.value}", turn=event.turn)
            return
        self._trace("turn_ended", "awaiting_response", turn=event.turn, seq=event.seq)
        self._arm("watchdog", self.now + self.policy.watchdog_ms, "turn_closed", turn=event.turn)

    def _on_turn_while_unavailable(self, event: Event) -> None:
        self._trace(
            "turn_deferred", f"caller_turn_in_{self.state.value}", **_identities(event)
        )

    def _on_interpreted(self, event: TurnInterpreted) -> None:
        ref = self._accept_turn(event)
        if ref is None:
            return
        if self.state not in (State.HEARING, State.IDLE):
            # a decision with no speech-start report (text backend) is still resumption
            self._resume_from_speech("caller_turn")
        intent = event.intent
        if intent not in ("noise", "backchannel") and self._boundary is not None:
            kept = self.prompts[self._boundary]
            if kept.noise_proof and kept.status not in FINAL_PROMPT_STATUSES:
                self._cancel_prompt(kept.token, "caller_turn")  # it was speech after all
        # W7: "ready" is an interpretation that exists only while waiting
        if intent == "ready" and not self.waits.is_waiting and self.state is not State.HELD:
            self._trace("interpretation_inactive", "ready_outside_wait", turn=event.turn)
            intent = "backchannel"  # "ok, ready" with nothing to be ready for: attention
        if intent == "route":
            intent = self._route_intent(event)
            if intent == "unavailable_route":
                self._reply_route_unavailable(event, ref)
                return
        self._trace(
            "turn_interpreted", intent, turn=event.turn, seq=event.seq, intent=intent
        )
        if intent == "wait_request":
            self._on_wait_decision(event, ref)
            return
        if self.waits.resume(event.turn, event.seq):
            self._trace("pause_ended", f"caller_{intent}", turn=event.turn)
        # W4: a later decision for the same open turn replaces its earlier wait decision
        self._no_response_expected.discard(ref)
        if self.pending_episode is None:
            self._trace("turn_without_question", intent, turn=event.turn)
            return
        if self._restore_cut_reminder(intent):
            self._no_response_expected.add(ref)
            self._disarm_watchdog_for(event.turn, f"{intent}_expects_no_response")
            return
        rule = self.policy.reset[intent]
        if rule.window == "end_episode":
            self._answer(event, intent)
            return
        self._apply_resets(rule, intent)
        if rule.window == "reprompt":
            if self.episode.reprompts < self.policy.max_reprompts:
                # no-match is not no-input: the caller spoke and was not understood
                self.episode.reprompts += 1
                self._no_response_expected.add(ref)
                self._disarm_watchdog_for(event.turn, "reprompted")
                self._suspended = None
                self._request_prompt(
                    "reprompt", self.policy.reprompt, on_complete="window", stage=self.current_stage,
                    interruptible=self.episode.interruptible,
                )
                self._set_state(State.PROMPTING, "no_match_reprompt")
                return
            self._trace("reprompt_skipped", "max_reprompts_reached", turn=event.turn)
            rule = rule.model_copy(update={"window": "resume"})
        if rule.window == "restate":
            if self.episode.repeatable:
                self._request_prompt(
                    "restate",
                    self.episode.text,
                    on_complete="window",
                    stage=self.current_stage,
                    interruptible=self.episode.interruptible,
                )
                self._set_state(State.PROMPTING, f"restate_on_{intent}")
                return
            self._trace("restate_forbidden", "question_not_repeatable", turn=event.turn)
            rule = rule.model_copy(update={"window": "rearm"})
        # the agent stays quiet on purpose: no missing-response alarm for this turn
        self._no_response_expected.add(ref)
        self._disarm_watchdog_for(event.turn, f"{intent}_expects_no_response")
        if rule.window == "resume" and self._suspended is not None:
            suspended = self._suspended
            if suspended.kind == "hold":
                self.episode.hold_started_at = self.now
                self.episode.hold_until = max(suspended.due, self.now)
                self._arm("hold", self.episode.hold_until, "resumed")
                self._set_state(State.HELD, f"resume_after_{intent}")
            else:
                self._arm_window("resumed", max(suspended.due, self.now))
        else:
            self._arm_window(f"after_{intent}")
        self._suspended = None

    def _route_intent(self, event: TurnInterpreted) -> str:
        route = self.policy.route(event.route or "")
        if route is None or not route.available:
            self._trace(
                "route_unavailable",
                "route_not_available" if route else "route_unknown",
                turn=event.turn,
                route=event.route,
            )
            return "unavailable_route" if route is not None and self.pending_episode is not None else "unclear"
        return "repeat_request" if route.action == "restate" else "route"

    def _reply_route_unavailable(self, event: TurnInterpreted, ref: TurnRef) -> None:
        """The caller asked for a route that does not exist now: say so, and what does."""
        route = self.policy.route(event.route or "")
        assert route is not None
        stage = self.policy.stages[self.episode.stage_index]
        offered = [r for r in self.policy.routes if r.available and r.id != route.id and (r.id in stage.routes or r.action == "restate")]
        text = self.policy.route_unavailable.format(route=route.label)
        if offered:
            text += " " + self.policy.routes_available.format(routes=_either(r.label for r in offered))
        self._no_response_expected.add(ref)
        self._disarm_watchdog_for(event.turn, "route_unavailable_answered")
        self._suspended = None
        self._request_prompt(
            "route_unavailable", text, on_complete="window", stage=self.current_stage,
            routes=tuple(r.id for r in offered), interruptible=True,
        )
        self._set_state(State.PROMPTING, "route_unavailable_reply")

    def _apply_resets(self, rule, intent: str) -> None:
        ep = self.episode
        assert ep is not None
        wants_restart = rule.stage == "restart" and ep.stage_index > 0
        wants_deadline = rule.deadline == "reset"
        if wants_restart or wants_deadline:
            if ep.restarts >= self.policy.max_restarts:
                self._trace("reset_denied", "max_restarts_reached", intent=intent)
            else:
                ep.restarts += 1
                if wants_restart:
                    ep.stage_index = 0
                    self._trace("stage_restarted", intent)
                if wants_deadline:
                    self._arm("deadline", self.now + self.policy.episode_ms, f"reset_by_{intent}")
        if rule.hold_budget == "reset" and ep.hold_used_ms:
            ep.hold_used_ms = 0.0
            self._trace("hold_budget_reset", intent)

    def _answer(self, event: TurnInterpreted, intent: str) -> None:
        ep = self.episode
        assert ep is not None
        self._suspended = None
        if intent == "route":
            route = self.policy.route(event.route or "")
            assert route is not None
            self._emit(RouteTaken(route.id, ep.question))
            outcome: Outcome = "handed_off" if route.handoff else "route_taken"
            self._end_episode(outcome, f"route_{route.id}")
        else:
            answered = Answered(ep.question, event.turn, event.value, intent)
            self.answers[ep.question] = answered
            self._emit(answered)
            if ep.checked:
                outcome = "resumed_after_check"
            elif ep.held:
                outcome = "explicit_wait"
            else:
                outcome = "answered"
            self._end_episode(outcome, f"caller_{intent}")
        self._set_state(State.IDLE, "episode_ended")

    def _disarm_watchdog_for(self, turn: str, reason: str) -> None:
        watchdog = self.timers.get("watchdog")
        if watchdog is not None and watchdog.turn == turn:
            self._disarm("watchdog", reason)

    # -- waits (W2-W5) ---------------------------------------------------------------

    def _on_wait_decision(self, event: TurnInterpreted, ref: TurnRef) -> None:
        if not self.waits.claim_long_wait(ref):
            self._trace("wait_not_deferred", "missing_turn_identity", turn=event.turn)
            return
        self._no_response_expected.add(ref)
        self._disarm_watchdog_for(event.turn, "wait_decision")
        if self.pending_episode is None:
            claim_now = self.waits.is_closed(event.turn, event.seq)
            if claim_now:
                claim = self.waits.consume_claim(event.turn, event.seq)
                if claim and claim.should_acknowledge:
                    self._acknowledge()
            return
        ep = self.episode
        rule = self.policy.reset["wait_request"]
        if rule.hold_budget == "reset":
            ep.hold_used_ms = 0.0
        self._suspended = None
        self._disarm("window", "wait_request")
        if self.waits.is_closed(event.turn, event.seq):
            # turn closed first: the watchdog was cancelled above; acknowledge now
            claim = self.waits.consume_claim(event.turn, event.seq)
            if claim is not None and claim.should_acknowledge:
                self._acknowledge()
                return
            self._extend_hold("repeated_wait")
            return
        if self.waits.may_acknowledge(event.turn, event.seq):
            # decision first: the acknowledgement waits for the turn to close
            self._end_hold_accounting()
            self._disarm("hold", "wait_request")
            ep.held = True
            self._set_state(State.HELD, "wait_decision_before_turn_end")
            return
        self._extend_hold("repeated_wait")

    def _extend_hold(self, reason: str) -> None:
        self._trace("hold_extended", reason)
        self._end_hold_accounting()
        self._start_hold(reason)

    def _acknowledge(self) -> None:
        if self.pending_episode is None:
            self._request_prompt("acknowledgement", self.policy.acknowledgement, on_complete=None)
            return
        self.episode.held = True
        self._request_prompt("acknowledgement", self.policy.acknowledgement, on_complete="hold")
        self._set_state(State.HELD, "acknowledgement_requested")

    # -- media -------------------------------------------------------------------------

    def _prompt_or_stale(self, event) -> PromptRecord | None:
        record = self.prompts.get(event.token)
        if record is None:
            self._stale("unknown_token", event)
            return None
        if record.status in FINAL_PROMPT_STATUSES:
            self._stale(f"prompt_already_{record.status.value}", event)
            return None
        return record

    def _on_prompt_sent(self, event: PromptSent) -> None:
        record = self._prompt_or_stale(event)
        if record is None:
            return
        record.duration_ms = event.duration_ms
        self._trace("prompt_sent", "duration_known", token=event.token, duration_ms=event.duration_ms)
        if self._boundary == event.token:
            self._arm(
                "playback_estimate",
                self.now + event.duration_ms + self.policy.completion_grace_ms,
                origin="estimate_from_send",
            )

    def _on_playback_started(self, event: PlaybackStarted) -> None:
        record = self._prompt_or_stale(event)
        if record is None:
            return
        if record.status is PromptStatus.STARTED:
            self._stale("duplicate_start", event)
            return
        record.status = PromptStatus.STARTED
        record.started_at = self.now
        self._trace("prompt_started", record.kind, token=event.token, prompt=record.kind)
        ep = self.episode
        if record.kind == "reminder" and ep is not None and record.episode == ep.id:
            ep.checked = True
            ep.ladder_prompts_started += 1
        if record.kind == "close" and ep is not None and record.episode == ep.id:
            ep.ladder_prompts_started += 1
        if self._boundary == event.token:
            duration = record.duration_ms or record.estimate_ms
            self._arm(
                "playback_estimate",
                self.now + duration + self.policy.completion_grace_ms,
                origin="estimate_from_start",
            )

    def _on_playback_completed(self, event: PlaybackCompleted) -> None:
        record = self.prompts.get(event.token)
        if record is not None and record.completion_estimated and record.status not in FINAL_PROMPT_STATUSES:
            # the estimate already armed the next window; record the late truth only
            record.status = PromptStatus.COMPLETED
            self._trace("late_completion", "boundary_already_estimated", token=event.token)
            return
        record = self._prompt_or_stale(event)
        if record is None:
            return
        if record.status is PromptStatus.REQUESTED:
            # a completion without a start still proves the audio reached the endpoint
            self._on_playback_started(PlaybackStarted(event.token))
        record.status = PromptStatus.COMPLETED
        extra = {"transcript": event.transcript} if event.transcript is not None else {}
        self._trace("prompt_completed", record.kind, token=event.token, prompt=record.kind, **extra)
        if record.kind != "filler":
            self._rearm_filler_after(record)
        if self._boundary == event.token:
            self._take_boundary(event.token, origin="observed")

    def _on_playback_interrupted(self, event: PlaybackInterrupted) -> None:
        record = self.prompts.get(event.token)
        if record is not None and record.status is PromptStatus.INTERRUPTED:
            self._trace("prompt_interrupted", "adapter_confirmed", token=event.token)
            return
        record = self._prompt_or_stale(event)
        if record is None:
            return
        record.status = PromptStatus.INTERRUPTED
        self._trace("prompt_interrupted", "adapter_reported", token=event.token)
        if self._boundary == event.token:
            self._take_boundary(event.token, origin="interrupted")

    def _on_prompt_failed(self, event: PromptFailed) -> None:
        record = self._prompt_or_stale(event)
        if record is None:
            return
        record.status = PromptStatus.FAILED
        self._trace("prompt_failed", event.reason, token=event.token, prompt=record.kind)
        if self._boundary != event.token:
            return
        if record.kind == "acknowledgement":
            # W5: a failed acknowledgement must not leave the call with no timer
            self._trace("inactivity_restored", "acknowledgement_failed", token=event.token)
        self._take_boundary(event.token, origin="prompt_failed")

    def _on_transport_failed(self, event: TransportFailed) -> None:
        if self.state is State.RECOVERING:
            self._trace("transport_failed", "already_recovering", path=event.path)
            return
        self._trace("transport_failed", event.reason, path=event.path)
        if self._boundary is not None:
            self._cancel_prompt(self._boundary, "transport_failed")
        self._invalidate_no_input("transport_failed")
        self._disarm("watchdog", "transport_failed")
        self._disarm("filler", "transport_failed")
        self._suspended = None
        if self.episode is not None:
            self.episode.recovered = True
        self._recovering_path = event.path
        self._arm("recovery", self.now + self.policy.recovery_ms, event.path)
        self._set_state(State.RECOVERING, f"{event.path}_failed")
        if event.path != "output":
            # an honest notice, never the question again (L9)
            self._request_prompt("channel_recovery", self.policy.channel_recovery, on_complete=None)

    def _on_transport_failed_closing(self, event: TransportFailed) -> None:
        self._trace("transport_failed", "during_close", path=event.path)
        if event.path == "output" and self._closing is not None:
            self._commit_close()

    def _on_transport_recovered(self, event: TransportRecovered) -> None:
        if self.state is not State.RECOVERING:
            self._stale("not_recovering", event)
            return
        self._disarm("recovery", "channel_repaired")
        self._recovering_path = None
        self._trace("channel_repaired", event.path)
        if self.tools:
            self._begin_tool_wait("tool_running_after_repair")
        elif self.pending_episode is not None:
            self._request_prompt(
                "restate",
                self.episode.text,
                on_complete="window",
                stage=self.current_stage,
                interruptible=self.episode.interruptible,
            )
            self._set_state(State.PROMPTING, "channel_repaired")
        else:
            self._set_state(State.IDLE, "channel_repaired")

    def _on_hangup(self, event: Hangup) -> None:
        self._trace("hangup", event.reason)
        self._close("caller_disconnected", event.reason, None, cancellable=False)

    # -- tools (L10) ----------------------------------------------------------------

    def _on_tool_started(self, event: ToolStarted) -> None:
        self.tools[event.call] = event.name
        self._trace("tool_started", event.name, call=event.call)
        if self.state is State.TOOL_WAIT:
            return
        if self.state is State.RECOVERING:
            # the channel is still being repaired: recovery keeps its timer and its
            # state, so the repair is accepted; the tool wait begins after it (L9, L10)
            self._trace("tool_wait_deferred", "recovering", call=event.call)
            return
        self._begin_tool_wait("tool_started")

    def _begin_tool_wait(self, origin: str) -> None:
        self._resume_after_tool = True
        if self._boundary is not None:
            record = self.prompts[self._boundary]
            if record.kind in ("question", "restate"):
                # the question still plays in full; its window waits for the tool
                self._boundary = None
                record.on_complete = None
                self._disarm("playback_estimate", "tool_running")
            else:
                self._cancel_prompt(self._boundary, "tool_started")
        self._invalidate_no_input("tool_running")
        self._satisfy_watchdog("tool_started")
        self._suspended = None
        self._filler_played = False
        # the filler is for silence: it counts from the end of what the agent is saying
        # ("Let me look that up" already tells the caller to wait), not from the start
        speaking = self._audible_prompt()
        due = self.now + self.policy.filler_after_ms
        if speaking is not None:
            started = speaking.started_at if speaking.status is PromptStatus.STARTED else self.now
            due = max(due, started + (speaking.duration_ms or speaking.estimate_ms) + self.policy.filler_after_ms)
        self._arm("filler", due, origin if speaking is None else "after_agent_speech")
        self._set_state(State.TOOL_WAIT, origin)

    def _rearm_filler_after(self, record: PromptRecord) -> None:
        """A statement ended during a tool wait: the silence, and the filler, count from now."""
        if self.state is State.TOOL_WAIT and not self._filler_played and self.timers.get("filler") is not None:
            self._arm("filler", self.now + self.policy.filler_after_ms, f"after_{record.kind}")

    def _on_tool_finished(self, event: ToolFinished) -> None:
        name = self.tools.pop(event.call, None)
        if name is None:
            self._stale("unknown_tool_call", event)
            return
        self._trace("tool_finished", event.outcome, call=event.call, tool=name)
        if event.outcome == "unknown":
            # L10: an unknown outcome stays unknown; it is never relabelled as failed
            self.unresolved_tools[event.call] = name
        if self.tools or self.state is not State.TOOL_WAIT:
            return
        self._disarm("filler", "tool_finished")
        if self.pending_episode is not None:
            self._arm_window("tool_finished")
        else:
            self._set_state(State.IDLE, "tool_finished")

    def unresolved_or_running(self) -> dict[str, str]:
        return {**self.unresolved_tools, **self.tools}

    # -- routes -----------------------------------------------------------------------

    def _on_route_availability(self, event: SetRouteAvailability) -> None:
        if self.policy.route(event.route) is None:
            self._stale("unknown_route", event)
            return
        self.policy = self.policy.with_route_availability(event.route, event.available)
        self._route_switches[event.route] = event.available
        self._trace("route_availability", "available" if event.available else "unavailable", route=event.route)

    # -- closure (L11, L12) ------------------------------------------------------------

    def _close(self, outcome: Outcome, reason: str, text: str | None, *, cancellable: bool) -> None:
        if self._boundary is not None:
            self._cancel_prompt(self._boundary, "closing")
        self._invalidate_no_input("closing")
        for kind in ("watchdog", "filler", "recovery"):
            self._disarm(kind, "closing")
        self._suspended = None
        if not cancellable:
            self._end_episode(outcome, reason)
        if text is None:
            self._closing = Closing(outcome, reason, cancellable, None)
            self._commit_close()
            return
        token = self._request_prompt("close", text, on_complete="close", stage=self.current_stage)
        self._closing = Closing(outcome, reason, cancellable, token)
        self._set_state(State.CLOSING, reason)

    def _commit_close(self) -> None:
        closing = self._closing
        assert closing is not None
        self._end_episode(closing.outcome, closing.reason)
        for kind in list(self.timers):
            self._disarm(kind, "closed")
        self.waits.clear()  # W6: cleanup drops every pending record
        self.outcome = closing.outcome
        self.close_reason = closing.reason
        pending = tuple(sorted(self.unresolved_or_running()))
        self._emit(SessionClosed(closing.outcome, closing.reason, pending))
        self._set_state(State.CLOSED, closing.reason)
        self._trace("session_closed", closing.reason, outcome=closing.outcome, pending_tools=list(pending))


# TRANSITIONS names each state's handlers; looked up once, not per event
_HANDLERS = {state: {kind: getattr(Controller, name) for kind, name in table.items()} for state, table in TRANSITIONS.items()}


def _either(labels) -> str:
    """"a", "a or b", "a, b or c"."""
    items = list(labels)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


class _RecentSet:
    """A set that forgets its oldest members: turn bookkeeping stays bounded (W6)."""

    def __init__(self, limit: int = 256) -> None:
        self._items: dict = {}
        self._limit = limit

    def add(self, item) -> None:
        self._items[item] = None
        if len(self._items) > self._limit:
            del self._items[next(iter(self._items))]

    def discard(self, item) -> None:
        self._items.pop(item, None)

    def __contains__(self, item) -> bool:
        return item in self._items


def _identities(event: Event) -> dict:
    ids = {}
    for name in ("turn", "token", "generation", "timer", "call", "seq", "route"):
        if hasattr(event, name):
            ids[name] = getattr(event, name)
    return ids


__all__ = ["Controller", "ProtocolError", "State", "PromptStatus", "TRANSITIONS", "Timer"]
