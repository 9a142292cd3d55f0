"""Command palette: every incident the designer can inject, by name (C2)."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

COMMANDS = [
    ("Fail the input path", "fail input"),
    ("Fail the recognizer", "fail recognizer"),
    ("Fail the output path", "fail output"),
    ("Recover the input path", "recover input"),
    ("Recover the recognizer", "recover recognizer"),
    ("Deliver the last timer again (duplicate)", "dup"),
    ("Hang up (caller disconnects)", "hangup"),
]


class IncidentCommands(Provider):
    """Inject incidents into the live call from the palette."""

    def _commands(self):
        from .screens.rehearse import RehearseScreen

        screen = self.app.screen
        if not isinstance(screen, RehearseScreen):
            return []
        items = [(title, partial(screen.action_inject, command)) for title, command in COMMANDS]
        for tool in self.app.session.flow.tools:
            items.append((f"Call tool {tool} now (if the active stage allows it)", partial(screen.action_call_tool, tool)))
            for mode in ("slow", "fail", "unknown", "ok"):
                items.append((f"Tool {tool}: next calls {mode}", partial(screen.action_tool, mode)))
        items.append(("Lose the next playback completion", screen.action_lose_completion))
        items.append(("Delay the next playback completion by 3 s", screen.action_delay_completion))
        for route in self.app.session.runtime.ladder.policy.routes:
            items.append((f"Route {route.id}: make available", partial(screen.on_routes_panel_toggled_by_name, route.id, True)))
            items.append((f"Route {route.id}: make unavailable", partial(screen.on_routes_panel_toggled_by_name, route.id, False)))
        return items

    async def discover(self) -> Hits:
        for title, callback in self._commands():
            yield DiscoveryHit(title, callback, help="inject into the live call")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help="inject into the live call")
