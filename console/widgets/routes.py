"""Fallback routes: availability the designer toggles, and which were offered or taken."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Label, Switch

from ladder.policy import Route


class RoutesPanel(Vertical):
    @dataclass
    class Toggled(Message):
        route: str
        available: bool

    def __init__(self, routes: tuple[Route, ...], **kwargs) -> None:
        super().__init__(**kwargs)
        self.routes = routes
        self.offered: set[str] = set()
        self.taken: set[str] = set()

    def compose(self) -> ComposeResult:
        for route in self.routes:
            with Horizontal(classes="route"):
                yield Switch(value=route.available, id=f"route-{route.id}")
                yield Label(self._label(route), id=f"route-label-{route.id}")

    def _label(self, route: Route) -> str:
        marks = []
        if route.id in self.offered:
            marks.append("offered")
        if route.id in self.taken:
            marks.append("TAKEN")
        extra = f"  [{', '.join(marks)}]" if marks else ""
        return f"{route.label}{' (hand-off)' if route.handoff else ''}{extra}"

    def note(self, record: dict) -> None:
        if record.get("effect") == "RequestPrompt":
            self.offered |= set(record.get("routes") or ())
        elif record.get("effect") == "RouteTaken":
            self.taken.add(record["route"])
        else:
            return
        for route in self.routes:
            self.query_one(f"#route-label-{route.id}", Label).update(self._label(route))

    def on_switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        route = (event.switch.id or "").removeprefix("route-")
        self.post_message(self.Toggled(route, event.value))
