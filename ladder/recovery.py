"""Channel recovery (L9): a failed input, output or recogniser is not caller silence; the
ladder waits for the path to come back, then repairs or closes with input_path_failed.

A part of `ladder.controller.Controller` (a mixin: the state it reads and writes is the
controller's, set up in its __init__); pure like the rest of the core."""

from __future__ import annotations

from .events import TransportFailed, TransportRecovered
from .states import State, Timer


class Recovery:
    """Channel recovery: a failed media path is not caller silence."""

    def _fire_recovery(self, timer: Timer) -> None:
        path = self._recovering_path or "input"
        text = None if path == "output" else self._policy.close_failed_input
        self._close("input_path_failed", f"{path}_path_failed", text, cancellable=False)

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
        self._arm("recovery", self.now + self._policy.recovery_ms, event.path)
        self._set_state(State.RECOVERING, f"{event.path}_failed")
        if event.path != "output":
            # an honest notice, never the question again (L9)
            self._request_prompt("channel_recovery", self._policy.channel_recovery, on_complete=None)

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
            self._restate_question("channel_repaired")
        else:
            self._set_state(State.IDLE, "channel_repaired")


__all__ = ["Recovery"]
