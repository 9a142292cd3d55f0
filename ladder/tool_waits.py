"""Tool waiting (L10): no-input timers suspended while a tool runs, a filler after
filler_after_ms, an unknown outcome kept unknown.

A part of `ladder.controller.Controller` (a mixin: the state it reads and writes is the
controller's, set up in its __init__); pure like the rest of the core."""

from __future__ import annotations

from .events import ToolFinished, ToolStarted
from .states import PromptRecord, PromptStatus, State, Timer


class ToolWaits:
    """Tool waiting: timers suspended, a filler, an unknown outcome kept unknown."""

    def _fire_filler(self, timer: Timer) -> None:
        if self.state is State.TOOL_WAIT and not self._filler_played:
            self._filler_played = True
            self._request_prompt("filler", self._policy.filler, on_complete=None)

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
        due = self.now + self._policy.filler_after_ms
        if speaking is not None:
            started = speaking.started_at if speaking.status is PromptStatus.STARTED else self.now
            due = max(due, started + (speaking.duration_ms or speaking.estimate_ms) + self._policy.filler_after_ms)
        self._arm("filler", due, origin if speaking is None else "after_agent_speech")
        self._set_state(State.TOOL_WAIT, origin)

    def _rearm_filler_after(self, record: PromptRecord) -> None:
        """A statement ended during a tool wait: the silence, and the filler, count from now."""
        if self.state is State.TOOL_WAIT and not self._filler_played and self.timers.get("filler") is not None:
            self._arm("filler", self.now + self._policy.filler_after_ms, f"after_{record.kind}")

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


__all__ = ["ToolWaits"]
