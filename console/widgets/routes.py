"""Fallback routes: availability the designer toggles, and which were offered or taken."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Label, Switch

from ladder.policy import Route


class RouteSwitch(Switch):
    """Toggled by a click or the command palette, never by typing: the caller's words
    ("4 8 2 1") go to the caller box, and a space never flips a route by accident."""

    can_focus = False


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
                yield RouteSwitch(value=route.available, id=f"route-{route.id}")
                # flow text and the [offered]/[TAKEN] marks are shown as they are, never as markup
                yield Label(self._label(route), id=f"route-label-{route.id}", markup=False)

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

    def set_available(self, route: str, available: bool) -> None:
        """Show a change made elsewhere (the palette) on the switch, without echoing it back."""
        for switch in self.query(RouteSwitch):
            if switch.id == f"route-{route}" and switch.value != available:
                with switch.prevent(Switch.Changed):
                    switch.value = available

    def on_switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        route = (event.switch.id or "").removeprefix("route-")
        self.post_message(self.Toggled(route, event.value))
