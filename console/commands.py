"""Command palette: every incident, the restart and the help, by name (C2).

The provider asks the app, not `app.screen` (while the palette shows, that is the
palette itself), so its commands are found from every screen.
"""

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


def palette_commands(app) -> list[tuple[str, object, str]]:
    """(title, callback, help) for every Lull command the palette offers."""
    live = "inject into the live call"
    items: list[tuple[str, object, str]] = [
        ("Restart the call (keep applied edits)", app.action_restart_call, "a new call on the flow as edited"),
        ("Help: what the console shows", app.action_help, "generation, origin, estimates, badges"),
        ("Corpus: response times and what the running flow would change", partial(app.switch_mode, "corpus"),
         "histograms per question, coverage, what-if (F11)"),
    ]
    items += [(title, partial(app.inject, command), live) for title, command in COMMANDS]
    session = app.session
    for tool in session.flow.tools:
        items.append((f"Call tool {tool} now (if the active stage allows it)", partial(_call_tool, app, tool), live))
        for mode in ("slow", "fail", "unknown", "ok"):
            items.append((f"Tool {tool}: next calls {mode}", partial(_tool_mode, app, mode), live))
    items.append(("Lose the next playback completion", partial(_lose, app), live))
    items.append(("Delay the next playback completion by 3 s", partial(_delay, app), live))
    for route in session.runtime.ladder.policy.routes:
        items.append((f"Route {route.id}: make available", partial(_route, app, route.id, True), live))
        items.append((f"Route {route.id}: make unavailable", partial(_route, app, route.id, False), live))
    return items


def _call_tool(app, tool: str) -> None:
    from ladder import RequestTool

    app.session.feed(RequestTool(tool))


def _tool_mode(app, mode: str) -> None:
    tool = app.set_tool_mode(mode)
    if tool:
        app.notify(f"next {tool} calls: {mode}")


def _lose(app) -> None:
    app.backend.lose_next_completion = True
    app.notify("the next prompt's playback completion will be lost")


def _delay(app) -> None:
    app.backend.delay_next_completion_ms = 3000
    app.notify("the next prompt's playback completion will arrive 3 s late")


def _route(app, route: str, available: bool) -> None:
    from ladder import SetRouteAvailability

    app.session.feed(SetRouteAvailability(route, available))
    screen = app.rehearse_screen
    if screen is not None:
        screen.show_route(route, available)


class LullCommands(Provider):
    """Lull's own commands: inject incidents, restart the call, open the help."""

    async def discover(self) -> Hits:
        for title, callback, help in palette_commands(self.app):
            yield DiscoveryHit(title, callback, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help in palette_commands(self.app):
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help)


IncidentCommands = LullCommands  # the earlier name
