"""Caller turns (L7, L8, W1, W7): speech that starts, ends and is interpreted; resumption
cancels pending no-input output; the reset table applied per intent; answers, route
requests and readiness.

A part of `ladder.controller.Controller` (a mixin: the state it reads and writes is the
controller's, set up in its __init__); pure like the rest of the core."""

from __future__ import annotations

from .effects import Answered, Outcome, RouteTaken
from .events import Event, TurnEnded, TurnInterpreted, TurnStarted, identities
from .policy import either
from .states import FINAL_PROMPT_STATUSES, PromptStatus, State
from .waits import TurnRef, _new_ref


class Turns:
    """Caller turns: resumption, the reset table, answers, routes and readiness."""

    def _accept_turn(self, event: TurnStarted | TurnInterpreted) -> TurnRef | None:
        """W1: a turn older than the latest one is stale; otherwise it is the latest."""
        if self._latest_turn is not None and event.seq < self._latest_turn.seq:
            self._stale("superseded_turn", event)
            return None
        ref = self._latest_turn = _new_ref(TurnRef, (event.turn, event.seq))
        return ref

    def _on_turn_started(self, event: TurnStarted) -> None:
        if self._accept_turn(event) is None:
            return
        self._turn_open = True
        self._note("turn_started", "caller_speech", None, None, {"seq": event.seq}, event.turn)
        self._barge_in_statements()
        if self.state is not State.IDLE:
            self._resume_from_speech("caller_resumed")

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
                for kind in ("window", "hold", "still_waiting"):
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
        stage = next((s for s in self._policy.stages if s.name == cut.stage and s.prompt), None)
        if stage is not None:  # composed again: a route may have been switched off since
            text, routes, _, _ = self._compose(stage)
        if not text:
            return False
        token = self._request_prompt(
            "reminder", text, on_complete="window", stage=cut.stage, routes=routes, interruptible=cut.interruptible
        )
        self.prompts[token].noise_proof = True
        self._trace("reminder_restored", f"cut_by_{intent}", token=token, replaces=cut.token)
        self._set_state(State.PROMPTING, f"reminder_restored_after_{intent}")
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
        ref = _new_ref(TurnRef, (event.turn, event.seq))
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
        self._note("turn_ended", "awaiting_response", None, None, {"seq": event.seq}, event.turn)
        self._arm("watchdog", self.now + self._policy.watchdog_ms, "turn_closed", turn=event.turn)

    def _on_turn_while_unavailable(self, event: Event) -> None:
        self._trace(
            "turn_deferred", f"caller_turn_in_{self.state.value}", **identities(event)
        )

    def _on_interpreted(self, event: TurnInterpreted) -> None:
        ref = self._accept_turn(event)
        if ref is None:
            return
        self._turn_open = False
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
        self._note("turn_interpreted", intent, None, None, {"seq": event.seq, "intent": intent}, event.turn)
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
        if self.episode.unasked and intent not in ("answer", "route", "repeat_request", "partial_answer"):
            # the turn that kept the question from playing did not answer it: ask it now
            self._no_response_expected.add(ref)
            self._disarm_watchdog_for(event.turn, "question_asked")
            self._ask_unasked(f"question_after_{intent}")
            return
        if self._restore_cut_reminder(intent):
            self._no_response_expected.add(ref)
            self._disarm_watchdog_for(event.turn, f"{intent}_expects_no_response")
            return
        rule = self._policy.reset[intent]
        if rule.window == "end_episode":
            self._answer(event, intent)
            return
        if intent == "partial_answer":
            self.episode.partial = event.value or ""  # the next reminder says so
            self.episode.part_heard = True
        self._apply_resets(rule, intent)
        if rule.window == "reprompt":
            if self.episode.reprompts < self._policy.max_reprompts:
                # no-match is not no-input: the caller spoke and was not understood
                self.episode.reprompts += 1
                self._no_response_expected.add(ref)
                self._disarm_watchdog_for(event.turn, "reprompted")
                self._suspended = None
                self._request_prompt(
                    "reprompt", self._policy.reprompt, on_complete="window", stage=self.current_stage,
                    interruptible=self.episode.interruptible,
                )
                self._set_state(State.PROMPTING, "no_match_reprompt")
                return
            self._trace("reprompt_skipped", "max_reprompts_reached", turn=event.turn)
            rule = rule.model_copy(update={"window": "resume"})
        if rule.window == "restate":
            if self.episode.repeatable:
                self._restate_question(f"restate_on_{intent}")
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
                self._arm_still_waiting("resumed")
                self._set_state(State.HELD, f"resume_after_{intent}")
            else:
                self._arm_window("resumed", max(suspended.due, self.now))
        else:
            self._arm_window(f"after_{intent}")
        self._suspended = None

    def _route_intent(self, event: TurnInterpreted) -> str:
        route = self._policy.route(event.route or "")
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
        route = self._policy.route(event.route or "")
        assert route is not None
        stage = self._policy.stages[self.episode.stage_index]
        offered = [r for r in self._policy.routes if r.available and r.id != route.id and (r.id in stage.routes or r.action == "restate")]
        text = self._policy.route_unavailable.format(route=route.label)
        if offered:
            text += " " + self._policy.routes_available.format(routes=either(r.label for r in offered))
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
            if ep.restarts >= self._policy.max_restarts:
                self._trace("reset_denied", "max_restarts_reached", intent=intent)
            else:
                ep.restarts += 1
                if wants_restart:
                    ep.stage_index = 0
                    self._trace("stage_restarted", intent)
                if wants_deadline:
                    self._arm("deadline", self.now + self._policy.episode_ms, f"reset_by_{intent}")
        if rule.hold_budget == "reset" and ep.hold_used_ms:
            ep.hold_used_ms = 0.0
            self._trace("hold_budget_reset", intent)

    def _answer(self, event: TurnInterpreted, intent: str) -> None:
        ep = self.episode
        assert ep is not None
        self._suspended = None
        if intent == "route":
            route = self._policy.route(event.route or "")
            assert route is not None
            self._emit(RouteTaken(route.id, ep.question))
            if self._policy.route_answers_turn:
                self._satisfy_watchdog("route_taken")
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


__all__ = ["Turns"]
