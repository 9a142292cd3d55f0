"""The pending question and the call around it (L1, L11, L12, L14): a question starts an
episode with its own limits, an answer or a close ends it; announcements, routes switched
on and off; closing (cancellable) then closed (absorbing).

A part of `ladder.controller.Controller` (a mixin: the state it reads and writes is the
controller's, set up in its __init__); pure like the rest of the core."""

from __future__ import annotations

from .effects import OUTCOMES, EpisodeEnded, Outcome, SessionClosed
from .events import (
    AgentResponded,
    Announce,
    AskQuestion,
    EndSession,
    Hangup,
    SetRouteAvailability,
)
from .policy import LadderPolicy
from .states import Closing, Episode, State


class Episodes:
    """The pending question, the call's routes, closing and closed."""

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
        self._note("episode_started", "question_asked", None, None, {"phase": event.phase})
        self._arm("deadline", self.now + self._policy.episode_ms, "episode_start")
        if self.state is State.RECOVERING:
            # the caller cannot be heard yet: the repair asks it (L9), never silently lost
            self._trace("question_deferred", "recovering", question=event.question)
            return
        if self.state is State.HEARING or self._turn_open:
            # the caller is speaking (they cut the statement before it): the question
            # waits for their turn, never plays over it (L5)
            self.episode.unasked = True
            self._trace("question_deferred", "caller_speaking", question=event.question)
            self._set_state(State.HEARING, "caller_speaking")
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

    def _ask_unasked(self, reason: str) -> bool:
        """The pending question, if the caller's speech kept it from playing; its end
        arms the first window."""
        ep = self.pending_episode
        if ep is None or not ep.unasked:
            return False
        ep.unasked = False
        self._suspended = None
        self._request_prompt(
            "question", ep.text, on_complete="window", stage=self.current_stage, interruptible=ep.interruptible,
        )
        self._set_state(State.ASKING, reason)
        return True

    def _restate_question(self, reason: str) -> None:
        """The pending question again, briefly; its end arms the next window (L7)."""
        self.episode.unasked = False
        self._request_prompt(
            "restate",
            self.episode.text,
            on_complete="window",
            stage=self.current_stage,
            interruptible=self.episode.interruptible,
        )
        self._set_state(State.PROMPTING, reason)

    def _end_episode(self, outcome: Outcome, reason: str) -> None:
        ep = self.episode
        if ep is None or ep.outcome is not None:
            return
        self._end_hold_accounting()
        ep.outcome = outcome
        self._asked_policy = self._policy
        self._disarm("deadline", "episode_ended")
        pending = tuple(sorted(self.unresolved_or_running())) if self.tools or self.unresolved_tools else ()
        self._effects.append(EpisodeEnded(ep.question, ep.id, outcome, reason, pending))
        self._note("episode_ended", reason, None, None, {
            "outcome": outcome, "prompt_sequence": list(ep.prompt_sequence), "pending_tools": list(pending),
            "hold_used_ms": ep.hold_used_ms,
        })

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
            text = self._policy.close_pending  # L10: an unknown outcome is said to be pending
        outcome = event.close_as if event.close_as in OUTCOMES else "closed_incomplete"
        self._close(outcome, event.reason, text, cancellable=False)  # type: ignore[arg-type]

    def _on_hangup(self, event: Hangup) -> None:
        self._trace("hangup", event.reason)
        self._close("caller_disconnected", event.reason, None, cancellable=False)

    def _on_route_availability(self, event: SetRouteAvailability) -> None:
        if self._policy.route(event.route) is None:
            self._stale("unknown_route", event)
            return
        self.policy = self._policy.with_route_availability(event.route, event.available)
        self._route_switches[event.route] = event.available
        self._trace("route_availability", "available" if event.available else "unavailable", route=event.route)

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


__all__ = ["Episodes"]
