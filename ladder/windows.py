"""Listening windows and their generations (L2, L3, L4, L12): timers armed with a generation, a
callback checked against it, the window armed from the prompt's observed end, the ladder's
stage advanced when a window expires, the episode deadline.

A part of `ladder.controller.Controller` (a mixin: the state it reads and writes is the
controller's, set up in its __init__); pure like the rest of the core."""

from __future__ import annotations

from .events import TIMER_KINDS, TimerFired
from .policy import SLOT_PLACEHOLDER, digits_heard, drop_placeholders
from .states import FINAL_PROMPT_STATUSES, Closing, PromptRecord, PromptStatus, State, Timer


class Windows:
    """Windows and generations: timers, the ladder's stages, the episode deadline."""

    def _arm(self, kind: str, due: float, origin: str = "", turn: str | None = None) -> Timer:
        if kind in self.timers:
            self._disarm(kind, "rearmed")  # the replaced timer's callback is stale: say so
        self._generation = generation = self._generation + 1
        timer = self.timers[kind] = _new_timer(Timer, (kind, generation, due, self.now, origin, turn))
        self._note(_ARMED[kind], origin or "armed", generation, None, {"timer": kind, "due": due, "origin": origin}, turn)
        return timer

    def _disarm(self, kind: str, reason: str) -> Timer | None:
        timer = self.timers.pop(kind, None)
        if timer is not None:
            invalidated = self._invalidated
            invalidated[timer.generation] = reason
            if len(invalidated) > 256:
                del invalidated[next(iter(invalidated))]
            self._note("timer_invalidated", reason, timer.generation, None, {"timer": kind})
        return timer

    def _invalidate_no_input(self, reason: str) -> None:
        """Resumption, holds, tools, recovery: no queued no-input callback may act."""
        self._end_hold_accounting()
        timers = self.timers
        for kind in _NO_INPUT_TIMERS:
            if kind in timers:
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
        self._note("timer_fired", event.timer, event.generation, None, {"timer": event.timer})
        _FIRE[event.timer](self, armed)

    def _fire_window(self, timer: Timer) -> None:
        self._advance_stage(reason="no_input", generation=timer.generation)

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

    def _fire_deadline(self, timer: Timer) -> None:
        self._trace("episode_deadline", "episode_ms_elapsed", generation=timer.generation)
        if self.state is State.CLOSING and self._closing is not None:
            # the final message is already out: the deadline makes it binding, and
            # one close message is enough
            self._closing = Closing("deadline_reached", "episode_deadline", False, self._closing.token)
            self._end_episode("deadline_reached", "episode_deadline")
            return
        text = self._policy.close_pending if self.unresolved_or_running() else None
        ep = self.pending_episode
        if text is None and ep is not None and ep.part_heard and self._policy.partial_close_deadline:
            text = self._policy.partial_close_deadline  # part of the value came: say so
            self._trace("partial_close", "part_of_the_value_heard", stage=self.current_stage)
        self._close(
            "deadline_reached",
            "episode_deadline",
            text or self._policy.close_deadline,
            cancellable=False,
        )

    def _arm_window(self, origin: str, due: float | None = None) -> None:
        ep = self.pending_episode
        if ep is None:
            self._set_state(State.IDLE, "no_pending_question")
            return
        speaking = self._audible_prompt() if due is None else None
        if speaking is not None:
            self._listen_after(speaking, origin)
            return
        stage = self._policy.stages[ep.stage_index]
        self._arm("window", due if due is not None else self.now + stage.wait_ms, origin)
        self._set_state(State.LISTENING, f"window_{origin}")

    def _audible_prompt(self) -> PromptRecord | None:
        """The latest prompt that is playing or queued to play, if any (L2, L5).

        A caller's listening window must not run while the agent talks: a prompt
        whose end is overdue by more than the completion grace no longer counts.
        """
        grace = self._policy.completion_grace_ms
        open_prompts = self._open_prompts
        done = [t for t, r in open_prompts.items() if r.status in FINAL_PROMPT_STATUSES]
        for token in done:  # a final status is final: such a prompt is never heard again
            del open_prompts[token]
        for record in reversed(open_prompts.values()):
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
        self._arm("playback_estimate", end + self._policy.completion_grace_ms, origin="estimate_from_speech")
        self._trace("window_deferred", f"{origin}_while_agent_speaks", token=record.token, prompt=record.kind)
        self._set_state(State.PROMPTING, "agent_speaking")

    def _stage_wording(self, stage, ep) -> tuple[str, tuple[str, ...], tuple[str, ...], bool]:  # noqa: ANN001
        """A stage's wording as it may be spoken now: routes composed from those available;
        after part of the value came (`ep.part_heard`), `{slot}` asks for the rest of it."""
        if not stage.prompt:
            return "", (), (), False
        if ep is not None and ep.part_heard and self._policy.partial_slot and not stage.closes:
            return self._compose(stage, self._policy.partial_slot.replace("{slot}", self._policy.slot))
        return self._compose(stage)

    def stage_words(self) -> list[str]:
        """What each stage of the ladder would say if the ladder moved to it now, for lack
        of input (the console's ladder panel): as `_advance_stage` words it, after a partial
        answer the rest asked for, the count of what was heard, the partial close; the
        current stage, what it did say. With no question pending, the last question's
        ladder (`shown_policy`) as it was worded, the stages it reached as they were said.
        A read, no change to the call."""
        ep = self.pending_episode
        if ep is None:
            return self._asked_words()
        said = self._said_by_stage(ep)  # the current stage: the reminder it did say
        words = []
        for i, stage in enumerate(self._policy.stages):
            if i == ep.stage_index and stage.name in said:
                words.append(said[stage.name])
                continue
            text = self._stage_wording(stage, ep)[0]
            if stage.closes:
                if ep.part_heard and self._policy.partial_close and not self.unresolved_or_running():
                    text = self._policy.partial_close
                text = self._policy.close_pending if self.unresolved_or_running() else text
            elif ep.partial is not None and i == ep.stage_index + 1:
                heard = digits_heard(ep.partial)
                text = drop_placeholders(self._policy.partial_reminder.replace("{heard}", heard or "{heard}"))
            if "{" in text:
                text = drop_placeholders(text.replace(SLOT_PLACEHOLDER, self._spoken_slot("close" if stage.closes else "reminder")))
            words.append(text)
        return words

    def _said_by_stage(self, ep) -> dict[str, str]:  # noqa: ANN001
        """Stage name -> the reminder episode `ep` said at it (a partial one, a check-in)."""
        return {record.stage: record.text for record in self.prompts.values()
                if record.kind == "reminder" and record.episode == ep.id and record.stage is not None}

    def _asked_words(self) -> list[str]:
        """Each stage of `shown_policy` with no question pending: a stage the last question
        reached, what it said there; any other, its wording with the routes available."""
        policy = self.shown_policy
        said = self._said_by_stage(self.episode) if self.episode is not None else {}
        words = []
        for stage in policy.stages:
            if stage.name in said:
                words.append(said[stage.name])
            elif stage.prompt:
                words.append(policy.compose(stage)[0])
            else:
                words.append("")
        return words

    def _advance_stage(self, reason: str, generation: int) -> None:
        ep = self.pending_episode
        if ep is None:
            return
        if ep.stage_index + 1 < len(self._policy.stages):
            ep.stage_index += 1
        stage = self._policy.stages[ep.stage_index]
        self._note("stage_advanced", reason, generation, None, {})
        text, routes, left_out, short = self._stage_wording(stage, ep)
        if left_out or short:
            self._trace("prompt_composed", "routes_unavailable" if left_out else "placeholder_unfilled",
                        stage=stage.name, offered=list(routes), left_out=list(left_out))
        if stage.closes:
            if ep.part_heard and self._policy.partial_close and not self.unresolved_or_running():
                text = self._policy.partial_close  # part of the value came: say so, not "nothing received"
                self._trace("partial_close", "part_of_the_value_heard", stage=stage.name)
            text = self._policy.close_pending if self.unresolved_or_running() else (text or None)
            self._close("closed_incomplete", "ladder_exhausted", text, cancellable=True)
            return
        if ep.partial is not None and reason == "no_input":
            # the caller gave part of the value and went quiet: say what was heard (in a
            # count, never the digits) and ask for the rest, once; the ladder carries on
            heard = digits_heard(ep.partial)
            text = drop_placeholders(self._policy.partial_reminder.replace("{heard}", heard or "{heard}"))
            self._trace("partial_acknowledged", "partial_then_silence", stage=stage.name, heard=heard)
            ep.partial = None
            routes = ()
        elif reason == "hold_expired" and text and (
            self._policy.still_waiting_ms is not None or ep.hold_used_ms >= self._policy.hold_budget_ms
        ):
            # the hold budget is used (with a cadence a hold runs to its end, whatever a
            # turn in the middle took): no more time to offer, whatever the stage says
            text = self._policy.hold_check_in
            self._trace("hold_check_in", "hold_budget_used", stage=stage.name)
            routes = ()
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


_new_timer = tuple.__new__  # a Timer without its named tuple's Python-level __new__
_NO_INPUT_TIMERS = ("window", "hold", "still_waiting", "playback_estimate")
_ARMED = {kind: f"{kind}_armed" for kind in TIMER_KINDS}
# timer kind -> the controller method its firing runs; filled in by the controller module
# (the methods live in several of its mixins)
_FIRE: dict = {}

__all__ = ["Windows"]
