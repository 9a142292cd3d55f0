"""Explicit waits (L6, W2-W5): the bounded hold and its budget, one acknowledgement per
pause, the missing-response watchdog a long-wait decision switches off.

A part of `ladder.controller.Controller` (a mixin: the state it reads and writes is the
controller's, set up in its __init__); pure like the rest of the core."""

from __future__ import annotations

from .events import TurnInterpreted
from .states import State, Timer
from .waits import TurnRef


class Holds:
    """Explicit waits: the hold and its budget, the acknowledgement, the watchdog."""

    def _fire_hold(self, timer: Timer) -> None:
        # W6: inactivity handling keeps running during waits: the hold ends in a check-in
        self._end_hold_accounting()
        self._trace("hold_expired", "hold_ms_elapsed", generation=timer.generation)
        if self._ask_unasked("question_after_hold"):
            return  # they asked for time before hearing it: the check-in is the question
        self._advance_stage(reason="hold_expired", generation=timer.generation)

    def _fire_watchdog(self, timer: Timer) -> None:
        # W2: a closed turn got no response and no wait decision claimed it
        self._trace("watchdog_fired", "missing_response", turn=timer.turn)
        self._turn_open = False  # never read: it must not hold back the questions after it
        if self._ask_unasked("question_after_unread_turn"):
            return
        on_complete = "window" if self.pending_episode is not None else None
        self._request_prompt("reprompt", self._policy.reprompt, on_complete=on_complete)
        if on_complete:
            self._set_state(State.PROMPTING, "reprompt_requested")

    def _hold_allowance(self) -> float:
        ep = self.episode
        assert ep is not None
        left = self._policy.hold_budget_ms - ep.hold_used_ms
        # with a still-waiting cadence the hold keeps the caller company to its budget
        return left if self._policy.still_waiting_ms is not None else min(self._policy.hold_ms, left)

    def _arm_still_waiting(self, origin: str) -> None:
        """The next still-waiting line, if it can be said before the hold ends."""
        every, ep = self._policy.still_waiting_ms, self.episode
        if every is None or ep is None or ep.hold_until is None:
            return
        line_ms = max(1, len(self._policy.still_waiting.split())) * self._policy.ms_per_word
        due = self.now + every
        if due + line_ms <= ep.hold_until:
            self._arm("still_waiting", due, origin)

    def _fire_still_waiting(self, timer: Timer) -> None:
        # said while the hold runs on: the hold's own timer still ends it at the budget
        self._trace("still_waiting", "cadence", generation=timer.generation)
        self._request_prompt("still_waiting", self._policy.still_waiting, on_complete="still_waiting")

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
        self._arm_still_waiting(origin)
        self._set_state(State.HELD, f"hold_{origin}")

    def _end_hold_accounting(self) -> None:
        ep = self.episode
        if ep is not None and ep.hold_started_at is not None:
            # a late timer wake-up is the runtime's delay, not time the caller held
            end = self.now if ep.hold_until is None else min(self.now, ep.hold_until)
            ep.hold_used_ms += end - ep.hold_started_at
            ep.hold_started_at = ep.hold_until = None

    def _satisfy_watchdog(self, reason: str) -> None:
        watchdog = self.timers.get("watchdog")
        if watchdog is not None:
            self._disarm("watchdog", reason)
        if self._latest_turn is not None:
            self._responded.add(self._latest_turn)

    def _disarm_watchdog_for(self, turn: str, reason: str) -> None:
        watchdog = self.timers.get("watchdog")
        if watchdog is not None and watchdog.turn == turn:
            self._disarm("watchdog", reason)

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
        rule = self._policy.reset["wait_request"]
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
            self._disarm("still_waiting", "wait_request")
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
            self._request_prompt("acknowledgement", self._policy.acknowledgement, on_complete=None)
            return
        self.episode.held = True
        self._request_prompt("acknowledgement", self._policy.acknowledgement, on_complete="hold")
        self._set_state(State.HELD, "acknowledgement_requested")


__all__ = ["Holds"]
