"""Incidents injected into a live call by name: the console's keys and palette, and
`lull rehearse --headless`'s "/" commands, both go through `LiveIncidents.run`.

  fail input|output|recognizer    recover input|output|recognizer
  hangup                          dup (the last fired timer again: a duplicate callback)
  route ID on|off                 tool NAME ok|fail|unknown|slow [MS]
"""

from __future__ import annotations

from ladder import (
    Hangup,
    SetRouteAvailability,
    TimerFired,
    TransportFailed,
    TransportRecovered,
)

from .live import LiveSession


class LiveIncidents:
    """Turns incident commands into core events (shared by headless and the console)."""

    def __init__(self, session: LiveSession) -> None:
        self.session = session
        self.last_fired: tuple[str, int] | None = None
        session.listeners.append(self._watch)

    def _watch(self, now: float, kind: str, record: dict) -> None:
        if record.get("kind") == "timer_fired" and record.get("effect") == "Trace":
            self.last_fired = (record["timer"], record["generation"])

    def run(self, command: str) -> str | None:
        """Apply one command; returns an error message for a bad one."""
        parts = command.split()
        if not parts:
            return None
        name, args = parts[0], parts[1:]
        feed = self.session.feed
        paths = ("input", "output", "recognizer")
        if name in ("fail", "recover"):
            path = args[0] if args else "input"
            if path not in paths:
                return f"/{name}: expected one of {', '.join(paths)}, got {path!r}"
            feed(TransportFailed(path, "injected") if name == "fail" else TransportRecovered(path))  # type: ignore[arg-type]
        elif name == "hangup":
            feed(Hangup("injected"))
        elif name == "dup":
            if self.last_fired is None:
                return "/dup: no timer has fired yet"
            feed(TimerFired(*self.last_fired))  # type: ignore[arg-type]
        elif name == "route":
            if len(args) != 2 or args[1] not in ("on", "off"):
                return "/route: expected /route ID on|off"
            feed(SetRouteAvailability(args[0], args[1] == "on"))
        elif name == "tool":
            if len(args) < 2 or args[1] not in ("ok", "fail", "unknown", "slow"):
                return "/tool: expected /tool NAME ok|fail|unknown|slow [MS]"
            tool, mode = args[0], args[1]
            spec = self.session.flow.tools.get(tool)
            if spec is None:
                return f"/tool: the flow declares no tool {tool!r}"
            try:
                ms = float(args[2]) if len(args) > 2 else (8000.0 if mode == "slow" else spec.latency_ms)
            except ValueError:
                return f"/tool: {args[2]!r} is not a number of milliseconds"
            outcome = {"fail": "failed", "slow": "ok"}.get(mode, mode)
            self.session.tools.overrides[tool] = (ms, outcome)
        else:
            return f"unknown command /{name}; commands: /sleep /fail /recover /hangup /tool /route /dup /quit"
        return None


__all__ = ["LiveIncidents"]
